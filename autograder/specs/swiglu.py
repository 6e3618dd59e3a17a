"""Grading spec for assignment 07, SwiGLU: swiglu(gate, up) = silu(gate) * up, and its backward."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType

import torch
import torch.nn.functional as F

from autograder.checking import attach_term_scale
from autograder.spec import COPY, DTYPES, Assignment, Case, Params, Part, SpeedCase, Tensors, Tolerance, ONCE_SAYS, output_once, read_fenced

# --------------------------------------------------------------------------------------------------
# Inputs. gate is spread and shifted per seed so that a good share of it is negative (where silu and
# sigmoid differ most) and some of it reaches |g| of 10 or more (where sigmoid saturates).
# --------------------------------------------------------------------------------------------------


def _uniform(g: torch.Generator, lo: float, hi: float) -> float:
    return lo + (hi - lo) * torch.rand((), generator=g, device=g.device).item()


# The hostile distribution "extremes": gate spread over |g| up to GATE_EXTREME (both signs), where exp(-g)
# overflows float32 (past g = -88) and exp(g) too (past 88): a sigmoid written exp(g) / (1 + exp(g))
# gives inf / inf = NaN, and silu's gradient g * (1 - s) must not turn into inf * 0. float16's range caps it.
GATE_EXTREME = {"float32": 1e4, "bfloat16": 1e4, "float16": 6e4}


def make_forward_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    shape, dtype = tuple(params["shape"]), DTYPES[params["dtype"]]
    gate_scale = math.exp(_uniform(g, math.log(0.5), math.log(4.0)))
    gate = torch.randn(shape, generator=g, device=device) * gate_scale + _uniform(g, -1.0, 1.0)
    if params.get("dist") == "extremes":  # |g| log-uniform from 1 to GATE_EXTREME
        size = torch.exp(torch.rand(shape, generator=g, device=device) * math.log(GATE_EXTREME[params["dtype"]]))
        gate = torch.sign(gate) * size
    up = torch.randn(shape, generator=g, device=device) * math.exp(_uniform(g, math.log(0.25), math.log(4.0)))
    return read_fenced({"gate": gate.to(dtype), "up": up.to(dtype)})


def make_backward_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    inputs = make_forward_inputs(params, g, device)
    inputs["dy"] = torch.randn(tuple(params["shape"]), generator=g, device=device).to(DTYPES[params["dtype"]])
    return read_fenced(inputs)


# --------------------------------------------------------------------------------------------------
# References (float64, in the grader's process) and the PyTorch baseline (the submission's dtype).
# --------------------------------------------------------------------------------------------------


def _swiglu64(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return gate * torch.sigmoid(gate) * up


def reference_forward(inputs: Tensors, params: Params) -> Tensors:
    return {"y": _swiglu64(inputs["gate"].double(), inputs["up"].double())}


def reference_backward(inputs: Tensors, params: Params) -> Tensors:
    """The float64 gradients; dgate = dy up (s + g s (1 - s)), s = sigmoid(g), marked with the size of its two terms
    (attach_term_scale): near g = -1.28, where SiLU's slope is zero, they cancel, and float32's rounding error lives at
    their size, not at the small result's. Judged against mean|ref| instead, the one-element case was a lottery: the
    reference solution failed it in the nineteenth session's grading of the solutions (9e-5 off, relative, against
    2e-5 allowed), and would have passed the same element inside any larger tensor. The scale is never below the
    tensor's mean|ref| (what it was): an element of the extremes case, 1e-40 beside elements of 1e+2, is judged as
    before, not against its own subnormal terms."""
    gate = inputs["gate"].double().requires_grad_()
    up = inputs["up"].double().requires_grad_()
    dgate, dup = torch.autograd.grad(_swiglu64(gate, up), (gate, up), inputs["dy"].double())
    g, u, dy = inputs["gate"].double(), inputs["up"].double(), inputs["dy"].double()
    s = torch.sigmoid(g)
    outer = dy * u * s
    terms = (outer * outer * (1.0 + (g * (1.0 - s)) ** 2)).sqrt()
    floor = dgate.abs()[dgate.isfinite()].mean().nan_to_num(0.0) / math.sqrt(2.0 / math.pi)
    return {"dgate": attach_term_scale(dgate, torch.maximum(terms, floor)), "dup": dup}


def eager_baseline(inputs: Tensors, params: Params) -> torch.Tensor:
    """SwiGLU as Llama's reference MLP writes it: two kernels, F.silu then the product."""
    return F.silu(inputs["gate"]) * inputs["up"]


