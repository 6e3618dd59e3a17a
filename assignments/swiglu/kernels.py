"""Assignment 07, SwiGLU: the gate of a Llama-style feed-forward layer as one fused Triton kernel, and
(bonus) its backward.

    swiglu(gate, up) = silu(gate) * up,    silu(g) = g * sigmoid(g) = g / (1 + exp(-g))

The handout is README.md beside this file. Fill in every region marked TODO; keep the signatures,
the launch wrappers and the autograd Function as they are: the grader calls `swiglu(gate, up)`.
Grade yourself with `make grade` (or `python -m autograder grade swiglu`).
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.configs import ConfigTable, SearchSpace, ceil_bucket, grid
from course.device import Device, device_of
from course.launch import cdiv, launch
from course.ops import OpLibrary, needs_autograd
from course.validate import CheckedOnce, check_same, check_tensor

# --------------------------------------------------------------------------------------------------
# Kernels: the forward, and (bonus) the backward
# --------------------------------------------------------------------------------------------------


@triton.jit
def _swiglu_fwd_kernel(
    gate_ptr,  # (n,) gate, the tensor flattened: the operation is elementwise, so its shape does not matter
    up_ptr,  # (n,) up
    out_ptr,  # (n,) output, the inputs' dtype
    n_elements,
    BLOCK: tl.constexpr,  # elements per program (a power of two)
):
    """Program p computes elements [p*BLOCK, (p+1)*BLOCK); all arithmetic in float32, rounded once on the store."""
    # TODO(swiglu.forward)
    #   Elementwise over n_elements (masked, int64 offsets): out = gate * sigmoid(gate) * up, in float32,
    #   rounded once to out's dtype.
    #   More: python -m autograder hint swiglu.forward
    raise NotImplementedError("TODO(swiglu.forward): not implemented yet; see README.md")


@triton.jit
def _swiglu_bwd_kernel(
    gate_ptr,  # (n,) gate saved by the forward
    up_ptr,  # (n,) up saved by the forward
    dy_ptr,  # (n,) gradient of the output
    dgate_ptr,  # (n,) gradient of gate (written)
    dup_ptr,  # (n,) gradient of up (written)
    n_elements,
    BLOCK: tl.constexpr,
):
    """Recomputes sigmoid(gate) from gate instead of reading a saved activation: three reads, two writes."""
    # TODO(swiglu.backward)
    #   Elementwise, float32 inside: dgate and dup of y = silu(g) * u, recomputing sigmoid(g) from g; the
    #   notebook's ex07.backward derives them. Same offsets and mask as the forward.
    #   More: python -m autograder hint swiglu.backward
    raise NotImplementedError("TODO(swiglu.backward): not implemented yet; see README.md")


# --------------------------------------------------------------------------------------------------
# Configuration: launch settings per GPU and size, from configs.json
# --------------------------------------------------------------------------------------------------


# solutions/swiglu/configs.json, per GPU: "forward" and "backward", each by the number of elements. The
# H200 entry came from the sweeps in results/h200/tune_rope_swiglu_*.json: at LLM sizes every block of 512 to
# 4096 elements with enough warps reaches the copy bandwidth; 2048 with 8 warps (forward) and 1024 with 8
# (backward, three loads an element) were the best. Decode-sized calls (up to ~1M elements) take blocks of
# 512, so that more SMs share the few bytes there are.
CONFIGS = ConfigTable.beside(__file__, "swiglu")
SMALL = 1 << 20


@CONFIGS.cached
def swiglu_config(device: Device, n_elements: int, backward: bool = False) -> tuple[int, int]:
    """(BLOCK, num_warps) of the forward or the backward kernel over n_elements."""
    bucket = ceil_bucket(n_elements, (SMALL,), "elements", f"elements>{SMALL}")
    s = CONFIGS.pick(device, "backward" if backward else "forward", bucket)
    return s["block"], s["num_warps"]


# What `python -m autograder tune swiglu` tries: a decode-sized and a prefill-sized call, each pass.
def _calls(task: str, kernel: str) -> list[SearchSpace]:
    return [
        SearchSpace(kernel, task, {f"elements<={SMALL}": [{"shape": [16, 14336], "dtype": "bfloat16"}]},
                    grid(block=[256, 512, 1024], num_warps=[1, 2, 4])),
        SearchSpace(kernel, task, {f"elements>{SMALL}": [{"shape": [8192, 14336], "dtype": "bfloat16"}]},
                    grid(block=[1024, 2048, 4096], num_warps=[4, 8, 16])),
    ]


SEARCH_SPACE = _calls("swiglu.forward", "forward") + _calls("swiglu.backward", "backward")


# --------------------------------------------------------------------------------------------------
# Launchers: inputs already checked, settings from the configuration
# --------------------------------------------------------------------------------------------------


def swiglu_forward(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """Launch the forward kernel over every element. Returns a new tensor shaped like gate."""
    out = torch.empty_like(gate)
    n = gate.numel()
    if n == 0:  # pragma: no cover - empty input, no launch
        return out
    block, num_warps = swiglu_config(device_of(gate), n)
    launch(_swiglu_fwd_kernel, (cdiv(n, block),), gate, up, out, n, BLOCK=block, num_warps=num_warps)
    return out


def swiglu_backward(gate: torch.Tensor, up: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Launch the backward kernel. Returns (dgate, dup), shaped like gate."""
    dy = dy.contiguous()  # autograd may hand over a strided gradient
    dgate, dup = torch.empty_like(gate), torch.empty_like(up)
    n = gate.numel()
    if n == 0:  # pragma: no cover - empty input, no launch
        return dgate, dup
    block, num_warps = swiglu_config(device_of(gate), n, backward=True)
    launch(_swiglu_bwd_kernel, (cdiv(n, block),), gate, up, dy, dgate, dup, n, BLOCK=block, num_warps=num_warps)
    return dgate, dup


