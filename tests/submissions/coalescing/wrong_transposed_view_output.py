"""Wrong (found by a red team on 2026-12-07): a flat copy kernel, and a transposed view of the copy returned. Its
values read right, and the grader used to make every reply contiguous, doing the transpose itself. An output must be
laid out row-major; every case where the two layouts differ fails with that sentence (1xN and Nx1 are the same
memory either way)."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def transpose(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    buf = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _copy_kernel[(triton.cdiv(m * n, 1024),)](x, buf, m * n, BLOCK=1024)
    return buf.t()  # BUG: a stride swap, not a transpose
