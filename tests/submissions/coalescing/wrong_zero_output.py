"""Wrong: writes zeros of the right shape."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=out_ptr.dtype.element_ty), mask=offs < n)


def transpose(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty((x.shape[1], x.shape[0]), dtype=x.dtype, device=x.device)
    _zero_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
    return out