# --------------------------------------------------------------------------------------------------
# Autograd Function
# --------------------------------------------------------------------------------------------------


class SwiGLUFunction(torch.autograd.Function):
    """Forward and backward through the Triton kernels; saves the two inputs, never silu(gate)."""

    @staticmethod
    def forward(ctx, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(gate, up)  # only called when a gradient is needed (see swiglu)
        return swiglu_forward_op(gate, up)

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        gate, up = ctx.saved_tensors
        return swiglu_backward_op(gate, up, dy)


# --------------------------------------------------------------------------------------------------
# Custom ops: the launchers as PyTorch operators (course/ops.py), so torch.compile and CUDA graphs take them whole
# --------------------------------------------------------------------------------------------------


OPS = OpLibrary(__file__)

def _swiglu_forward_fake(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(gate)


@OPS.op("swiglu_forward", "(Tensor gate, Tensor up) -> Tensor", _swiglu_forward_fake)
def swiglu_forward_op(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return swiglu_forward(gate, up)


def _swiglu_backward_fake(gate: torch.Tensor, up: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(gate), torch.empty_like(up)


@OPS.op("swiglu_backward", "(Tensor gate, Tensor up, Tensor dy) -> (Tensor, Tensor)", _swiglu_backward_fake)
def swiglu_backward_op(gate: torch.Tensor, up: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return swiglu_backward(gate, up, dy)


# --------------------------------------------------------------------------------------------------
# Module: the public API and a layer
# --------------------------------------------------------------------------------------------------


def _check_swiglu(gate: torch.Tensor, up: torch.Tensor) -> None:
    """The checks of `swiglu`: a TypeError or ValueError that says what to pass instead."""
    check_tensor("swiglu", "gate", gate, min_ndim=1)
    check_tensor("swiglu", "up", up, min_ndim=1)
    check_same("swiglu", "dtype", gate=gate, up=up)
    check_same("swiglu", "device", gate=gate, up=up)
    if gate.shape != up.shape:
        raise ValueError(
            f"swiglu: `gate` and `up` must have the same shape, got {tuple(gate.shape)} and {tuple(up.shape)}; "
            "if one projection produced both, split it with gate, up = h.chunk(2, dim=-1) and call .contiguous()."
        )


_CHECKED_SWIGLU = CheckedOnce(_check_swiglu)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up, elementwise.

    gate, up: the same shape (any, at least one dimension), float32, float16 or bfloat16, one dtype,
    one device, contiguous. Returns a new tensor shaped like gate, in its dtype. Differentiable in both.
    """
    _CHECKED_SWIGLU(gate, up)  # the checks, once per signature (CheckedOnce)
    if not needs_autograd(gate, up):  # inference: no graph to record, so no autograd Function to pay for
        return swiglu_forward_op(gate, up)
    return SwiGLUFunction.apply(gate, up)


class SwiGLUMLP(torch.nn.Module):  # pragma: no cover - not graded (a notebook's layer)
    """Llama's feed-forward layer: down(silu(gate(x)) * up(x)), three bias-free projections."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = torch.nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(swiglu(self.gate_proj(x), self.up_proj(x)))
