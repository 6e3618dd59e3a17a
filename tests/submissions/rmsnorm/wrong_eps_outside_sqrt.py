"""Wrong: eps is added outside the square root, 1 / (sqrt(mean(x**2)) + eps)."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _row_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / (tl.sqrt(tl.sum(x * x, axis=0) / n_cols) + eps)  # BUG
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    _row_kernel[(x.numel() // n_cols,)](x, weight, y, n_cols, eps, BLOCK_N=triton.next_power_of_2(n_cols))
    return y
