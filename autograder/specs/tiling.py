"""Grading spec for assignment 04, tiling: matmul(a, b), a tiled matrix multiplication, and (bonus) matmul_tma(a, b),
the same product from a persistent kernel whose tiles move through tensor descriptors."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from autograder.checking import attach_term_scale
from autograder.spec import (DTYPES, Assignment, BenchCase, Case, Params, Part, SpeedCase, Tensors, Tolerance, bonus_function,
                             read_fenced)

# Shapes are written [M, K, N]: a is (M, K), b is (K, N), the result (M, N).

# --------------------------------------------------------------------------------------------------
# Inputs: zero-mean normal entries with a random scale per seed, so that a zero output, an input
# passed through or a constant cannot land inside the tolerance, and |c| grows like sqrt(K).
#
# The hostile distribution "cancel": large products that cancel, in rows of very different sizes.
# The first half of K holds pairs a1 b1, the second half (a1 + d) (-b1) with d 1% of a1, so every c is
# the small difference of two large sums (Kahan's classic trap: a kernel that loses bits anywhere, in a
# float16 accumulator, in tf32 products, in a reordering through a low precision, loses them against
# terms hundreds of times larger than c). Each row of a is scaled by its own power of ten (10^-3 to 10^3;
# 10^-2 to 10^2 in float16, whose range is small), so rows near zero sit beside rows a million times
# larger. K odd leaves one unpaired column: a remainder no block divides.
# --------------------------------------------------------------------------------------------------

CANCEL_MAGNITUDE = {"float32": 1e3, "bfloat16": 1e3, "float16": 8.0}  # |a1| and |b1|: products up to ~1e6 (~64)
CANCEL_ROW_DECADES = {"float32": 3.0, "bfloat16": 3.0, "float16": 2.0}


def _cancelling(m: int, k: int, n: int, dtype_name: str, g: torch.Generator, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    half, big = k // 2, CANCEL_MAGNITUDE[dtype_name]
    a1 = torch.randn((m, half), generator=g, device=device) * big
    b1 = torch.randn((half, n), generator=g, device=device) * big
    d = torch.randn((m, half), generator=g, device=device) * 1e-2
    a_rest = torch.randn((m, k - 2 * half), generator=g, device=device) * big
    b_rest = torch.randn((k - 2 * half, n), generator=g, device=device) * big
    decades = CANCEL_ROW_DECADES[dtype_name]
    rows = 10.0 ** (torch.rand((m, 1), generator=g, device=device) * 2 * decades - decades)  # (M, 1)
    a = torch.cat((a1, a1 * (1 + d), a_rest), dim=1) * rows  # (M, K)
    b = torch.cat((b1, -b1, b_rest), dim=0)  # (K, N)
    return a, b


def make_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    m, k, n = params["shape"]
    dtype = DTYPES[params["dtype"]]
    if params.get("dist") == "cancel":
        a, b = _cancelling(m, k, n, params["dtype"], g, device)
        return read_fenced({"a": a.to(dtype), "b": b.to(dtype)})
    scale = math.exp(math.log(0.5) + math.log(4.0) * torch.rand((), generator=g, device=g.device).item())
    a = torch.randn((m, k), generator=g, device=device) * scale  # (M, K)
    b = torch.randn((k, n), generator=g, device=device) / math.sqrt(scale)  # (K, N)
    return read_fenced({"a": a.to(dtype), "b": b.to(dtype)})


def reference(inputs: Tensors, params: Params) -> Tensors:
    """c (M, N) = float64 products of the rounded inputs, marked with the size of its terms: an element is
    judged against sqrt(2/pi) * sqrt(sum_k a_ik^2 b_kj^2), which is E|c| for random inputs (so the
    tolerances below, measured as fractions of mean|c|, hold) and stays large where the terms cancel."""
    a, b = inputs["a"].double(), inputs["b"].double()
    return {"c": attach_term_scale(a @ b, (a * a @ (b * b)).sqrt())}


def cublas(inputs: Tensors, params: Params) -> torch.Tensor:
    return torch.matmul(inputs["a"], inputs["b"])


def call(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"c": module.matmul(inputs["a"], inputs["b"])}


def speed_call(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return module.matmul(inputs["a"], inputs["b"])


# Not in the assignment's `api`: a kernels.py written before this bonus existed keeps its matmul graded (bonus_function).
TMA_SIGNATURE = "matmul_tma(a, b)"


def call_tma(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"c": bonus_function(module, "tiling", "matmul_tma", TMA_SIGNATURE)(inputs["a"], inputs["b"])}


def speed_tma(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return call_tma(module, inputs, params)["c"]


# The grader's own launch of the bonus's kernel (Part.kernel_probe), in the replayer on the case's inputs: the given
# launcher's conventions (rows padded to 16 bytes for the descriptors, c stored in (BLOCK_M, BLOCK_N // 2) halves), a
# non-square tile of the grader's (block_m, block_n, block_k, num_stages, num_warps) and programs that take two tiles
# each, so that a kernel that is right only for the launcher's own tile or grid fails too, and one launched on a decoy
# beside another kernel's answer is graded on what it computes itself.
# The GPU tiles keep under 48 KB of shared memory (two stages and half a tile of c), which every GPU gives a block.
PROBE_TILES = {"cpu": (16, 32, 16, 3, 4), "16-bit": (64, 128, 32, 2, 4), "float32": (32, 64, 32, 2, 4)}


def probe_tma(kernels: Callable[[str], Any], inputs: Tensors, params: Params, device: torch.device) -> Tensors:
    from triton.tools.tensor_descriptor import TensorDescriptor

    a, b = inputs["a"], inputs["b"]  # (M, K), (K, N)
    m, k = a.shape
    n = b.shape[1]
    key = "cpu" if device.type == "cpu" else "float32" if a.dtype == torch.float32 else "16-bit"
    bm, bn, bk, stages, warps = PROBE_TILES[key]
    multiple = 16 // a.element_size()  # elements in 16 bytes
    kp, np_ = -(-k // multiple) * multiple, -(-n // multiple) * multiple
    a_p = torch.zeros((m, kp), dtype=a.dtype, device=device)  # (M, Kp): zeros past K add nothing
    a_p[:, :k] = a
    b_p = torch.zeros((kp, np_), dtype=b.dtype, device=device)  # (Kp, Np)
    b_p[:k, :n] = b
    c_p = torch.empty((m, np_), dtype=a.dtype, device=device)  # (M, Np)
    tiles = -(-m // bm) * -(-np_ // bn)
    kernels("_matmul_tma_kernel")[(-(-tiles // 2),)](
        TensorDescriptor.from_tensor(a_p, [bm, bk]), TensorDescriptor.from_tensor(b_p, [bk, bn]),
        TensorDescriptor.from_tensor(c_p, [bm, bn // 2]), m, np_, kp,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=2, num_stages=stages, num_warps=warps,
    )  # fmt: skip
    return {"c": c_p[:, :n].contiguous()}


def bytes_moved(params: Params) -> int:
    """Read a and b once, write c once."""
    m, k, n = params["shape"]
    return (m * k + k * n + m * n) * DTYPES[params["dtype"]].itemsize


def flops(params: Params) -> int:
    m, k, n = params["shape"]
    return 2 * m * n * k


# --------------------------------------------------------------------------------------------------
# Tolerances, per dtype and scaled with K.
#
# An element passes when |c - ref| <= atol * T + rtol * |ref| (autograder.checking.compare), with T the
# size of the element's terms (see `reference`): T is mean|ref| on random inputs, where the numbers below
# were measured, and keeps an honest float32 sum of cancelling terms inside the tolerance. An honest
# kernel makes three kinds of error:
#   - rounding c once to the output dtype: at most u |ref| (u = 2^-11 for float16, 2^-8 for bfloat16,
#     2^-24 for float32): rtol = 2u leaves a 2x margin;
#   - summing K products in float32: relative to mean|ref| this grows with K. Rounding to nearest would
#     give about 2^-24 sqrt(K), but the tensor cores' float32 accumulation is biased (it truncates), and on
#     an H200 the largest accumulator error grew in proportion to K: 0.16 * 2^-24 * K at K = 4096 and 14336
#     (results/h200/tune_tiling.json). atol = 2^-24 * K leaves a 6x margin;
#   - float32 inputs only: the three tf32 products per step (tf32x3) miss the lo*lo term, about 2^-22 of
#     each product, a K-independent error near 1e-6 of mean|ref|; measured at most 7e-6 with K = 14336.
#     cuBLAS in float32 (ordinary float32 arithmetic, no tensor cores) measured 4e-5 there. float32's
#     atol = 4e-6 + 0.25 * 2^-24 * K accepts both with a 5x margin.
# What they reject (tests/test_tolerances_tiling.py shows each on the graded shapes):
#   - accumulating in float16 (or bfloat16): each partial sum rounded to 11 (8) bits, an error near
#     u sqrt(K / BLOCK_K) of mean|ref|, far past 2^-24 K once K is a few times BLOCK_K;
#   - the next lower input precision: tf32 products for float32 (error ~2e-3 of mean|ref|, measured with
#     cuBLAS), bfloat16 inputs for float16, float8 inputs for bfloat16;
#   - a zero output, an input passed through, a K remainder dropped.
# --------------------------------------------------------------------------------------------------

U32 = 2.0**-24


def _scaled(rtol: float, atol0: float, per_k: float) -> Callable[[Params], Tolerance]:
    def tolerance(params: Params) -> Tolerance:
        k = params["shape"][1]
        return Tolerance(rtol=rtol, atol=atol0 + per_k * U32 * k)

    tolerance.__doc__ = f"rtol {rtol:.3g}, atol {atol0:g} + {per_k:g} * 2^-24 * K"
    return tolerance


TOLERANCES: dict[str, Callable[[Params], Tolerance]] = {
    "float32": _scaled(rtol=2.0**-22, atol0=4e-6, per_k=0.25),
    "float16": _scaled(rtol=2.0**-10, atol0=0.0, per_k=1.0),
    "bfloat16": _scaled(rtol=2.0**-7, atol0=0.0, per_k=1.0),
}

# Small float32 shapes for the interpreter (whose tiles are 32 x 32 x 16): K not a multiple of 16 in
# most (17, 129, 300, 1000), a single element, a single row and a single column, one shape of exact
# multiples, long K with few tiles.
CPU_CASES = [
    {"shape": [33, 17, 45]},
    {"shape": [1, 1, 1]},
    {"shape": [1, 300, 7]},
    {"shape": [64, 64, 64]},
    {"shape": [100, 129, 70]},
    {"shape": [45, 1000, 33]},
    {"shape": [129, 33, 1]},
    {"shape": [70, 200, 130]},
    {"shape": [37, 333, 29], "dist": "cancel"},
    {"shape": [90, 77, 70]},  # 3 x 3 tiles on the interpreter's 4 "SMs": one tile row, then 58 rows of tail tiles
]
# The TMA bonus on the interpreter (4 "SMs", so that programs take several tiles each): rows whose bytes are not a
# multiple of 16 in a, in b, in c and in none of them (each operand padded or not), one tile, many tiles per
# program, and the cancelling case.
TMA_CPU_CASES = [
    {"shape": [33, 17, 45]},
    {"shape": [1, 1, 1]},
    {"shape": [96, 64, 160]},  # 15 tiles on 4 programs, every row aligned: no copies
    {"shape": [50, 64, 45]},  # b and c padded, a as it is
    {"shape": [40, 30, 64]},  # a and b padded along K, c as it is
    {"shape": [100, 129, 70]},
    {"shape": [37, 333, 29], "dist": "cancel"},
]
# GPU shapes: Llama-sized layers (4096 hidden, 14336 MLP, 2048 tokens), one-token decode, the 1793 cube
# (rows not 16-byte aligned), small shapes that are multiples of nothing, and one whose last wave of 128 x 256
# tiles is under a quarter full on 132 SMs (162 tiles: the tail launch, after padding K).
GPU_CASES = [
    {"shape": [4096, 4096, 4096]},
    {"shape": [2048, 4096, 14336]},
    {"shape": [2048, 14336, 4096]},
    {"shape": [1, 4096, 4096]},
    {"shape": [1793, 1793, 1793]},
    {"shape": [1000, 333, 777]},
    {"shape": [127, 8192, 129]},
    {"shape": [3, 5, 7]},
    {"shape": [257, 1999, 131], "dist": "cancel"},
    {"shape": [2304, 999, 2304]},
]


def _cases(cpu: list[Params], gpu: list[Params]) -> list[Case]:
    cases = [Case({**p, "dtype": "float32"}, "cpu") for p in cpu]
    cases += [Case({**p, "dtype": d}, "gpu") for d in ("float32", "float16", "bfloat16") for p in gpu]
    return cases


# Speed: against cuBLAS (torch.matmul) in the same run, which a Triton kernel reaches only in part:
# partial points from 0.5x. On an H200 the solution ran 0.92x cuBLAS at 4096^3 (full points from 0.85x)
# and 2.5x at 1793^3, where cuBLAS falls to 102 TFLOP/s (full points from 1.5x).
# The TMA bonus's speed, at 4096^3, timed only where there is a TMA (sm_90 on): five gradings on an H100 and five on
# an H200 (results/<gpu>/stability_tiling_2026-12-06.md) put the solution at 1.00-1.01x cuBLAS, where the pointer
# kernel of the main task ran 0.91-0.92x. Full points at 0.93x: an 8% margin, above the pointer kernel.
SPEED = [
    SpeedCase("tiling.matmul", {"shape": [4096, 4096, 4096], "dtype": d}, 5, 0.85, bytes_moved, flops=flops,
              baseline_name="cuBLAS", zero_at=0.5)
    for d in ("float16", "bfloat16")
] + [
    SpeedCase("tiling.matmul", {"shape": [1793, 1793, 1793], "dtype": d}, 5, 1.5, bytes_moved, flops=flops,
              baseline_name="cuBLAS", zero_at=0.5)
    for d in ("float16", "bfloat16")
] + [
    SpeedCase("tiling.tma", {"shape": [4096, 4096, 4096], "dtype": d}, 5, 0.93, bytes_moved, flops=flops,
              call=speed_tma, baseline_name="cuBLAS", zero_at=0.5, bonus=True, needs_tma=True)
    for d in ("float16", "bfloat16")
]  # fmt: skip

ASSIGNMENT = Assignment(
    slug="tiling",
    title="04 Tiling: matmul",
    api={"matmul": "matmul(a, b)"},  # and, for the TMA bonus only, TMA_SIGNATURE
    parts=[
        Part(
            task="tiling.matmul",
            title="tiled matmul kernel",
            points=60,
            make_inputs=make_inputs,
            call=call,
            reference=reference,
            cases=_cases(CPU_CASES, GPU_CASES),
            tolerances=TOLERANCES,
        ),
        Part(
            task="tiling.tma",
            title="persistent matmul through tensor descriptors (TMA)",
            points=10,
            bonus=True,
            make_inputs=make_inputs,
            call=call_tma,
            reference=reference,
            cases=_cases(TMA_CPU_CASES, GPU_CASES),
            tolerances=TOLERANCES,
            launches_with_descriptors="_matmul_tma_kernel",
            kernel_probe=probe_tma,
        ),
    ],
    speed=SPEED,
    baseline=cublas,
    speed_call=speed_call,
)


# --------------------------------------------------------------------------------------------------
# Benchmarks (python -m autograder bench tiling): the solution against cuBLAS across sizes.
# --------------------------------------------------------------------------------------------------

BENCH_SIZES = [256, 512, 1024, 1536, 1792, 1793, 2048, 3072, 4096, 6144, 8192]
BENCH_LLM = [[4096, 4096, 14336], [4096, 14336, 4096]]  # a Llama-3-8B MLP's up and down projections, 4096 tokens


def bench_suite(module: ModuleType, quick: bool = False) -> list[BenchCase]:
    def impls() -> dict:
        found = {
            "solution": lambda inputs: (lambda: module.matmul(inputs["a"], inputs["b"])),
            "cuBLAS": lambda inputs: (lambda: torch.matmul(inputs["a"], inputs["b"])),
        }
        if callable(getattr(module, "matmul_tma", None)):  # the bonus, where the kernels.py has it
            found["solution, TMA"] = lambda inputs: (lambda: module.matmul_tma(inputs["a"], inputs["b"]))
        return found

    shapes = [[s, s, s] for s in ([1792, 1793, 4096] if quick else BENCH_SIZES)] + ([] if quick else BENCH_LLM)
    suite = []
    for dtype in ("float16", "bfloat16"):
        for shape in shapes:
            params = {"shape": shape, "dtype": dtype}
            suite.append(BenchCase("forward", params, make_inputs, impls(), bytes_moved(params), flops(params)))
    return suite
