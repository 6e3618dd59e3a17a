"""Assignment 05, RMSNorm: a fused Triton forward, and as bonuses a Triton backward for dx and dweight,
and RMSNorm fused into the linear layer that follows it (decode).

    y = x / sqrt(mean(x**2, dim=-1) + eps) * weight
    rmsnorm_linear: y = rmsnorm(x, norm_weight, eps) @ w.T     x (M, K), w (N, K); x_norm never stored

The handout is README.md beside this file. Fill in every region marked TODO; keep the signatures,
the launch wrappers and the autograd Function as they are: the grader calls `rmsnorm(x, weight, eps)`
and `rmsnorm_linear(x, norm_weight, w, eps)`.
Grade yourself with `make grade` (or `python -m autograder grade rmsnorm`).
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.configs import ConfigTable, SearchSpace, ceil_bucket, grid
from course.device import Device, device_of
from course.launch import cdiv, launch, next_power_of_2
from course.ops import OpLibrary, needs_autograd
from course.validate import CheckedOnce, check_same, check_tensor

# --------------------------------------------------------------------------------------------------
# Kernels: the forward, (bonus) the backward's dx and dweight, (bonus) RMSNorm fused into a linear layer
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
    eps = tl.cast(eps, tl.float32)  # Triton's launch passes a float as float32, torch.compile's Inductor as float64
    ### BEGIN SOLUTION rmsnorm.forward
    #> One program owns BLOCK_M rows: rstd = 1/sqrt(mean(x*x) + eps) per row in float32, y = x * rstd * w
    #> in y's dtype, masks on rows and columns; store rstd when STORE_RSTD.
    #> More, one step at a time: python -m autograder hint rmsnorm.forward
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    rows = rows.to(tl.int64)  # row * stride overflows int32 past 2**31 elements
    cols = tl.arange(0, BLOCK_N)
    x_rows = x_ptr + rows[:, None] * stride_x
    y_rows = y_ptr + rows[:, None] * stride_y
    if SINGLE_TILE:
        # The row stays in registers between the reduction and the store: one read of x.
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        y = x * rstd[:, None] * w[None, :]
        tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # Too long for registers: a second pass re-reads x, mostly from L2.
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            mask = row_mask[:, None] & (c[None, :] < n_cols)
            x = tl.load(x_rows + c[None, :], mask=mask, other=0.0).to(tl.float32)
            acc += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=1) / n_cols + eps)
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            mask = row_mask[:, None] & (c[None, :] < n_cols)
            x = tl.load(x_rows + c[None, :], mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + c, mask=c < n_cols, other=0.0).to(tl.float32)
            y = x * rstd[:, None] * w[None, :]
            tl.store(y_rows + c[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    if STORE_RSTD:
        tl.store(rstd_ptr + rows, rstd, mask=row_mask)
    ### END SOLUTION


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
    ### BEGIN SOLUTION rmsnorm.backward
    #> A persistent grid: this program's rows are program_id, program_id + num_programs, ... Write dx for
    #> each, and this program's share of dweight (a float32 sum over its rows) into row program_id of dw_partial.
    #> More, one step at a time: python -m autograder hint rmsnorm.backward
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    dw_row = dw_partial_ptr + pid.to(tl.int64) * n_cols
    if SINGLE_TILE:
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)  # stays in registers across all rows
        for row in range(pid, n_rows, n_programs):
            row64 = tl.cast(row, tl.int64)
            x = tl.load(x_ptr + row64 * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + row64 * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
            rstd = tl.load(rstd_ptr + row)
            xhat = x * rstd
            g = dy * w
            c = tl.sum(g * xhat, axis=0) / n_cols
            dx = (g - xhat * c) * rstd
            tl.store(dx_ptr + row64 * stride_dx + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
            dw_acc += dy * xhat
        tl.store(dw_row + cols, dw_acc, mask=mask)
    else:
        # Long rows: the partial row lives in global memory, private to this program (no atomics).
        for start in range(0, n_cols, BLOCK_N):
            tl.store(dw_row + start + cols, tl.zeros([BLOCK_N], dtype=tl.float32), mask=start + cols < n_cols)
        for row in range(pid, n_rows, n_programs):
            row64 = tl.cast(row, tl.int64)
            rstd = tl.load(rstd_ptr + row)
            acc = tl.zeros([BLOCK_N], dtype=tl.float32)
            for start in range(0, n_cols, BLOCK_N):
                c = start + cols
                mask = c < n_cols
                x = tl.load(x_ptr + row64 * stride_x + c, mask=mask, other=0.0).to(tl.float32)
                dy = tl.load(dy_ptr + row64 * stride_dy + c, mask=mask, other=0.0).to(tl.float32)
                w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
                acc += dy * w * x
            c_row = tl.sum(acc, axis=0) * rstd / n_cols
            for start in range(0, n_cols, BLOCK_N):
                c = start + cols
                mask = c < n_cols
                x = tl.load(x_ptr + row64 * stride_x + c, mask=mask, other=0.0).to(tl.float32)
                dy = tl.load(dy_ptr + row64 * stride_dy + c, mask=mask, other=0.0).to(tl.float32)
                w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
                xhat = x * rstd
                dx = (dy * w - xhat * c_row) * rstd
                tl.store(dx_ptr + row64 * stride_dx + c, dx.to(dx_ptr.dtype.element_ty), mask=mask)
                dw = tl.load(dw_row + c, mask=mask, other=0.0)
                tl.store(dw_row + c, dw + dy * xhat, mask=mask)
    ### END SOLUTION


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
    ### BEGIN SOLUTION rmsnorm.backward
    #> Sum the (P, N) partials over P for columns [program_id * BLOCK_N, ... + BLOCK_N), in float32,
    #> walking P in chunks of BLOCK_P rows, and store the result in dw's dtype.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    acc = tl.zeros([BLOCK_P, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_partials, BLOCK_P):
        p = start + tl.arange(0, BLOCK_P)
        mask = (p[:, None] < n_partials) & col_mask[None, :]
        acc += tl.load(dw_partial_ptr + p[:, None].to(tl.int64) * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(acc, axis=0).to(dw_ptr.dtype.element_ty), mask=col_mask)
    ### END SOLUTION


@triton.jit
def _rmsnorm_linear_kernel(
    x_ptr,  # (M, K) activations, rows contiguous
    nw_ptr,  # (K,) RMSNorm weight
    w_ptr,  # (N, K) linear weight, rows contiguous (y = x_norm @ w.T, as nn.Linear stores it)
    y_ptr,  # (M, N) output, x's dtype
    n_rows,
    n_out,  # N
    n_in,  # K
    stride_x,
    stride_w,
    stride_y,
    eps,
    BLOCK_M: tl.constexpr,  # rows of x per program (16 or more: tl.dot's smallest tile)
    BLOCK_N: tl.constexpr,  # output columns per program
    BLOCK_K: tl.constexpr,  # step along K
    DOT_PRECISION: tl.constexpr,  # "ieee" for float32 inputs: exact float32 products
):
    """Program (i, j) writes y[i*BLOCK_M:(i+1)*BLOCK_M, j*BLOCK_N:(j+1)*BLOCK_N]; x_norm lives only in registers."""
    ### BEGIN SOLUTION rmsnorm.linear
    #> Walk K twice: first sum x*x per row (float32) for rstd; then, tile by tile, normalise x in
    #> registers (x * rstd * norm_weight, rounded to w's dtype as a stored x_norm would be) and accumulate
    #> its product with the (BLOCK_N, BLOCK_K) tile of w into a float32 (BLOCK_M, BLOCK_N) tile.
    #> More, one step at a time: python -m autograder hint rmsnorm.linear
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    outs = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    out_mask = outs < n_out
    ks = tl.arange(0, BLOCK_K)
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_x
    w_rows = w_ptr + outs.to(tl.int64)[:, None] * stride_w  # N * K passes 2**31 at Llama-70B's MLP
    # Pass 1: each row's rstd. x is M * K elements, a few hundred KB: the second read comes from L2.
    ssq = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    for start in range(0, n_in, BLOCK_K):
        k = start + ks
        mask = row_mask[:, None] & (k[None, :] < n_in)
        x = tl.load(x_rows + k[None, :], mask=mask, other=0.0).to(tl.float32)
        ssq += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(ssq, axis=1) / n_in + eps)
    # Pass 2: the normalised tile goes straight into the dot; w is read once, which is the whole cost.
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_in, BLOCK_K):
        k = start + ks
        k_mask = k < n_in
        x = tl.load(x_rows + k[None, :], mask=row_mask[:, None] & k_mask[None, :], other=0.0).to(tl.float32)
        nw = tl.load(nw_ptr + k, mask=k_mask, other=0.0).to(tl.float32)
        xn = (x * rstd[:, None] * nw[None, :]).to(w_ptr.dtype.element_ty)
        w = tl.load(w_rows + k[None, :], mask=out_mask[:, None] & k_mask[None, :], other=0.0)
        acc = tl.dot(xn, tl.trans(w), acc, input_precision=DOT_PRECISION)
    y_tile = y_ptr + rows.to(tl.int64)[:, None] * stride_y + outs[None, :]
    tl.store(y_tile, acc.to(y_ptr.dtype.element_ty), mask=row_mask[:, None] & out_mask[None, :])
    ### END SOLUTION


# --------------------------------------------------------------------------------------------------
# Configuration: launch settings per GPU and shape, from configs.json
# --------------------------------------------------------------------------------------------------


# A row this long or shorter is held in registers whole; longer rows are walked in tiles (the table's "tile").
MAX_FUSED_COLS = 16384

# solutions/rmsnorm/configs.json, per GPU: "forward" by row length (rows up to 512 columns share one
# bucket: they are packed `elements` to a program), "backward" likewise, "backward_dw" for the final sum.
# The H200 entry came from the sweep in results/h200/tune_rmsnorm.txt; `python -m autograder tune rmsnorm`
# measures an entry for the GPU it runs on.
CONFIGS = ConfigTable.beside(__file__, "rmsnorm")
FORWARD_BUCKETS = (512, 1024, 2048, 4096, 8192, MAX_FUSED_COLS)
BACKWARD_BUCKETS = (1024, 4096)


@CONFIGS.cached
def forward_config(device: Device, n_rows: int, n_cols: int) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps) of the forward for an (n_rows, n_cols) input."""
    block_n = next_power_of_2(n_cols)
    s = CONFIGS.pick(device, "forward", ceil_bucket(block_n, FORWARD_BUCKETS, "cols", f"cols>{MAX_FUSED_COLS}"))
    if block_n > MAX_FUSED_COLS:
        return 1, s["tile"], s["num_warps"]  # rows longer than one tile are walked tile by tile
    # Short rows are packed several to a program, so that each program moves enough bytes.
    block_m = max(1, min(s["elements"] // block_n, s["max_rows"]))
    return min(block_m, next_power_of_2(n_rows)), block_n, s["num_warps"]


@CONFIGS.cached
def backward_config(device: Device, n_rows: int, n_cols: int) -> tuple[int, int, int]:
    """(programs, BLOCK_N, num_warps) of the dx kernel: a persistent grid of a few programs per SM, each
    keeping its share of dweight in registers."""
    block_n = min(next_power_of_2(n_cols), MAX_FUSED_COLS)
    s = CONFIGS.pick(device, "backward", ceil_bucket(block_n, BACKWARD_BUCKETS, "cols", "cols>4096"))
    return max(1, min(n_rows, s["programs_per_sm"] * device.sms)), block_n, s["num_warps"]


@CONFIGS.cached
def dweight_config(device: Device, n_cols: int) -> tuple[int, int, int]:
    """(BLOCK_P, BLOCK_N, num_warps) of the kernel that sums the partial dweight rows."""
    s = CONFIGS.pick(device, "backward_dw", "all")
    return s["block_p"], min(next_power_of_2(n_cols), s["block_n"]), s["num_warps"]


# rmsnorm_linear by the number of rows M: decode (M up to 16) and small batches. Each program's tiles of x
# and w, num_stages deep, must fit the GPU's shared memory; a GPU with less than the reference's gets fewer
# stages, then shorter K steps. Programs: cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N); BLOCK_N halves (down to 16)
# until they cover every SM, so that N = 4096 at M = 1 does not leave half of an H100 idle.
LINEAR_BUCKETS = (16, 64)


def _linear_smem(block_m: int, block_n: int, block_k: int, stages: int, size: int) -> int:
    return stages * (block_m + block_n) * block_k * size


@CONFIGS.cached
def linear_config(device: Device, n_rows: int, n_out: int, element_size: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) of rmsnorm_linear for an (M, K) x and an (N, K) w."""
    s = CONFIGS.pick(device, "linear", ceil_bucket(n_rows, LINEAR_BUCKETS, "M", "M>64"))
    block_m = max(16, min(next_power_of_2(n_rows), s["max_block_m"]))
    block_n, block_k, stages = s["block_n"], s["block_k"], s["num_stages"]
    while block_n > 16 and cdiv(n_rows, block_m) * cdiv(n_out, block_n) < device.sms:
        block_n //= 2
    while _linear_smem(block_m, block_n, block_k, stages, element_size) > device.smem_per_block:  # pragma: no cover - GPU only: a GPU with less shared memory than the table's
        if stages > 2:
            stages -= 1
        elif block_k > 32:
            block_k //= 2
        else:
            break
    return block_m, block_n, block_k, s["num_warps"], stages


# What `python -m autograder tune rmsnorm` tries: around the H200's choices, and what a GPU with other
# SM and bandwidth figures may prefer (more rows or warps per program, more programs per SM).
def _rows(*shapes: list[int]) -> list[dict]:
    return [{"shape": s, "dtype": "bfloat16", "eps": 1e-6} for s in shapes]


def _linear(rows: list[int]) -> list[dict]:
    return [{"M": m, "K": 4096, "N": 14336, "dtype": "bfloat16", "eps": 1e-6} for m in rows]


SEARCH_SPACE = [
    SearchSpace("forward", "rmsnorm.forward", {"cols<=512": _rows([65536, 512]), "cols<=1024": _rows([16384, 1024])},
                grid(elements=[2048, 4096], max_rows=[64], num_warps=[2, 4, 8])),
    SearchSpace("forward", "rmsnorm.forward",
                {"cols<=2048": _rows([16384, 2048]), "cols<=4096": _rows([16384, 4096], [4096, 4096]),
                 "cols<=8192": _rows([16384, 8192]), "cols<=16384": _rows([8192, 14336])},
                grid(elements=[8192, 16384], max_rows=[64], num_warps=[4, 8, 16])),
    SearchSpace("forward", "rmsnorm.forward", {"cols>16384": _rows([2048, 32768])}, grid(tile=[8192, 16384], num_warps=[8, 16])),
    SearchSpace("backward", "rmsnorm.backward",
                {"cols<=1024": _rows([16384, 1024]), "cols<=4096": _rows([16384, 4096]), "cols>4096": _rows([16384, 8192])},
                grid(programs_per_sm=[1, 2, 4], num_warps=[4, 16])),
    SearchSpace("linear", "rmsnorm.linear", {"M<=16": _linear([1, 4, 16])},
                grid(max_block_m=[16], block_n=[32, 64, 128], block_k=[128, 256], num_warps=[4, 8], num_stages=[3, 4])),
    SearchSpace("linear", "rmsnorm.linear", {"M<=64": _linear([64]), "M>64": _linear([256])},
                grid(max_block_m=[32, 64], block_n=[64, 128], block_k=[64, 128], num_warps=[4, 8], num_stages=[3, 4])),
]  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Launchers: inputs already checked, settings from the configuration
# --------------------------------------------------------------------------------------------------


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
    block_m, block_n, num_warps = forward_config(device_of(x), n_rows, n_cols)
    grid = (cdiv(n_rows, block_m),)
    launch(_rmsnorm_fwd_kernel, grid,
        x2, weight, y2, rstd if store_rstd else x2,  # any pointer will do when rstd is not stored
        n_rows, n_cols, x2.stride(0), y2.stride(0), eps,
        BLOCK_M=block_m, BLOCK_N=block_n, SINGLE_TILE=block_n >= n_cols, STORE_RSTD=store_rstd,
        num_warps=num_warps,
    )  # fmt: skip
    return y, rstd


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
    device = device_of(x)
    n_programs, block_n, num_warps = backward_config(device, n_rows, n_cols)
    dw_partial = torch.empty((n_programs, n_cols), dtype=torch.float32, device=x.device)  # (P, N)
    launch(_rmsnorm_bwd_dx_kernel, (n_programs,),
        x2, weight, rstd, dy2, dx2, dw_partial,
        n_rows, n_cols, x2.stride(0), dy2.stride(0), dx2.stride(0),
        BLOCK_N=block_n, SINGLE_TILE=block_n >= n_cols, num_warps=num_warps,
    )  # fmt: skip
    block_p, block_n_dw, dw_warps = dweight_config(device, n_cols)
    launch(_rmsnorm_bwd_dw_kernel, (cdiv(n_cols, block_n_dw),),
        dw_partial, dw, n_programs, n_cols, BLOCK_P=block_p, BLOCK_N=block_n_dw, num_warps=dw_warps,
    )  # fmt: skip
    return dx, dw


def rmsnorm_linear_forward(x: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """Launch the fused kernel: y (M, N) = rmsnorm(x) @ w.T, in x's dtype."""
    n_rows, n_in = x.shape
    n_out = w.shape[0]
    y = torch.empty((n_rows, n_out), dtype=x.dtype, device=x.device)
    if n_rows == 0 or n_out == 0:  # pragma: no cover - empty input, no launch
        return y
    block_m, block_n, block_k, num_warps, stages = linear_config(device_of(x), n_rows, n_out, x.element_size())
    grid = (cdiv(n_rows, block_m), cdiv(n_out, block_n))
    launch(_rmsnorm_linear_kernel, grid,
        x, norm_weight, w, y, n_rows, n_out, n_in, x.stride(0), w.stride(0), y.stride(0), eps,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
        DOT_PRECISION="ieee" if x.dtype == torch.float32 else "tf32", num_warps=num_warps, num_stages=stages,
    )  # fmt: skip
    return y


# --------------------------------------------------------------------------------------------------
# Autograd Function
# --------------------------------------------------------------------------------------------------


class RMSNormFunction(torch.autograd.Function):
    """Forward and backward through the Triton kernels above; only rstd (M floats) is saved besides x."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:  # type: ignore[override]
        y, rstd = rmsnorm_forward_op(x, weight, eps, True)  # only called when a gradient is needed (see rmsnorm)
        ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:  # type: ignore[override]
        x, weight, rstd = ctx.saved_tensors
        dx, dw = rmsnorm_backward_op(x, weight, rstd, dy)
        return dx, dw, None


# --------------------------------------------------------------------------------------------------
# Custom ops: the launchers as PyTorch operators (course/ops.py), so torch.compile and CUDA graphs take them whole
# --------------------------------------------------------------------------------------------------


OPS = OpLibrary(__file__)


def _rmsnorm_forward_fake(x: torch.Tensor, weight: torch.Tensor, eps: float, store_rstd: bool) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    rows = x.numel() // x.shape[-1] if store_rstd else 0
    return torch.empty_like(x), x.new_empty(rows, dtype=torch.float32)


@OPS.op("rmsnorm_forward", "(Tensor x, Tensor weight, float eps, bool store_rstd) -> (Tensor, Tensor)", _rmsnorm_forward_fake,
        float32_floats=True)  # the kernel casts eps to float32 first
def rmsnorm_forward_op(x: torch.Tensor, weight: torch.Tensor, eps: float, store_rstd: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """y and rstd (M,), or an empty rstd when it is not stored (an op returns tensors, never None)."""
    y, rstd = rmsnorm_forward(x, weight, eps, store_rstd)
    return y, rstd if rstd is not None else x.new_empty(0, dtype=torch.float32)


def _rmsnorm_backward_fake(x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(x), torch.empty_like(weight)


@OPS.op("rmsnorm_backward", "(Tensor x, Tensor weight, Tensor rstd, Tensor dy) -> (Tensor, Tensor)", _rmsnorm_backward_fake)
def rmsnorm_backward_op(x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return rmsnorm_backward(x, weight, rstd, dy)


def _rmsnorm_linear_fake(x: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return x.new_empty((x.shape[0], w.shape[0]))


@OPS.op("rmsnorm_linear", "(Tensor x, Tensor norm_weight, Tensor w, float eps) -> Tensor", _rmsnorm_linear_fake)
def rmsnorm_linear_op(x: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return rmsnorm_linear_forward(x, norm_weight, w, eps)


# --------------------------------------------------------------------------------------------------
# Module: the public API and a layer
# --------------------------------------------------------------------------------------------------


def _check_rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    """The checks of `rmsnorm`: a TypeError or ValueError that says what to pass instead."""
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


_CHECKED_RMSNORM = CheckedOnce(_check_rmsnorm)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension: x / sqrt(mean(x**2, -1) + eps) * weight.

    x: (..., N) float32, float16 or bfloat16, contiguous. weight: (N,), same dtype and device as x.
    Returns a new tensor shaped like x, in x's dtype. Differentiable in x and weight.
    """
    _CHECKED_RMSNORM(x, weight, eps)  # the checks, once per signature (CheckedOnce)
    if not needs_autograd(x, weight):  # inference: no graph to record, so no autograd Function to pay for
        return rmsnorm_forward_op(x, weight, float(eps), False)[0]
    return RMSNormFunction.apply(x, weight, float(eps))


def _check_rmsnorm_linear(x: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, eps: float) -> None:
    """The checks of `rmsnorm_linear`: a TypeError or ValueError that says what to pass instead."""
    fn = "rmsnorm_linear"
    check_tensor(fn, "x", x, ndim=2)
    check_tensor(fn, "norm_weight", norm_weight, ndim=1)
    check_tensor(fn, "w", w, ndim=2)
    check_same(fn, "dtype", x=x, norm_weight=norm_weight, w=w)
    check_same(fn, "device", x=x, norm_weight=norm_weight, w=w)
    if norm_weight.shape[0] != x.shape[1] or w.shape[1] != x.shape[1]:
        raise ValueError(
            f"{fn}: x is (M, K) = {tuple(x.shape)}, so `norm_weight` must be ({x.shape[1]},) and `w` (N, {x.shape[1]}); "
            f"got {tuple(norm_weight.shape)} and {tuple(w.shape)}."
        )
    if not isinstance(eps, (int, float)) or eps < 0:
        raise ValueError(f"{fn}: `eps` must be a non-negative number, got {eps!r}.")


_CHECKED_RMSNORM_LINEAR = CheckedOnce(_check_rmsnorm_linear)


def rmsnorm_linear(x: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """rmsnorm(x, norm_weight, eps) @ w.T in one kernel, the normalised x never written to memory.

    x: (M, K); norm_weight: (K,); w: (N, K), as nn.Linear(K, N).weight; one float dtype and device, contiguous.
    Returns y (M, N) in x's dtype. Forward only: the decode step of inference.
    """
    _CHECKED_RMSNORM_LINEAR(x, norm_weight, w, eps)  # the checks, once per signature (CheckedOnce)
    return rmsnorm_linear_op(x, norm_weight, w, float(eps))


class RMSNorm(torch.nn.Module):  # pragma: no cover - not graded (tests/test_wrappers.py)
    """Drop-in RMSNorm layer (as in Llama) backed by the Triton kernels."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm(x, self.weight, self.eps)
