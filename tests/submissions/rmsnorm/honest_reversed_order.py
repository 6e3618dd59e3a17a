"""Honest, shaped differently: narrow tiles (32 columns, one warp), the sum of squares accumulated from
the last tile to the first, a different rounding order from the reference (forward only)."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _reversed_kernel(x_ptr, w_ptr, y_ptr, n_cols, n_tiles, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    total = 0.0
    for i in range(0, n_tiles):
        start = (n_tiles - 1 - i) * BLOCK_N
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0).to(tl.float32)
        total += tl.sum(x * x, axis=0)
    rstd = 1.0 / tl.sqrt(total / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + start + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    block = 32
    _reversed_kernel[(x.numel() // n_cols,)](x, weight, y, n_cols, triton.cdiv(n_cols, block), eps, BLOCK_N=block,
                                             num_warps=1)  # fmt: skip
    return y
