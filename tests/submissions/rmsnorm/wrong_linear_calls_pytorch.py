"""Wrong: the norm in a Triton kernel, then the product with w through PyTorch's matmul (rmsnorm_linear)."""

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
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm_linear(x: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x_norm = torch.empty_like(x)
    n_cols = x.shape[-1]
    _row_kernel[(x.shape[0],)](x, norm_weight, x_norm, n_cols, eps, BLOCK_N=triton.next_power_of_2(n_cols))
    return x_norm @ w.T  # BUG: the projection is the op this part replaces; it must be a Triton kernel too


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:  # the graded forward, minimal
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    _row_kernel[(x.numel() // n_cols,)](x, weight, y, n_cols, eps, BLOCK_N=triton.next_power_of_2(n_cols))
    return y
