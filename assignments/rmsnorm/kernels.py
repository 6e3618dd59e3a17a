"""Assignment 05, RMSNorm: a fused Triton forward, and (bonus) a Triton backward for dx and dweight.

    y = x / sqrt(mean(x**2, dim=-1) + eps) * weight

The handout is README.md beside this file. Fill in every region marked TODO; keep the signatures,
the launch wrappers and the autograd Function as they are: the grader calls `rmsnorm(x, weight, eps)`.
Grade yourself with `make grade` (or `python -m autograder grade rmsnorm`).
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.validate import check_same, check_tensor

# A row this long or shorter is held in registers whole; longer rows are walked in tiles of this size.
MAX_FUSED_COLS = 16384


# --------------------------------------------------------------------------------------------------
# Forward
# --------------------------------------------------------------------------------------------------


@triton.jit
def _rmsnorm_fwd_kernel(
    x_ptr,  # (M, N) input, rows contiguous
    w_ptr,  # (N,) weight
    y_ptr,  # (M, N) output, same dtype as x
    rstd_ptr,  # (M,) float32: 1 / sqrt(mean(x**2) + eps), written only when STORE_RSTD
    n_rows,
    n_cols,
    stride_x,  # elements between consecutive rows of x
    stride_y,  # elements between consecutive rows of y
    eps,
    BLOCK_M: tl.constexpr,  # rows per program
    BLOCK_N: tl.constexpr,  # columns per tile (a power of two)
    SINGLE_TILE: tl.constexpr,  # BLOCK_N >= n_cols: the whole row fits in one tile
    STORE_RSTD: tl.constexpr,  # save rstd for the backward
):
    """Each program normalises BLOCK_M rows; all arithmetic is float32, rounded once on the store."""
    # TODO(rmsnorm.forward)
    #   One program owns BLOCK_M rows. Accumulate sum(x*x) per row in float32 (masking the columns
    #   past n_cols and the rows past n_rows), turn it into rstd = 1/sqrt(sum/n_cols + eps), then
    #   write y = x * rstd * w in y's dtype. When SINGLE_TILE is false the row is longer than one
    #   tile: walk it twice, once for the sum and once to write y. Save rstd when STORE_RSTD.
    raise NotImplementedError("TODO(rmsnorm.forward): not implemented yet; see README.md")


def _fwd_config(n_rows: int, n_cols: int) -> tuple[int, int, int]:
    """Tile shape and warp count for the forward: (BLOCK_M, BLOCK_N, num_warps).

    Chosen from a sweep on an H200 (scripts/tune_rmsnorm.py): short rows are packed about 2K elements
    to a program, 4K-wide rows two to a program, longer rows one to a program.
    """
    block_n = min(triton.next_power_of_2(n_cols), MAX_FUSED_COLS)
    if block_n < n_cols:
        return 1, block_n, 8  # rows longer than one tile are walked tile by tile
    if block_n <= 1024:
        block_m, num_warps = max(1, min(2048 // block_n, 64)), (2 if block_n <= 512 else 4)
    elif block_n <= 4096:
        block_m, num_warps = 2, (8 if block_n == 2048 else 16)
    else:
        block_m, num_warps = 1, (16 if block_n == 8192 else 8)
    return min(block_m, triton.next_power_of_2(n_rows)), block_n, num_warps


def rmsnorm_forward(
    x: torch.Tensor, weight: torch.Tensor, eps: float, store_rstd: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Launch the forward kernel on x viewed as (M, N). Returns y (shaped like x) and rstd (M,) or None."""
    n_cols = x.shape[-1]
    x2 = x.view(-1, n_cols)  # (M, N)
    n_rows = x2.shape[0]
    y = torch.empty_like(x)
    y2 = y.view(-1, n_cols)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device) if store_rstd else None
    if n_rows == 0:  # pragma: no cover - empty input, no launch
        return y, rstd
    block_m, block_n, num_warps = _fwd_config(n_rows, n_cols)
    grid = (triton.cdiv(n_rows, block_m),)
    _rmsnorm_fwd_kernel[grid](
        x2, weight, y2, rstd if store_rstd else x2,  # any pointer will do when rstd is not stored
        n_rows, n_cols, x2.stride(0), y2.stride(0), eps,
        BLOCK_M=block_m, BLOCK_N=block_n, SINGLE_TILE=block_n >= n_cols, STORE_RSTD=store_rstd,
        num_warps=num_warps,
    )  # fmt: skip
    return y, rstd


# --------------------------------------------------------------------------------------------------
# Backward (bonus)
# --------------------------------------------------------------------------------------------------


