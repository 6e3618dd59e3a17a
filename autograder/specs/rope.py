"""Grading spec for assignment 06, RoPE: rope(x, cos, sin) with the rotate-half pairing, and its backward."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from autograder.spec import COPY, DTYPES, Assignment, Case, Params, Part, SpeedCase, Tensors, Tolerance, ONCE_SAYS, WRITE_SLACK, read_fenced

# --------------------------------------------------------------------------------------------------
# Inputs. x has a random scale and offset; the tables are real rotary tables with a random base and a
# random first position, so every position has its own angles and the high-frequency pairs turn by
# whole radians. Only the lowest frequencies barely turn: a bug shows in the other columns.
# The hostile distribution "far" starts the positions between 2**16 and 2**20 (a long context): there
# the lowest frequencies turn by radians too (cos far from 1, sin far from 0), so a kernel that gets the
# last pairs of a row wrong (its mask, its table column, the rotation's sign) cannot hide behind cos = 1.
# Its CPU case has 303 rows, enough that the launch packs several into a program, and one program short.
# --------------------------------------------------------------------------------------------------


def _uniform(g: torch.Generator, lo: float, hi: float) -> float:
    return lo + (hi - lo) * torch.rand((), generator=g, device=g.device).item()


def make_tables(seq_len: int, head_dim: int, base: float, start: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(S, D/2) float32 cos and sin for positions start .. start + S - 1 (computed in float64, rounded once)."""
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim)
    angles = torch.arange(start, start + seq_len, dtype=torch.float64, device=device)[:, None] * inv_freq
    return angles.cos().float(), angles.sin().float()


def forward_write_budget(inputs: Tensors, params: Params) -> int:
    """The output once, and room for the cos and sin tables widened to the head dim, as Hugging Face's rotate_half
    form uses them (red team 24: a kernel that widens them, then one that rotates). One kernel per operation stores
    two products the size of the output besides; the part's largest cases have more than one head, so that stays past
    the budget there, and one case past the budget fails the part."""
    x, cos = inputs["x"], inputs["cos"]  # (B, H, S, D), (S, D/2)
    return x.numel() * x.element_size() + 2 * 2 * cos.numel() * 4 + WRITE_SLACK


FORWARD_WRITES = ONCE_SAYS + " (the cos and sin tables may be widened to the head dim first, once)"


def make_forward_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    shape, dtype = tuple(params["shape"]), DTYPES[params["dtype"]]  # (B, H, S, D)
    scale = math.exp(_uniform(g, math.log(0.25), math.log(4.0)))
    offset = _uniform(g, -0.5, 0.5) * scale
    x = torch.randn(shape, generator=g, device=device) * scale + offset
    base = math.exp(_uniform(g, math.log(1e3), math.log(1e6)))
    start = int(_uniform(g, 0, 4096))
    if params.get("dist") == "far":  # positions past 2**16: even the lowest frequencies turn by radians
        start = int(_uniform(g, 2**16, 2**20))
    cos, sin = make_tables(shape[2], shape[3], base, start, device)
    return read_fenced({"x": x.to(dtype), "cos": cos, "sin": sin})


def make_backward_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    inputs = make_forward_inputs(params, g, device)
    dy = torch.randn(tuple(params["shape"]), generator=g, device=device)  # (B, H, S, D)
    inputs["dy"] = dy.to(DTYPES[params["dtype"]])
    return read_fenced(inputs)


# --------------------------------------------------------------------------------------------------
# References (float64, in the grader's process) and the PyTorch baseline (the submission's dtype).
# --------------------------------------------------------------------------------------------------


