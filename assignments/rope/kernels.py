"""Assignment 06, RoPE: rotary position embeddings as one fused Triton kernel, and (bonus) its backward.

With D = x.shape[-1], the rotate-half pairing (Llama, GPT-NeoX) pairs element i with element i + D/2:

    x1 = x[..., :D/2]    x2 = x[..., D/2:]    cos, sin: (S, D/2) float32, row s for position s
    out[..., :D/2] = x1 * cos - x2 * sin
    out[..., D/2:] = x2 * cos + x1 * sin

The handout is README.md beside this file. Fill in every region marked TODO; keep the signatures, the
launch wrappers and the autograd Function as they are: the grader calls `rope(x, cos, sin)`.
Grade yourself with `make grade` (or `python -m autograder grade rope`).
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.configs import ConfigTable, SearchSpace, grid
from course.device import Device, device_of
from course.launch import cdiv, launch, next_power_of_2
from course.ops import OpLibrary, needs_autograd
from course.validate import CheckedOnce, check_same, check_tensor

# --------------------------------------------------------------------------------------------------
# Kernels: the forward, and (bonus) the backward
# --------------------------------------------------------------------------------------------------


@triton.jit
def _rope_fwd_kernel(
    x_ptr,  # (B*H*S, D) input: x (B, H, S, D) contiguous, one row per (batch, head, position)
    cos_ptr,  # (S, D/2) float32
    sin_ptr,  # (S, D/2) float32
    y_ptr,  # (B*H*S, D) output, x's dtype
    n_rows,  # B*H*S
    seq_len,  # S: row r holds position r % S
    half,  # D/2
    BLOCK_R: tl.constexpr,  # rows per program
    BLOCK_D: tl.constexpr,  # a power of two >= D/2: one half-row per tile row
):
    """Program p rotates rows [p*BLOCK_R, (p+1)*BLOCK_R): it loads each row's halves and its table row at once."""
    # TODO(rope.forward)
    #   BLOCK_R rows of the flattened (B*H*S, D) x per program; pair i of a row is (x[i], x[i + half]),
    #   rotated by the angle of the row's position. Masks on rows and on i < half; float32 inside.
    #   More, one step at a time: python -m autograder hint rope.forward
    raise NotImplementedError("TODO(rope.forward): not implemented yet; see README.md")


@triton.jit
def _rope_bwd_kernel(
    dy_ptr,  # (B*H*S, D) gradient of the output, contiguous
    cos_ptr,  # (S, D/2) float32
    sin_ptr,  # (S, D/2) float32
    dx_ptr,  # (B*H*S, D) gradient of the input (written), dy's dtype
    n_rows,
    seq_len,
    half,
    BLOCK_R: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """The forward's tiles; each pair is rotated by -theta instead of +theta."""
    # TODO(rope.backward)
    #   The gradient of a rotation is the rotation by minus the angle. Same rows, masks and offsets as
    #   _rope_fwd_kernel, with dy in place of x and dx in place of y.
    #   More: python -m autograder hint rope.backward
    raise NotImplementedError("TODO(rope.backward): not implemented yet; see README.md")


# --------------------------------------------------------------------------------------------------
# Configuration: launch settings per GPU and shape, from configs.json
# --------------------------------------------------------------------------------------------------


# solutions/rope/configs.json, per GPU: one bucket for the forward and the backward alike. The H200 entry
# came from the sweeps in results/h200/tune_rope_swiglu_*.json: about 1K elements per half-tile (16 rows of
# D = 128) with 4 warps at LLM sizes; keeping the table in registers across heads bought nothing there,
# the L2 serves it. Few rows (decode) get small tiles, so that the grid still has `min_programs` programs.
CONFIGS = ConfigTable.beside(__file__, "rope")


@CONFIGS.cached
def rope_config(device: Device, n_rows: int, half: int) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_D, num_warps), forward and backward alike, for n_rows rows of 2 * half elements."""
    s = CONFIGS.pick(device, "rope", "all")
    block_d = next_power_of_2(half)
    block_r = max(1, s["elements"] // block_d)
    block_r = max(1, min(block_r, next_power_of_2(n_rows) // s["min_programs"]))  # decode: spread the rows
    num_warps = max(1, min(s["max_warps"], block_r * block_d // s["warp_elements"]))
    return block_r, block_d, num_warps


# What `python -m autograder tune rope` tries, at a prefill and a decode size.
SEARCH_SPACE = [
    SearchSpace("rope", "rope.forward",
                {"all": [{"shape": [1, 32, 8192, 128], "dtype": "bfloat16"}, {"shape": [8, 32, 1, 128], "dtype": "bfloat16"}]},
                grid(elements=[512, 1024, 2048], min_programs=[128], max_warps=[2, 4, 8], warp_elements=[128])),
]  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Launchers: inputs already checked, settings from the configuration
# --------------------------------------------------------------------------------------------------


def rope_forward(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Launch the forward kernel on x viewed as (B*H*S, D). Returns a new tensor shaped like x."""
    seq_len, head_dim = x.shape[2], x.shape[3]
    y = torch.empty_like(x)
    n_rows, half = x.numel() // head_dim if head_dim else 0, head_dim // 2
    if n_rows == 0:  # pragma: no cover - empty input, no launch
        return y
    block_r, block_d, num_warps = rope_config(device_of(x), n_rows, half)
    launch(_rope_fwd_kernel, (cdiv(n_rows, block_r),),
        x, cos, sin, y, n_rows, seq_len, half, BLOCK_R=block_r, BLOCK_D=block_d, num_warps=num_warps
    )
    return y


