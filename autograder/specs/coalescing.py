"""Grading spec for assignment 03, coalescing: transpose(x), a tiled transpose."""

from __future__ import annotations

import math
from types import ModuleType

import torch

from autograder.spec import COPY, DTYPES, Assignment, BenchCase, Case, Params, Part, SpeedCase, Tensors, Tolerance, read_fenced

# --------------------------------------------------------------------------------------------------
# Inputs: normal values with a random scale and offset per seed, so that almost every element differs
# from its neighbours (a kernel that puts an element in the wrong place cannot land on an equal value
# except by rare coincidence, and then only there).
# --------------------------------------------------------------------------------------------------


# The hostile distribution "special": a third of the elements are the values a transpose that goes
# through arithmetic (x * 1, x + 0, a select against 0, a conversion) changes or drops: infinities,
# negative zero, subnormals that a flush-to-zero unit turns into 0, the largest finite values and the
# smallest normal ones, each with either sign. A transpose copies bits, so each must arrive exactly.


def _special_values(dtype: torch.dtype) -> list[float]:
    info = torch.finfo(dtype)
    return [float("inf"), -0.0, info.max, info.smallest_normal, info.smallest_normal * 2.0**-3, info.smallest_normal * 1.5]


def make_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    shape, dtype = tuple(params["shape"]), DTYPES[params["dtype"]]
    scale = math.exp(math.log(0.25) + math.log(16.0) * torch.rand((), generator=g, device=g.device).item())
    offset = (torch.rand((), generator=g, device=g.device).item() - 0.5) * scale
    x = torch.randn(shape, generator=g, device=device) * scale + offset  # (M, N)
    if params.get("dist") == "special":
        values = torch.tensor(_special_values(dtype), dtype=torch.float64, device=device)
        pick = torch.randint(0, len(values), shape, generator=g, device=device)
        sign = torch.where(torch.rand(shape, generator=g, device=device) < 0.5, -1.0, 1.0).double()
        special = torch.rand(shape, generator=g, device=device) < 1 / 3
        return read_fenced({"x": torch.where(special, values[pick] * sign, x.double()).to(dtype)})
    return read_fenced({"x": x.to(dtype)})


def reference(inputs: Tensors, params: Params) -> Tensors:
    return {"out": inputs["x"].double().t().contiguous()}  # (N, M); float64 holds every input value exactly


def torch_transpose(inputs: Tensors, params: Params) -> torch.Tensor:
    """PyTorch's own way: a copy of the transposed view (one strided side)."""
    return inputs["x"].t().contiguous()


def call(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"out": module.transpose(inputs["x"])}