# --------------------------------------------------------------------------------------------------
# Calls on the submission (run in the worker process).
# --------------------------------------------------------------------------------------------------


def call_forward(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"y": module.swiglu(inputs["gate"], inputs["up"])}


def call_backward(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    gate = inputs["gate"].detach().requires_grad_()
    up = inputs["up"].detach().requires_grad_()
    y = module.swiglu(gate, up)
    if not isinstance(y, torch.Tensor) or y.grad_fn is None:
        raise TypeError(
            "swiglu returned a tensor with no autograd history: route the call through "
            "SwiGLUFunction.apply so that the backward can run."
        )
    dgate, dup = torch.autograd.grad(y, (gate, up), inputs["dy"])
    return {"dgate": dgate, "dup": dup}


def speed_forward(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return module.swiglu(inputs["gate"], inputs["up"])


def forward_bytes(params: Params) -> int:
    """Read gate and up, write the output, each once."""
    return 3 * math.prod(params["shape"]) * DTYPES[params["dtype"]].itemsize


# --------------------------------------------------------------------------------------------------
# Cases and rubric.
# --------------------------------------------------------------------------------------------------

# Correct float32 arithmetic lands within a few 1e-7 of the value; the output is then rounded once to its
# dtype, which costs at most u = 2^-11 (float16) or 2^-8 (bfloat16) of it. Each 16-bit rtol is 1.5u: a
# kernel that computes in float32 and rounds once uses at most 0.65 of it. One that rounds twice fails on
# some elements of every graded 16-bit case: the product gate * up rounded to bf16 before the activation
# multiplies it, silu(gate) rounded before the product (as F.silu(gate) * up does in eager PyTorch), or
# arithmetic in the 16-bit type. tests/test_tolerances_rope_swiglu.py shows these claims on the graded shapes.
TOLERANCES = {
    "float32": Tolerance(rtol=1e-5, atol=1e-5),
    "float16": Tolerance(rtol=7.5e-4, atol=1e-5),
    "bfloat16": Tolerance(rtol=6e-3, atol=1e-5),
}

# Element counts that are neither powers of two nor multiples of any block size, so the last block is
# partial, plus a single element and several leading dimensions. The forward's hostile case has over a
# million elements, past which the launch takes bigger blocks.
CPU_FORWARD = [
    {"shape": [1]},
    {"shape": [3, 100]},
    {"shape": [2, 5, 129]},
    {"shape": [70, 33]},
    {"shape": [7, 1000]},
    {"shape": [4097]},
    {"shape": [3, 20001]},
    {"shape": [3, 349526], "dist": "extremes"},
]
GPU_FORWARD = [
    {"shape": [1024, 14336]},
    {"shape": [2, 1000, 11008]},
    {"shape": [16, 14336]},
    {"shape": [3, 77, 8192]},
    {"shape": [5, 20001]},
    {"shape": [4097]},
    {"shape": [64, 14336], "dist": "extremes"},
]
CPU_BACKWARD = [
    {"shape": [1]},
    {"shape": [3, 100]},
    {"shape": [2, 5, 129]},
    {"shape": [7, 1000]},
    {"shape": [3, 20001]},
    {"shape": [9, 1000], "dist": "extremes"},
]
GPU_BACKWARD = [
    {"shape": [1024, 14336]},
    {"shape": [2, 1000, 11008]},
    {"shape": [16, 14336]},
    {"shape": [3, 77, 8192]},
    {"shape": [5, 20001]},
    {"shape": [64, 14336], "dist": "extremes"},
]


def _cases(cpu: list[Params], gpu: list[Params]) -> list[Case]:
    cases = [Case({**p, "dtype": "float32"}, "cpu") for p in cpu]
    cases += [Case({**p, "dtype": d}, "gpu") for d in ("float32", "float16", "bfloat16") for p in gpu]
    return cases


# Memory-bound: points on the fraction of the copy bandwidth measured in the same run (eager PyTorch is timed
# for information). Calibrated on the H200 grade (results/h200/grade_swiglu_gpu_tier.json): the solution moved
# 100% and 95% of copy bandwidth: full points at 80%, a 19% margin or more. Eager PyTorch (five passes for the
# fused kernel's three) moved 58%: none at 50%.
SPEED_TARGET, SPEED_ZERO = 0.80, 0.50

ASSIGNMENT = Assignment(
    slug="swiglu",
    title="07 SwiGLU",
    api={"swiglu": "swiglu(gate, up)"},
    parts=[
        Part(
            task="swiglu.forward",
            title="forward kernel",
            points=60,
            make_inputs=make_forward_inputs,
            call=call_forward,
            reference=reference_forward,
            cases=_cases(CPU_FORWARD, GPU_FORWARD),
            tolerances=TOLERANCES,
            write_budget=output_once("gate"),
            write_budget_says=ONCE_SAYS,
        ),
        Part(
            task="swiglu.backward",
            title="backward kernel (dgate, dup)",
            points=20,
            bonus=True,
            make_inputs=make_backward_inputs,
            call=call_backward,
            reference=reference_backward,
            cases=_cases(CPU_BACKWARD, GPU_BACKWARD),
            tolerances=TOLERANCES,
        ),
    ],
    speed=[
        SpeedCase("swiglu.forward", {"shape": [8192, 14336], "dtype": "bfloat16"}, 10, SPEED_TARGET, forward_bytes,
                  zero_at=SPEED_ZERO, measure=COPY),
        SpeedCase("swiglu.forward", {"shape": [4096, 11008], "dtype": "bfloat16"}, 10, SPEED_TARGET, forward_bytes,
                  zero_at=SPEED_ZERO, measure=COPY),
    ],
    baseline=eager_baseline,
    speed_call=speed_forward,
)


# --------------------------------------------------------------------------------------------------
# Benchmarks (python -m autograder bench swiglu): the solution against eager PyTorch and torch.compile.
# --------------------------------------------------------------------------------------------------

# Decode (16 tokens), then prefill-sized calls at Llama-2-7B's (11008) and Llama-3-8B's (14336) widths.
BENCH_SHAPES = [[16, 14336], [512, 14336], [2048, 14336], [4096, 11008], [8192, 14336], [16384, 14336]]


def backward_bytes(params: Params) -> int:
    """Read gate, up and dy, write dgate and dup, each once."""
    return 5 * math.prod(params["shape"]) * DTYPES[params["dtype"]].itemsize


def compiled_baseline() -> Callable:
    """torch.compile of the eager baseline, one graph per shape (Dynamo's recompile limit lifted, as in rope)."""
    import torch._dynamo

    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    return torch.compile(eager_baseline, dynamic=False)


def bench_suite(module: ModuleType, quick: bool = False) -> list:
    from autograder.spec import BenchCase

    fns = {
        "solution": lambda inputs, params: module.swiglu(inputs["gate"], inputs["up"]),
        "eager": eager_baseline,
        "torch.compile": compiled_baseline(),
    }

    def forward(fn: Callable, params: Params) -> Callable:
        return lambda inputs: (lambda: fn(inputs, params))

    def backward(fn: Callable, params: Params) -> Callable:
        def bind(inputs: Tensors) -> Callable[[], object]:
            gate = inputs["gate"].detach().requires_grad_()
            up = inputs["up"].detach().requires_grad_()
            y = fn({"gate": gate, "up": up}, params)
            return lambda: torch.autograd.grad(y, (gate, up), inputs["dy"], retain_graph=True)

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