def rope_backward(dy: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Launch the backward kernel. Returns dx, shaped like dy."""
    dy = dy.contiguous()  # autograd may hand over a strided gradient
    seq_len, head_dim = dy.shape[2], dy.shape[3]
    dx = torch.empty_like(dy)
    n_rows, half = dy.numel() // head_dim if head_dim else 0, head_dim // 2
    if n_rows == 0:  # pragma: no cover - empty input, no launch
        return dx
    block_r, block_d, num_warps = rope_config(device_of(dy), n_rows, half)
    launch(_rope_bwd_kernel, (cdiv(n_rows, block_r),),
        dy, cos, sin, dx, n_rows, seq_len, half, BLOCK_R=block_r, BLOCK_D=block_d, num_warps=num_warps
    )
    return dx


# --------------------------------------------------------------------------------------------------
# Autograd Function
# --------------------------------------------------------------------------------------------------


class RoPEFunction(torch.autograd.Function):
    """Forward and backward through the Triton kernels; only the tables are saved, never x."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            raise ValueError(
                "rope: gradients with respect to `cos` and `sin` are not computed (they are fixed tables): "
                "pass cos.detach() and sin.detach()."
            )
        ctx.save_for_backward(cos, sin)
        return rope_forward_op(x, cos, sin)

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, None, None]:  # type: ignore[override]
        cos, sin = ctx.saved_tensors
        return rope_backward_op(dy, cos, sin), None, None


# --------------------------------------------------------------------------------------------------
# Custom ops: the launchers as PyTorch operators (course/ops.py), so torch.compile and CUDA graphs take them whole
# --------------------------------------------------------------------------------------------------


OPS = OpLibrary(__file__)

def _rope_fake(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(x)


@OPS.op("rope_forward", "(Tensor x, Tensor cos, Tensor sin) -> Tensor", _rope_fake)
def rope_forward_op(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return rope_forward(x, cos, sin)


def _rope_backward_fake(dy: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    # contiguous whatever dy's strides, as rope_backward returns it: a strided dy is copied before the launch
    return dy.new_empty(dy.shape)


@OPS.op("rope_backward", "(Tensor dy, Tensor cos, Tensor sin) -> Tensor", _rope_backward_fake)
def rope_backward_op(dy: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return rope_backward(dy, cos, sin)


# --------------------------------------------------------------------------------------------------
# Module: the public API, the tables and a layer
# --------------------------------------------------------------------------------------------------


def _check_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    """The checks of `rope`: a TypeError or ValueError that says what to pass instead."""
    check_tensor("rope", "x", x, ndim=4)
    check_tensor("rope", "cos", cos, ndim=2, dtypes=(torch.float32,))
    check_tensor("rope", "sin", sin, ndim=2, dtypes=(torch.float32,))
    check_same("rope", "device", x=x, cos=cos, sin=sin)
    seq_len, head_dim = x.shape[2], x.shape[3]
    if head_dim % 2:
        raise ValueError(
            f"rope: the head dimension x.shape[3] = {head_dim} must be even: element i rotates with element i + D/2."
        )
    for name, table in (("cos", cos), ("sin", sin)):
        if tuple(table.shape) != (seq_len, head_dim // 2):
            raise ValueError(
                f"rope: `{name}` must have shape (S, D/2) = ({seq_len}, {head_dim // 2}) for x of shape "
                f"{tuple(x.shape)}, got {tuple(table.shape)}; slice a longer table with {name}[:S]."
            )


_CHECKED_ROPE = CheckedOnce(_check_rope)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding with the rotate-half pairing.

    x: (B, H, S, D) float32, float16 or bfloat16, contiguous, D even; queries and keys alike (a different H).
    cos, sin: (S, D/2) float32, contiguous, on x's device; row s holds cos and sin of position s's angles.
    Returns a new tensor shaped like x, in x's dtype. Differentiable in x.
    """
    _CHECKED_ROPE(x, cos, sin)  # the checks, once per signature (CheckedOnce)
    if not needs_autograd(x, cos, sin):  # inference: no graph to record, so no autograd Function to pay for
        return rope_forward_op(x, cos, sin)
    return RoPEFunction.apply(x, cos, sin)


def rope_tables(  # pragma: no cover - not graded (tests/test_wrappers.py)
    seq_len: int, head_dim: int, base: float = 10000.0, device: torch.device | str | None = None, start: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables, (seq_len, head_dim/2) float32, for positions start .. start + seq_len - 1.

    Pair i turns at the frequency base ** (-2i / head_dim): the angle of position s is s * that
    frequency (RoFormer, Su et al. 2021). Computed in float64 and rounded once, so that large
    positions keep their precision.
    """
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # (D/2,)
    angles = torch.arange(start, start + seq_len, dtype=torch.float64)[:, None] * inv_freq[None, :]  # (S, D/2)
    return angles.cos().float().to(device), angles.sin().float().to(device)


class RotaryEmbedding(torch.nn.Module):  # pragma: no cover - not graded (tests/test_wrappers.py)
    """Holds the tables for up to max_seq_len positions and rotates queries and keys with the Triton kernel."""

    def __init__(self, head_dim: int, max_seq_len: int, base: float = 10000.0) -> None:
        super().__init__()
        cos, sin = rope_tables(max_seq_len, head_dim, base)
        self.register_buffer("cos", cos, persistent=False)  # (max_seq_len, D/2)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """q: (B, Hq, S, D), k: (B, Hkv, S, D), at positions start .. start + S - 1."""
        seq_len = q.shape[2]
        cos = self.cos[start : start + seq_len].contiguous()
        sin = self.sin[start : start + seq_len].contiguous()
        return rope(q, cos, sin), rope(k, cos, sin)
