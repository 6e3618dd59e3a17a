"""Misbehaves at import: writes a length header, and nothing after it, into every socket it holds, among them its
channel to the grader (red team 10). The grader's next read of that channel finds a message that never ends. Before
the grader read whole messages against the case's time limit, that read waited forever."""

import os
import stat
import struct

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

for _fd in range(3, 256):
    try:
        if stat.S_ISSOCK(os.fstat(_fd).st_mode):
            os.write(_fd, struct.pack("!i", 100 << 20))  # "100 MB follow"
    except OSError:
        pass


@triton.jit
def _row_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    _row_kernel[(x.numel() // n_cols,)](x, weight, y, n_cols, eps, BLOCK_N=triton.next_power_of_2(n_cols))
    return y