def _rope64(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def reference_forward(inputs: Tensors, params: Params) -> Tensors:
    return {"y": _rope64(inputs["x"].double(), inputs["cos"].double(), inputs["sin"].double())}


def reference_backward(inputs: Tensors, params: Params) -> Tensors:
    x = inputs["x"].double().requires_grad_()
    y = _rope64(x, inputs["cos"].double(), inputs["sin"].double())
    (dx,) = torch.autograd.grad(y, (x,), inputs["dy"].double())
    return {"dx": dx}


# The grader's own launch of the backward kernel (Part.kernel_probe), in the replayer on the case's inputs: the given
# launcher's arguments, two rows a program (the launcher takes more), so that the gradient graded is this kernel's: the
# forward kernel run again between swaps of the halves computes it too, beside a launch of this one on a decoy.
PROBE_ROWS = 2


def probe_backward(kernels: Callable[[str], Any], inputs: Tensors, params: Params, device: torch.device) -> Tensors:
    dy, cos, sin = inputs["dy"].contiguous(), inputs["cos"], inputs["sin"]  # (B, H, S, D), (S, D/2), (S, D/2)
    seq_len, head_dim = dy.shape[2], dy.shape[3]
    half, n_rows = head_dim // 2, dy.numel() // head_dim
    block_d = 1 << max(0, half - 1).bit_length()  # the next power of two
    dx = torch.empty_like(dy)
    kernels("_rope_bwd_kernel")[(-(-n_rows // PROBE_ROWS),)](
        dy, cos, sin, dx, n_rows, seq_len, half, BLOCK_R=PROBE_ROWS, BLOCK_D=block_d, num_warps=1,
    )  # fmt: skip
    return {"dx": dx}


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def eager_baseline(inputs: Tensors, params: Params) -> torch.Tensor:
    """RoPE as Llama's reference code writes it, with float32 tables: a handful of kernels, float32 inside."""
    x, cos, sin = inputs["x"], inputs["cos"], inputs["sin"]
    cos = torch.cat((cos, cos), dim=-1)  # (S, D): the same angle for x[i] and x[i + D/2]
    sin = torch.cat((sin, sin), dim=-1)
    return (x * cos + _rotate_half(x) * sin).to(x.dtype)


# --------------------------------------------------------------------------------------------------
# Calls on the submission (run in the worker process).
# --------------------------------------------------------------------------------------------------


def call_forward(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"y": module.rope(inputs["x"], inputs["cos"], inputs["sin"])}


def call_backward(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    x = inputs["x"].detach().requires_grad_()
    y = module.rope(x, inputs["cos"], inputs["sin"])
    if not isinstance(y, torch.Tensor) or y.grad_fn is None:
        raise TypeError(
            "rope returned a tensor with no autograd history: route the call through "
            "RoPEFunction.apply so that the backward can run."
        )
    (dx,) = torch.autograd.grad(y, (x,), inputs["dy"])
    return {"dx": dx}


def speed_forward(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return module.rope(inputs["x"], inputs["cos"], inputs["sin"])


def forward_bytes(params: Params) -> int:
    """Read x and write y once, read the two float32 tables once."""
    batch, heads, seq_len, head_dim = params["shape"]
    numel = batch * heads * seq_len * head_dim
    return 2 * numel * DTYPES[params["dtype"]].itemsize + 2 * seq_len * (head_dim // 2) * 4


# --------------------------------------------------------------------------------------------------
# Cases and rubric.
# --------------------------------------------------------------------------------------------------

# Correct float32 arithmetic lands near 1e-7 of |x|; each output is then rounded once to its dtype,
# which costs at most u = 2^-11 (float16) or 2^-8 (bfloat16) of its value. Each 16-bit rtol is 1.5u:
# a kernel that computes in float32 and rounds once uses at most 0.65 of it, while one that rounds twice
# (casting the tables to x's dtype, or rounding the products before the sum, as Llama's bf16 code does)
# errs by up to 2u on some elements of every large output and fails. atol (times mean |ref|) covers
# outputs near zero, where x1*cos and x2*sin cancel and float32 rounding is no longer relative.
# tests/test_tolerances_rope_swiglu.py shows these claims on the graded shapes.
TOLERANCES = {
    "float32": Tolerance(rtol=1e-5, atol=1e-5),
    "float16": Tolerance(rtol=7.5e-4, atol=1e-5),
    "bfloat16": Tolerance(rtol=6e-3, atol=1e-5),
}

# (B, H, S, D). Head dims whose half is not a power of two (12, 40, 48, 65) leave a masked edge in every
# tile; H != S everywhere, so a position read off the wrong axis shows; queries and keys of one model
# differ only in H.
CPU_FORWARD = [
    {"shape": [1, 1, 1, 2]},
    {"shape": [1, 3, 5, 8]},
    {"shape": [2, 3, 7, 24]},
    {"shape": [1, 2, 33, 96]},
    {"shape": [2, 1, 17, 80]},
    {"shape": [1, 4, 100, 64]},
    {"shape": [2, 8, 20, 32]},
    {"shape": [2, 2, 20, 32]},
    {"shape": [1, 2, 9, 130]},
    {"shape": [1, 3, 101, 80], "dist": "far"},
]
GPU_FORWARD = [
    {"shape": [1, 32, 2048, 128]},
    {"shape": [2, 8, 1000, 128]},
    {"shape": [8, 32, 1, 128]},
    {"shape": [1, 32, 511, 96]},
    {"shape": [2, 20, 333, 80]},
    {"shape": [1, 4, 4097, 64]},
    {"shape": [3, 5, 77, 130]},
    {"shape": [2, 8, 333, 128], "dist": "far"},
]
CPU_BACKWARD = [
    {"shape": [1, 3, 5, 8]},
    {"shape": [2, 3, 7, 24]},
    {"shape": [1, 2, 33, 96]},
    {"shape": [2, 2, 20, 32]},
    {"shape": [1, 2, 9, 130]},
    {"shape": [1, 3, 101, 80], "dist": "far"},
]
GPU_BACKWARD = [
    {"shape": [1, 32, 2048, 128]},
    {"shape": [2, 8, 1000, 128]},
    {"shape": [8, 32, 1, 128]},
    {"shape": [1, 32, 511, 96]},
    {"shape": [2, 20, 333, 80]},
    {"shape": [2, 8, 333, 128], "dist": "far"},
]


def _cases(cpu: list[Params], gpu: list[Params]) -> list[Case]:
    cases = [Case({**p, "dtype": "float32"}, "cpu") for p in cpu]
    cases += [Case({**p, "dtype": d}, "gpu") for d in ("float32", "float16", "bfloat16") for p in gpu]
    return cases


# Memory-bound: points on the fraction of the copy bandwidth measured in the same run (eager PyTorch, about
# 5% of it, is timed for information). Calibrated on the H200 grade (results/h200/grade_rope_gpu_tier.json):
# the solution moved 81% and 73% (the smaller, 4x8x4096 case): full points at 65%, a 12% margin or more.
SPEED_TARGET, SPEED_ZERO = 0.65, 0.06

ASSIGNMENT = Assignment(
    slug="rope",
    title="06 RoPE",
    api={"rope": "rope(x, cos, sin)"},
    parts=[
        Part(
            task="rope.forward",
            title="forward kernel",
            points=60,
            make_inputs=make_forward_inputs,
            call=call_forward,
            reference=reference_forward,
            cases=_cases(CPU_FORWARD, GPU_FORWARD),
            tolerances=TOLERANCES,
            write_budget=forward_write_budget,
            write_budget_says=FORWARD_WRITES,
        ),
        Part(
            task="rope.backward",
            title="backward kernel (the inverse rotation)",
            points=20,
            bonus=True,
            make_inputs=make_backward_inputs,
            call=call_backward,
            reference=reference_backward,
            cases=_cases(CPU_BACKWARD, GPU_BACKWARD),
            tolerances=TOLERANCES,
            # the call runs the forward first; the gradient must come from the backward kernel, not from the forward
            # kernel run again between swaps of the halves (R(-t) = S R(t) S; red team 18)
            launches=("_rope_bwd_kernel", "_rope_fwd_kernel"),
            kernel_probe=probe_backward,
        ),
    ],
    speed=[
        SpeedCase("rope.forward", {"shape": [1, 32, 8192, 128], "dtype": "bfloat16"}, 10, SPEED_TARGET, forward_bytes,
                  zero_at=SPEED_ZERO, measure=COPY),
        SpeedCase("rope.forward", {"shape": [4, 8, 4096, 128], "dtype": "bfloat16"}, 10, SPEED_TARGET, forward_bytes,
                  zero_at=SPEED_ZERO, measure=COPY),
    ],
    baseline=eager_baseline,
    speed_call=speed_forward,
)


# --------------------------------------------------------------------------------------------------
# Benchmarks (python -m autograder bench rope): the solution against eager PyTorch and torch.compile.
# --------------------------------------------------------------------------------------------------

# Decode (one new token for each of 8 sequences), prefill of one sequence at growing lengths, the keys of a
# GQA model (8 heads), a batch of four.
BENCH_SHAPES = [[8, 32, 1, 128], [1, 32, 512, 128], [1, 32, 2048, 128], [1, 8, 8192, 128], [4, 32, 2048, 128],
                [1, 32, 8192, 128]]


def backward_bytes(params: Params) -> int:
    """Read dy and write dx once, read the two tables once."""
    return forward_bytes(params)


def compiled_baseline() -> Callable:
    """torch.compile of the eager baseline, one graph per shape: Dynamo's recompile limit (8 by default)
    is lifted, since past it torch.compile silently falls back to eager and would be timed as eager."""
    import torch._dynamo

    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    return torch.compile(eager_baseline, dynamic=False)


def bench_suite(module: ModuleType, quick: bool = False) -> list:
    from autograder.spec import BenchCase

    fns = {
        "solution": lambda inputs, params: module.rope(inputs["x"], inputs["cos"], inputs["sin"]),
        "eager": eager_baseline,
        "torch.compile": compiled_baseline(),
    }

    def forward(fn: Callable, params: Params) -> Callable:
        return lambda inputs: (lambda: fn(inputs, params))

    def backward(fn: Callable, params: Params) -> Callable:
        def bind(inputs: Tensors) -> Callable[[], object]:
            x = inputs["x"].detach().requires_grad_()
            y = fn({**inputs, "x": x}, params)
            return lambda: torch.autograd.grad(y, (x,), inputs["dy"], retain_graph=True)

        return bind

    shapes = BENCH_SHAPES[1:4] if quick else BENCH_SHAPES
    suite = []
    for shape in shapes:
        params = {"shape": shape, "dtype": "bfloat16"}
        suite.append(BenchCase("forward", params, make_forward_inputs,
                               {k: forward(f, params) for k, f in fns.items()}, forward_bytes(params)))
        suite.append(BenchCase("backward", params, make_backward_inputs,
                               {k: backward(f, params) for k, f in fns.items()}, backward_bytes(params)))
    return suite
