"""Wrong: the RMSNorm weight is never applied, x_norm = x * rstd (rmsnorm_linear)."""

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


@triton.jit
def _rmsnorm_linear_kernel(x_ptr, nw_ptr, w_ptr, y_ptr, n_rows, n_out, n_in, stride_x, stride_w, stride_y, eps,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           DOT_PRECISION: tl.constexpr):
    """The starter's signature (the grader launches it itself with tiles of its own); a GEMV per row of the tile."""
    outs = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    for i in range(BLOCK_M):
        row = tl.program_id(0).to(tl.int64) * BLOCK_M + i
        live = row < n_rows
        ssq = tl.zeros([BLOCK_K], dtype=tl.float32)
        for start in range(0, n_in, BLOCK_K):
            k = start + ks
            x = tl.load(x_ptr + row * stride_x + k, mask=live & (k < n_in), other=0.0).to(tl.float32)
            ssq += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(ssq, axis=0) / n_in + eps)
        acc = tl.zeros([BLOCK_N], dtype=tl.float32)
        for start in range(0, n_in, BLOCK_K):
            k = start + ks
            x = tl.load(x_ptr + row * stride_x + k, mask=live & (k < n_in), other=0.0).to(tl.float32)
            nw = tl.load(nw_ptr + k, mask=k < n_in, other=0.0).to(tl.float32)
            xn = x * rstd  # BUG: norm_weight loaded and left out
            w_mask = (outs[:, None] < n_out) & (k[None, :] < n_in)
            w_tile = w_ptr + outs[:, None].to(tl.int64) * stride_w + k[None, :]
            w = tl.load(w_tile, mask=w_mask, other=0.0).to(tl.float32)
            acc += tl.sum(w * xn[None, :], axis=1)
        tl.store(y_ptr + row * stride_y + outs, acc.to(y_ptr.dtype.element_ty), mask=live & (outs < n_out))


def rmsnorm_linear(x: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    n_rows, n_in = x.shape
    n_out = w.shape[0]
    y = torch.empty((n_rows, n_out), dtype=x.dtype, device=x.device)
    _rmsnorm_linear_kernel[(n_rows, triton.cdiv(n_out, 64))](
        x, norm_weight, w, y, n_rows, n_out, n_in, x.stride(0), w.stride(0), y.stride(0), eps,
        BLOCK_M=1, BLOCK_N=64, BLOCK_K=64, DOT_PRECISION="ieee")
    return y


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:  # the graded forward, minimal
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    _row_kernel[(x.numel() // n_cols,)](x, weight, y, n_cols, eps, BLOCK_N=triton.next_power_of_2(n_cols))
    return y
