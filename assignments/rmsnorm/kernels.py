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

from course.configs import ConfigTable, SearchSpace, ceil_bucket, grid
from course.device import Device, device_of
from course.ops import OpLibrary
from course.validate import check_same, check_tensor

# --------------------------------------------------------------------------------------------------
# Kernels: the forward, and (bonus) the backward's dx and dweight
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
    #   One program owns BLOCK_M rows: rstd = 1/sqrt(mean(x*x) + eps) per row in float32, y = x * rstd * w
    #   in y's dtype, masks on rows and columns; store rstd when STORE_RSTD.
    #   More, one step at a time: python -m autograder hint rmsnorm.forward
    raise NotImplementedError("TODO(rmsnorm.forward): not implemented yet; see README.md")


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
    #   A persistent grid: this program's rows are program_id, program_id + num_programs, ... Write dx for
    #   each, and this program's share of dweight (a float32 sum over its rows) into row program_id of dw_partial.
    #   More, one step at a time: python -m autograder hint rmsnorm.backward
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
    #   Sum the (P, N) partials over P for columns [program_id * BLOCK_N, ... + BLOCK_N), in float32,
    #   walking P in chunks of BLOCK_P rows, and store the result in dw's dtype.
    raise NotImplementedError("TODO(rmsnorm.backward): not implemented yet; see README.md")


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


def forward_config(device: Device, n_rows: int, n_cols: int) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps) of the forward for an (n_rows, n_cols) input."""
    block_n = triton.next_power_of_2(n_cols)
    s = CONFIGS.pick(device, "forward", ceil_bucket(block_n, FORWARD_BUCKETS, "cols", f"cols>{MAX_FUSED_COLS}"))
    if block_n > MAX_FUSED_COLS:
        return 1, s["tile"], s["num_warps"]  # rows longer than one tile are walked tile by tile
    # Short rows are packed several to a program, so that each program moves enough bytes.
    block_m = max(1, min(s["elements"] // block_n, s["max_rows"]))
    return min(block_m, triton.next_power_of_2(n_rows)), block_n, s["num_warps"]


def backward_config(device: Device, n_rows: int, n_cols: int) -> tuple[int, int, int]:
    """(programs, BLOCK_N, num_warps) of the dx kernel: a persistent grid of a few programs per SM, each
    keeping its share of dweight in registers."""
    block_n = min(triton.next_power_of_2(n_cols), MAX_FUSED_COLS)
    s = CONFIGS.pick(device, "backward", ceil_bucket(block_n, BACKWARD_BUCKETS, "cols", "cols>4096"))
    return max(1, min(n_rows, s["programs_per_sm"] * device.sms)), block_n, s["num_warps"]


def dweight_config(device: Device, n_cols: int) -> tuple[int, int, int]:
    """(BLOCK_P, BLOCK_N, num_warps) of the kernel that sums the partial dweight rows."""
    s = CONFIGS.pick(device, "backward_dw", "all")
    return s["block_p"], min(triton.next_power_of_2(n_cols), s["block_n"]), s["num_warps"]


# What `python -m autograder tune rmsnorm` tries: around the H200's choices, and what a GPU with other
# SM and bandwidth figures may prefer (more rows or warps per program, more programs per SM).
def _rows(*shapes: list[int]) -> list[dict]:
    return [{"shape": s, "dtype": "bfloat16", "eps": 1e-6} for s in shapes]


SEARCH_SPACE = [
    SearchSpace("forward", "rmsnorm.forward", {"cols<=512": _rows([65536, 512]), "cols<=1024": _rows([16384, 1024])},
                grid(elements=[2048, 4096], max_rows=[64], num_warps=[2, 4, 8])),
    SearchSpace("forward", "rmsnorm.forward",
                {"cols<=2048": _rows([16384, 2048]), "cols<=4096": _rows([16384, 4096]),
                 "cols<=8192": _rows([16384, 8192]), "cols<=16384": _rows([8192, 14336])},
                grid(elements=[8192, 16384], max_rows=[64], num_warps=[4, 8, 16])),
    SearchSpace("forward", "rmsnorm.forward", {"cols>16384": _rows([2048, 32768])}, grid(tile=[8192, 16384], num_warps=[8, 16])),
    SearchSpace("backward", "rmsnorm.backward",
                {"cols<=1024": _rows([16384, 1024]), "cols<=4096": _rows([16384, 4096]), "cols>4096": _rows([16384, 8192])},
                grid(programs_per_sm=[1, 2, 4], num_warps=[4, 16])),
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
    grid = (triton.cdiv(n_rows, block_m),)
    _rmsnorm_fwd_kernel[grid](
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
    _rmsnorm_bwd_dx_kernel[(n_programs,)](
        x2, weight, rstd, dy2, dx2, dw_partial,
        n_rows, n_cols, x2.stride(0), dy2.stride(0), dx2.stride(0),
        BLOCK_N=block_n, SINGLE_TILE=block_n >= n_cols, num_warps=num_warps,
    )  # fmt: skip
    block_p, block_n_dw, dw_warps = dweight_config(device, n_cols)
    _rmsnorm_bwd_dw_kernel[(triton.cdiv(n_cols, block_n_dw),)](
        dw_partial, dw, n_programs, n_cols, BLOCK_P=block_p, BLOCK_N=block_n_dw, num_warps=dw_warps,
    )  # fmt: skip
    return dx, dw


# --------------------------------------------------------------------------------------------------
# Autograd Function
# --------------------------------------------------------------------------------------------------


class RMSNormFunction(torch.autograd.Function):
    """Forward and backward through the Triton kernels above; only rstd (M floats) is saved besides x."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:  # type: ignore[override]
        needs_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        y, rstd = rmsnorm_forward_op(x, weight, eps, needs_grad)
        if needs_grad:
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


@OPS.op("rmsnorm_forward", "(Tensor x, Tensor weight, float eps, bool store_rstd) -> (Tensor, Tensor)", _rmsnorm_forward_fake)
def rmsnorm_forward_op(x: torch.Tensor, weight: torch.Tensor, eps: float, store_rstd: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """y and rstd (M,), or an empty rstd when it is not stored (an op returns tensors, never None)."""
    y, rstd = rmsnorm_forward(x, weight, eps, store_rstd)
    return y, rstd if rstd is not None else x.new_empty(0, dtype=torch.float32)


def _rmsnorm_backward_fake(x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(x), torch.empty_like(weight)


@OPS.op("rmsnorm_backward", "(Tensor x, Tensor weight, Tensor rstd, Tensor dy) -> (Tensor, Tensor)", _rmsnorm_backward_fake)
def rmsnorm_backward_op(x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return rmsnorm_backward(x, weight, rstd, dy)


# --------------------------------------------------------------------------------------------------
# Module: the public API and a layer
# --------------------------------------------------------------------------------------------------


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


class RMSNorm(torch.nn.Module):  # pragma: no cover - not graded (tests/test_wrappers.py)
    """Drop-in RMSNorm layer (as in Llama) backed by the Triton kernels."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm(x, self.weight, self.eps)
