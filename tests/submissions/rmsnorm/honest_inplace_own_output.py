"""Honest, shaped differently: three kernels; the last updates, in place, the output this call allocated
(rstd into a buffer, y = x * rstd, then y *= weight). In-place work on its own output is allowed."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _rstd_kernel(x_ptr, rstd_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps))


@triton.jit
def _normalize_kernel(x_ptr, rstd_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, x * tl.load(rstd_ptr + row), mask=mask)


@triton.jit
def _scale_inplace_kernel(y_ptr, w_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, y * w, mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    y = torch.empty(x.shape, dtype=torch.float32, device=x.device)  # float32 until the last step
    block = 128
    grid = (n_rows, triton.cdiv(n_cols, block))
    _rstd_kernel[(n_rows,)](x, rstd, n_cols, eps, BLOCK_N=block)
    _normalize_kernel[grid](x, rstd, y, n_cols, BLOCK_N=block)
    _scale_inplace_kernel[grid](y, weight, n_cols, BLOCK_N=block)
    return y.to(x.dtype)