def speed_call(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return module.transpose(inputs["x"])


def bytes_moved(params: Params) -> int:
    """Read x once, write out once."""
    return 2 * math.prod(params["shape"]) * DTYPES[params["dtype"]].itemsize


# --------------------------------------------------------------------------------------------------
# Cases and rubric.
# --------------------------------------------------------------------------------------------------

# A transpose does no arithmetic: every output element is a copy of one input element, bits and all.
# The float64 reference holds each input value exactly (every float32, float16 and bfloat16 value is a
# float64 value), so a correct kernel matches it exactly and any nonzero error means an element came from
# the wrong place (or was never written). A tolerance above zero would only let such errors through, e.g.
# a neighbour that happens to be close: bfloat16 has 256 values per octave, so duplicates are common.
TOLERANCES = {name: Tolerance(rtol=0.0, atol=0.0) for name in ("float32", "float16", "bfloat16")}

# Small float32 shapes for the interpreter: single rows and columns, shapes that are not multiples of
# any tile (the solution's tiles are 64 x 64 here), both orientations of the same non-square shape (a
# kernel that mixes up rows and columns passes square inputs only), one exact multiple of the tile.
CPU_CASES = [
    {"shape": [1, 1]},
    {"shape": [1, 77]},
    {"shape": [77, 1]},
    {"shape": [33, 17]},
    {"shape": [17, 33]},
    {"shape": [64, 64]},
    {"shape": [100, 300]},
    {"shape": [129, 65]},
    {"shape": [257, 31]},
    {"shape": [70, 90], "dist": "special"},
]
# GPU shapes: weight matrices and activations of Llama-sized layers (4096 hidden, 14336 MLP), their
# transposes, a vector each way, and sizes that are not multiples of any tile.
GPU_CASES = [
    {"shape": [4096, 4096]},
    {"shape": [4096, 14336]},
    {"shape": [14336, 4096]},
    {"shape": [8192, 1024]},
    {"shape": [1793, 1793]},
    {"shape": [1, 5000]},
    {"shape": [5000, 1]},
    {"shape": [777, 3001]},
    {"shape": [1000, 999], "dist": "special"},
]


def _cases(cpu: list[Params], gpu: list[Params]) -> list[Case]:
    cases = [Case({**p, "dtype": "float32"}, "cpu") for p in cpu]
    cases += [Case({**p, "dtype": d}, "gpu") for d in ("float32", "float16", "bfloat16") for p in gpu]
    return cases


# Speed: memory-bound, scored on the fraction of the copy bandwidth measured in the same run (x.t().contiguous()
# is timed too, for information). Calibrated on the H200 grade (results/h200/grade_coalescing_gpu_tier.json):
# the solution moved 90% (bfloat16) and 92% (float32) of copy bandwidth, and 93% on an H100 (issue 17), so
# full points at 80% leaves it a 12% margin; PyTorch's transpose moved 15% and 27%: it earns nothing.
SPEED = [
    SpeedCase("coalescing.transpose", {"shape": [8192, 8192], "dtype": "bfloat16"}, 10, 0.80, bytes_moved,
              baseline_name="x.t().contiguous()", zero_at=0.15, measure=COPY),
    SpeedCase("coalescing.transpose", {"shape": [4096, 14336], "dtype": "float32"}, 10, 0.80, bytes_moved,
              baseline_name="x.t().contiguous()", zero_at=0.25, measure=COPY),
]  # fmt: skip

ASSIGNMENT = Assignment(
    slug="coalescing",
    title="03 Coalescing: transpose",
    api={"transpose": "transpose(x)"},
    parts=[
        Part(
            task="coalescing.transpose",
            title="tiled transpose kernel",
            points=60,
            make_inputs=make_inputs,
            call=call,
            reference=reference,
            cases=_cases(CPU_CASES, GPU_CASES),
            tolerances=TOLERANCES,
        ),
    ],
    speed=SPEED,
    baseline=torch_transpose,
    speed_call=speed_call,
    # PyTorch's copies would transpose for the student (x.t().contiguous() is the op being replaced).
    forbidden_ops=frozenset({"clone", "copy_", "_to_copy", "contiguous", "_copy_from", "_copy_from_and_resize"}),
    forbidden_note=(
        "In this assignment copies count too (`clone`, `contiguous`, `copy_`, `to`, a `fill_` from a tensor): the copy "
        "that transposes is the operation you are writing. Views such as x.t() are fine."
    ),
)


# --------------------------------------------------------------------------------------------------
# Benchmarks (python -m autograder bench coalescing): the solution, PyTorch's transpose and a plain copy.
# --------------------------------------------------------------------------------------------------

BENCH_SHAPES = {
    "bfloat16": [[1024, 1024], [2048, 2048], [4096, 4096], [8192, 8192], [16384, 16384], [4096, 14336], [14336, 4096]],
    "float32": [[1024, 1024], [4096, 4096], [8192, 8192], [4096, 14336]],
}


def bench_suite(module: ModuleType, quick: bool = False) -> list[BenchCase]:
    def impls(params: Params) -> dict:
        def solution(inputs: Tensors):
            return lambda: module.transpose(inputs["x"])

        def torch_t(inputs: Tensors):
            return lambda: inputs["x"].t().contiguous()

        def copy(inputs: Tensors):
            dst = torch.empty_like(inputs["x"])
            return lambda: dst.copy_(inputs["x"])  # the same bytes, no transpose: the ceiling

        return {"solution": solution, "x.t().contiguous()": torch_t, "copy": copy}

    suite = []
    for dtype, shapes in BENCH_SHAPES.items():
        for shape in shapes[2:4] if quick else shapes:
            params = {"shape": shape, "dtype": dtype}
            suite.append(BenchCase("forward", params, make_inputs, impls(params), bytes_moved(params)))
    return suite