@triton.jit
def _rmsnorm_bwd_dx_kernel(
    x_ptr,  # (M, N) input saved by the forward
    w_ptr,  # (N,) weight
    rstd_ptr,  # (M,) float32 rstd saved by the forward
    dy_ptr,  # (M, N) gradient of the output
    dx_ptr,  # (M, N) gradient of the input (written)
    dw_partial_ptr,  # (P, N) float32: row p holds program p's share of dweight (written)
    n_rows,
    n_cols,
    stride_x,
    stride_dy,
    stride_dx,
    BLOCK_N: tl.constexpr,
    SINGLE_TILE: tl.constexpr,
):
    """Program p handles rows p, p + P, p + 2P, ... and sums their dweight terms into partial row p."""
    # TODO(rmsnorm.backward)
    #   With xhat = x * rstd and g = dy * w (all float32):
    #       dx = rstd * (g - xhat * mean(g * xhat))      dweight = sum over rows of dy * xhat
    #   Loop over this program's rows (start at program_id, step num_programs), write dx in dx's
    #   dtype, and accumulate dy * xhat in float32. Store the sum into row program_id of
    #   dw_partial; _rmsnorm_bwd_dw_kernel then adds the P partial rows up.
    raise NotImplementedError("TODO(rmsnorm.backward): not implemented yet; see README.md")


@triton.jit
def _rmsnorm_bwd_dw_kernel(
    dw_partial_ptr,  # (P, N) float32 partial sums
    dw_ptr,  # (N,) gradient of the weight (written, weight's dtype)
    n_partials,
    n_cols,
    BLOCK_P: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Each program sums one BLOCK_N-wide strip of columns over the P partial rows."""
    # TODO(rmsnorm.backward)
    #   Sum the (P, N) partials over P for columns [program_id * BLOCK_N, ... + BLOCK_N), in
    #   float32, walking P in chunks of BLOCK_P rows, and store the result in dw's dtype.
    raise NotImplementedError("TODO(rmsnorm.backward): not implemented yet; see README.md")


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":  # pragma: no cover - GPU only: SM count
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the interpreter runs programs one after another; a few partial rows still test the reduction


def rmsnorm_backward(
    x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor, dy: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Launch the two backward kernels. Returns (dx shaped like x, dweight shaped like weight)."""
    n_cols = x.shape[-1]
    x2 = x.view(-1, n_cols)  # (M, N)
    dy2 = dy.contiguous().view(-1, n_cols)  # (M, N)
    n_rows = x2.shape[0]
    dx = torch.empty_like(x)
    dx2 = dx.view(-1, n_cols)
    dw = torch.empty_like(weight)
    block_n = min(triton.next_power_of_2(n_cols), MAX_FUSED_COLS)
    single_tile = block_n >= n_cols
    # Persistent grid: one or two programs per SM (the better of 1, 2, 4, 8 on an H200), each keeping
    # its dweight partial in registers.
    per_sm = 2 if block_n <= 4096 else 1
    n_programs = max(1, min(n_rows, per_sm * _num_sms(x.device)))
    dw_partial = torch.empty((n_programs, n_cols), dtype=torch.float32, device=x.device)  # (P, N)
    num_warps = 4 if block_n <= 1024 else 16
    _rmsnorm_bwd_dx_kernel[(n_programs,)](
        x2, weight, rstd, dy2, dx2, dw_partial,
        n_rows, n_cols, x2.stride(0), dy2.stride(0), dx2.stride(0),
        BLOCK_N=block_n, SINGLE_TILE=single_tile, num_warps=num_warps,
    )  # fmt: skip
    block_n_dw = min(triton.next_power_of_2(n_cols), 128)
    _rmsnorm_bwd_dw_kernel[(triton.cdiv(n_cols, block_n_dw),)](
        dw_partial, dw, n_programs, n_cols, BLOCK_P=32, BLOCK_N=block_n_dw, num_warps=4,
    )  # fmt: skip
    return dx, dw


# --------------------------------------------------------------------------------------------------
# Autograd and the public API
# --------------------------------------------------------------------------------------------------


class RMSNormFunction(torch.autograd.Function):
    """Forward and backward through the Triton kernels above; only rstd (M floats) is saved besides x."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:  # type: ignore[override]
        needs_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        y, rstd = rmsnorm_forward(x, weight, eps, store_rstd=needs_grad)
        if needs_grad:
            ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:  # type: ignore[override]
        x, weight, rstd = ctx.saved_tensors
        dx, dw = rmsnorm_backward(x, weight, rstd, dy)
        return dx, dw, None


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension: x / sqrt(mean(x**2, -1) + eps) * weight.

    x: (..., N) float32, float16 or bfloat16, contiguous. weight: (N,), same dtype and device as x.
    Returns a new tensor shaped like x, in x's dtype. Differentiable in x and weight.
    """
    check_tensor("rmsnorm", "x", x, min_ndim=1)
    check_tensor("rmsnorm", "weight", weight, ndim=1)
    check_same("rmsnorm", "dtype", x=x, weight=weight)
    check_same("rmsnorm", "device", x=x, weight=weight)
    if weight.shape[0] != x.shape[-1]:
        raise ValueError(
            f"rmsnorm: `weight` must have x.shape[-1] = {x.shape[-1]} elements, got shape {tuple(weight.shape)}."
        )
    if not isinstance(eps, (int, float)) or eps < 0:
        raise ValueError(f"rmsnorm: `eps` must be a non-negative number, got {eps!r}.")
    return RMSNormFunction.apply(x, weight, float(eps))


class RMSNorm(torch.nn.Module):  # pragma: no cover - not graded (test_wrappers)
    """Drop-in RMSNorm layer (as in Llama) backed by the Triton kernels."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm(x, self.weight, self.eps)
