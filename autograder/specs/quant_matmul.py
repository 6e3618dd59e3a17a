"""Grading spec for assignment 09, weight-only quantized matmul: w8a16_matmul and w4a16_matmul.

    w8a16_matmul(x, w_int8, scales):                 y = x @ (w_int8 * scales[:, None]).T
    w4a16_matmul(x, w_packed, scales, group_size):   y = x @ W.T, W[n, k] = (q[n, k] - 8) * scales[n, k // G]

w_packed is (N, K // 2) uint8 with q[n, 2j] in the low nibble of byte j and q[n, 2j + 1] in its high nibble.
A submission may define prepare(w_packed, scales, group_size): the worker calls it once per input set,
outside the graded call and the timed region, and passes what it returns in place of w_packed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from autograder.checking import attach_term_scale
from autograder.spec import DTYPES, Assignment, BenchCase, Case, Params, Part, SpeedCase, Tensors, Tolerance, WRITE_SLACK, read_fenced
from course.int4 import pack_int4, unpack_int4  # noqa: F401  (the format the inputs use; tests and notebooks reach it here too)

# --------------------------------------------------------------------------------------------------
# Inputs. Codes are uniform over their range, as after round-to-nearest quantization of smooth weights;
# scales vary by a factor of 7 across channels (W8A16) and groups (W4A16), so a scale taken from the
# wrong channel or group, a forgotten zero point or swapped nibbles each move most outputs by far more
# than the tolerance; the activations' scale is drawn per seed.
# --------------------------------------------------------------------------------------------------

PREPARED = "prepared."  # prefix of the tensors a submission's prepare() returned, among a call's inputs


def _uniform(g: torch.Generator, lo: float, hi: float) -> float:
    return lo + (hi - lo) * torch.rand((), generator=g, device=g.device).item()


def _activations(params: Params, g: torch.Generator, device: torch.device) -> torch.Tensor:
    scale = math.exp(_uniform(g, math.log(0.25), math.log(4.0)))
    return torch.randn(params["M"], params["K"], generator=g, device=device) * scale  # (M, K)


def _scales(shape: tuple[int, ...], g: torch.Generator, device: torch.device, unit: float) -> torch.Tensor:
    return (torch.rand(shape, generator=g, device=device) * 1.5 + 0.25) * unit


# The hostile distribution "extreme": every weight at an end of its code range (int8 -128 or 127; 4-bit
# codes 0 or 15, that is -8 or 7 after the zero point), where a sign extension, a nibble mask or a zero
# point that is off shows at full size; and scales spread over EXTREME_DECADES orders of magnitude each
# way between channels (W8A16) or groups (W4A16), so that a scale read from the wrong channel or group is
# wrong by up to 10^4 (10^2 in float16, whose scales must stay normal numbers).
EXTREME_DECADES = {"float32": 2.0, "bfloat16": 2.0, "float16": 1.0}


def _extreme_codes(shape: tuple[int, int], low: int, high: int, g: torch.Generator, device: torch.device) -> torch.Tensor:
    pick = torch.rand(shape, generator=g, device=device) < 0.5
    return torch.where(pick, torch.full(shape, low, device=device), torch.full(shape, high, device=device))


def _spread(scales: torch.Tensor, params: Params, g: torch.Generator) -> torch.Tensor:
    decades = EXTREME_DECADES[params["dtype"]]
    return scales * 10.0 ** (torch.rand(scales.shape, generator=g, device=scales.device) * 2 * decades - decades)


def make_w8_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    dtype, n, k = DTYPES[params["dtype"]], params["N"], params["K"]
    x = _activations(params, g, device)
    w = torch.randint(-127, 128, (n, k), generator=g, device=device, dtype=torch.int8)  # (N, K)
    scales = _scales((n,), g, device, 0.5 / 127)  # (N,): weights up to about 0.9 in magnitude
    if params.get("dist") == "extreme":
        w = _extreme_codes((n, k), -128, 127, g, device).to(torch.int8)
        scales = _spread(scales, params, g)
    return read_fenced({"x": x.to(dtype), "w_int8": w, "scales": scales.to(dtype)})


def make_w4_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    dtype, n, k, group = DTYPES[params["dtype"]], params["N"], params["K"], params["group_size"]
    x = _activations(params, g, device)
    q = torch.randint(0, 16, (n, k), generator=g, device=device, dtype=torch.uint8)  # (N, K)
    scales = _scales((n, k // group), g, device, 0.5 / 7)  # (N, K // G)
    if params.get("dist") == "extreme":
        q = _extreme_codes((n, k), 0, 15, g, device).to(torch.uint8)
        scales = _spread(scales, params, g)
    return read_fenced({"x": x.to(dtype), "w_packed": pack_int4(q), "scales": scales.to(dtype)})


# --------------------------------------------------------------------------------------------------
# References: weights dequantized in float64, in the grader's process.
# --------------------------------------------------------------------------------------------------


def dequantize_w8(inputs: Tensors, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return inputs["w_int8"].to(dtype) * inputs["scales"].to(dtype)[:, None]  # (N, K)


def dequantize_w4(inputs: Tensors, group_size: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    q = unpack_int4(inputs["w_packed"]).to(dtype)  # (N, K)
    return (q - 8) * inputs["scales"].to(dtype).repeat_interleave(group_size, dim=1)


def _product(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x @ w.T (M, N) in float64, marked with the size of its terms (autograder.checking.attach_term_scale):
    with scales that differ by orders of magnitude, each output is judged against its own terms."""
    x = x.double()
    return attach_term_scale(x @ w.T, (x * x @ (w * w).T).sqrt())


def reference_w8(inputs: Tensors, params: Params) -> Tensors:
    return {"y": _product(inputs["x"], dequantize_w8(inputs))}


def reference_w4(inputs: Tensors, params: Params) -> Tensors:
    return {"y": _product(inputs["x"], dequantize_w4(inputs, params["group_size"]))}


# --------------------------------------------------------------------------------------------------
# Calls on the submission (run in the worker process), and the optional offline step.
# --------------------------------------------------------------------------------------------------


def w4_state_allowance(inputs: Tensors) -> int:
    """The bytes of state a W4A16 submission may derive from the weights, which stay the same from call to call: what
    prepare() returns, and the nonzero memory a call carries from before it (Part.setup_allowance): the packed weights
    plus twice the scales, room for a re-arranged layout, not for dequantized weights."""
    return inputs["w_packed"].nbytes + 2 * inputs["scales"].nbytes


def setup_w4(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    """Run the submission's prepare(), if it has one, and keep what it returns for the graded call."""
    prepare = getattr(module, "prepare", None)
    if prepare is None:
        return {}
    prepared = prepare(inputs["w_packed"], inputs["scales"], params["group_size"])
    if prepared is None:
        return {}
    if not isinstance(prepared, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in prepared.items()):
        raise TypeError(
            "prepare() must return a dict of tensors (or None to use w_packed as it is); "
            f"it returned {type(prepared).__name__}."
        )
    allowed = w4_state_allowance(inputs)
    held = sum(v.nbytes for v in prepared.values())
    if held > allowed:
        raise ValueError(
            f"prepare() returned {held:,} bytes of tensors, more than w_packed plus twice the scales "
            f"({allowed:,} bytes): a prepared layout may re-arrange the 4-bit weights, not dequantize or widen them."
        )
    return {PREPARED + k: v for k, v in prepared.items()}


def _w4_weights(inputs: Tensors) -> torch.Tensor | dict[str, torch.Tensor]:
    prepared = {k[len(PREPARED):]: v for k, v in inputs.items() if k.startswith(PREPARED)}
    return prepared or inputs["w_packed"]


def call_w8(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"y": module.w8a16_matmul(inputs["x"], inputs["w_int8"], inputs["scales"])}


def call_w4(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"y": module.w4a16_matmul(inputs["x"], _w4_weights(inputs), inputs["scales"], params["group_size"])}


def speed_w8(module: ModuleType, inputs: Tensors, params: Params) -> Any:
    return module.w8a16_matmul(inputs["x"], inputs["w_int8"], inputs["scales"])


def speed_w4(module: ModuleType, inputs: Tensors, params: Params) -> Any:
    return module.w4a16_matmul(inputs["x"], _w4_weights(inputs), inputs["scales"], params["group_size"])


def _dense_weight(inputs: Tensors, params: Params) -> torch.Tensor:
    """The baseline's weight, dequantized once per input set in x's dtype. The grader makes it when it makes
    each timed call's inputs (SpeedCase.baseline_setup), so the dequantization never lands inside a timed call."""
    if "_dense" not in inputs:
        w = dequantize_w4(inputs, params["group_size"], torch.float32) if "w_packed" in inputs else dequantize_w8(inputs, torch.float32)
        inputs["_dense"] = w.to(inputs["x"].dtype).contiguous()  # (N, K)
    return inputs["_dense"]


def cublas_baseline(inputs: Tensors, params: Params) -> torch.Tensor:
    """What the layer costs without quantization: x @ W.T through cuBLAS, with W already in x's dtype."""
    return inputs["x"] @ _dense_weight(inputs, params).T


def w8_bytes(params: Params) -> int:
    """Read x, w (1 byte a weight) and the scales once, write y once."""
    m, k, n, s = params["M"], params["K"], params["N"], DTYPES[params["dtype"]].itemsize
    return n * k + n * s + (m * k + m * n) * s


def w4_bytes(params: Params) -> int:
    """Read x, w (half a byte a weight) and the scales once, write y once."""
    m, k, n, s = params["M"], params["K"], params["N"], DTYPES[params["dtype"]].itemsize
    return n * k // 2 + n * (k // params["group_size"]) * s + (m * k + m * n) * s


def matmul_flops(params: Params) -> int:
    return 2 * params["M"] * params["N"] * params["K"]


# --------------------------------------------------------------------------------------------------
# Tolerances, cases and rubric.
# --------------------------------------------------------------------------------------------------

# The reference multiplies the exact dequantized weights in float64; a kernel keeps the decoded weights
# and the products in float32 and rounds once, on the store. Three errors remain:
# - the store: up to u = 2^-11 (float16) or 2^-8 (bfloat16) relative; rtol is 4u, as for every course kernel.
# - the float32 sum itself. Added up in order, K terms drift by about u32 * sqrt(K / 2) * rms(y), with
#   u32 = 2^-24: 5e-6 of rms(y) at K = 14336, and 4 to 5 times that at the largest of a quarter million
#   outputs (measured on an H200: 1.2e-5 of mean|y|). float32's atol, 1e-4, covers it 8 times over.
# - honest kernels may round each scaled weight (q - 8) * s to x's dtype before a 16-bit tl.dot: an error
#   of up to u on each of the K terms, about u / sqrt(3) * rms(y) on each output and 3.6u * mean|y| at the
#   largest of a million. atol is 10u * mean|y| for float16 and bfloat16.
# Rounding the weights or the activations to the next lower precision (bfloat16 for float16 outputs,
# float8 for bfloat16, 16-bit floats or tf32 for float32) moves thousands of outputs past these bounds:
# tests/test_tolerances_quant_matmul.py shows both sides on the graded shapes.
TOLERANCES = {
    "float32": Tolerance(rtol=1e-5, atol=1e-4),
    "float16": Tolerance(rtol=2e-3, atol=5e-3),
    "bfloat16": Tolerance(rtol=1.6e-2, atol=4e-2),
}

# Small float32 shapes for the interpreter: N odd, K a multiple of neither 64 nor 128 (W8A16), several
# groups per row (W4A16), M from 1 to 5; one K long enough that the reference solution splits it. Then
# cases that reach every path of the reference's kernels: whole steps (K = 256) in the GEMV and the dot,
# a one-row product of K = 2049 whose split-K programs walk several steps each (the last holding one
# weight), the W4A16 GEMV whose steps lie inside one scale group of 256, several to a program, a two-row
# W4A16 GEMV split over K on three column tiles (a table may send the GEMV more than one row: its programs
# must count their splits per row and tile; the CPU tier's table sends it two), the W4A16 dot
# over whole steps inside one scale group (3 x 384, groups of 128), and 40 x 130 products, several tiles of
# the dot kernels each way. Two more reach what those do not: a one-row W8A16 product of K = 257 on 505
# channels (32 column tiles: no split) whose second step, which the first step's prefetch loads, holds one
# weight; and a W4A16 dot of 3 x 384 with groups of 128 on 200 channels (4 column tiles), whose K splits in
# two and whose first split adds up two whole steps, each scaled by its group after the dot. The W4A16 dot
# runs by nibble planes up to 32 rows and as one wide product above (the CPU tier's table, like the H200's).
# 40 x 256 with groups of 128 is the wide product's whole steps inside one group; 3 x 256 x 520 with groups of 64
# has enough column tiles (9) that K is not split, so each program adds up two steps scaled per word.
CPU_W8 = [
    {"M": 1, "K": 100, "N": 37},
    {"M": 3, "K": 64, "N": 5},
    {"M": 5, "K": 257, "N": 19},
    {"M": 1, "K": 1000, "N": 61},
    {"M": 4, "K": 130, "N": 33},
    {"M": 1, "K": 256, "N": 20, "dist": "extreme"},
    {"M": 1, "K": 2049, "N": 96},
    {"M": 3, "K": 256, "N": 20, "dist": "extreme"},
    {"M": 40, "K": 200, "N": 130, "dist": "extreme"},
    {"M": 1, "K": 257, "N": 505},
]
CPU_W4 = [
    {"M": 1, "K": 64, "N": 37, "group_size": 32},
    {"M": 3, "K": 96, "N": 5, "group_size": 32},
    {"M": 5, "K": 192, "N": 19, "group_size": 64},
    {"M": 1, "K": 512, "N": 33, "group_size": 32},
    {"M": 2, "K": 384, "N": 17, "group_size": 128},
    {"M": 3, "K": 384, "N": 17, "group_size": 128},
    {"M": 4, "K": 160, "N": 9, "group_size": 16},
    {"M": 1, "K": 2048, "N": 130, "group_size": 256, "dist": "extreme"},
    {"M": 2, "K": 1024, "N": 70, "group_size": 32},
    {"M": 40, "K": 192, "N": 130, "group_size": 64},
    {"M": 3, "K": 384, "N": 200, "group_size": 128},
    {"M": 40, "K": 256, "N": 33, "group_size": 128},
    {"M": 3, "K": 256, "N": 520, "group_size": 64},
]
# LLM shapes (Llama-3-8B's projections: 4096 -> 4096, 4096 -> 14336, 14336 -> 4096) at decode (M = 1) and
# small-batch sizes, and odd ones: N not a multiple of any block, K not a power of two.
GPU_W8 = [
    {"M": 1, "K": 4096, "N": 14336},
    {"M": 16, "K": 4096, "N": 4096},
    {"M": 64, "K": 14336, "N": 4096},
    {"M": 256, "K": 4096, "N": 1000},
    {"M": 7, "K": 1001, "N": 999},
    {"M": 5, "K": 4096, "N": 1000, "dist": "extreme"},
]
GPU_W4 = [
    {"M": 1, "K": 4096, "N": 14336, "group_size": 128},
    {"M": 16, "K": 4096, "N": 14336, "group_size": 128},
    {"M": 64, "K": 14336, "N": 4096, "group_size": 128},
    {"M": 256, "K": 4096, "N": 4096, "group_size": 128},
    {"M": 3, "K": 4096, "N": 1000, "group_size": 64},
    {"M": 100, "K": 1024, "N": 999, "group_size": 32},
    {"M": 1, "K": 4096, "N": 2000, "group_size": 256, "dist": "extreme"},
    {"M": 32, "K": 4096, "N": 1000, "group_size": 128, "dist": "extreme"},
    {"M": 2, "K": 4096, "N": 1000, "group_size": 128},  # two rows through the GEMV (H100/H200 settings)
]


def _cases(cpu: list[Params], gpu: list[Params]) -> list[Case]:
    cases = [Case({**p, "dtype": "float32"}, "cpu") for p in cpu]
    cases += [Case({**p, "dtype": d}, "gpu") for d in ("float32", "float16", "bfloat16") for p in gpu]
    return cases


def _speed(task: str, params: Params, target: float, zero_at: float = 1.0) -> SpeedCase:
    w4 = task.endswith("w4a16")
    return SpeedCase(
        task, {**params, "dtype": "float16"}, 6, target, w4_bytes if w4 else w8_bytes, matmul_flops,
        call=speed_w4 if w4 else speed_w8, baseline=cublas_baseline, baseline_name="cuBLAS fp16",
        baseline_setup=lambda inputs, params: {"_dense": _dense_weight(inputs, params)}, zero_at=zero_at,
    )  # fmt: skip


# A weight-only quantized matmul dequantizes each weight in registers, next to its product: what its kernels store is
# the output, and with split-K a float32 partial sum of the output for each split (of at least QUANT_SPLIT_MIN of K,
# the smallest K of tl.dot: red team 23's splits that fill the SMs were that narrow). Dequantizing the weights into
# memory, whole or a chunk at a time, stores N x K values (a conversion by PyTorch, `.to(torch.float32)`, counts too):
# past this budget at every case but the largest M of the CPU tier (40 rows, where a float32 copy fits in the room),
# and one case past the budget fails the part. Besides: a fixed split count up to QUANT_SPLITS_ANY whatever K (a
# decode's SPLIT_K = 16, its empty splits storing zeros), two more float32 copies of the output (an accumulator zeroed
# by a kernel or torch.zeros, an epilogue that scales and casts) and one copy of the activations (red team 24). Copies
# by PyTorch count here (Part.write_budget_counts_moves): a zeroed buffer four bytes a weight with the int8 weights
# copied into one byte of each word is the weights widened, no conversion needed, and its copies alone (one byte a
# weight) are past the budget at one row. Fills by a number do not count anywhere (a split-K's partials zeroed by
# torch.zeros, as vLLM's AWQ kernel does: red team 25).
QUANT_SPLIT_MIN = 16
QUANT_SPLITS_ANY = 16


def quant_write_budget(inputs: Tensors, params: Params) -> int:
    m, k, n = params["M"], params["K"], params["N"]
    x = inputs["x"]  # (M, K)
    splits = max(-(-k // QUANT_SPLIT_MIN), QUANT_SPLITS_ANY)
    return m * n * x.element_size() + 4 * m * n * (splits + 2) + x.numel() * 4 + WRITE_SLACK


QUANT_WRITES = (
    "a weight-only quantized matmul dequantizes each weight in registers, where it meets its product, and stores "
    f"the output (and with split-K a float32 partial sum for each split of at least {QUANT_SPLIT_MIN} of K, or of up to "
    f"{QUANT_SPLITS_ANY} splits of any length, an accumulator zeroed, an epilogue and a copy of x). Writing the weights "
    "widened to memory (by a kernel, a PyTorch conversion, or copies into a wider buffer), whole or a chunk "
    "at a time, and multiplying "
    "after is the dequantize-then-matmul this assignment replaces: load the packed weights in the matmul's K loop and "
    "dequantize them there"
)


W8, W4 = "quant_matmul.w8a16", "quant_matmul.w4a16"
ASSIGNMENT = Assignment(
    slug="quant_matmul",
    title="09 Weight-only quantized matmul",
    api={
        "w8a16_matmul": "w8a16_matmul(x, w_int8, scales)",
        "w4a16_matmul": "w4a16_matmul(x, w_packed, scales, group_size=128)",
    },
    parts=[
        Part(W8, "W8A16: int8 weights, per-channel scales", 30, make_w8_inputs, call_w8, reference_w8,
             _cases(CPU_W8, GPU_W8), TOLERANCES, write_budget=quant_write_budget, write_budget_says=QUANT_WRITES,
             write_budget_counts_moves=True),
        Part(W4, "W4A16: packed 4-bit weights, group-wise scales", 40, make_w4_inputs, call_w4, reference_w4,
             _cases(CPU_W4, GPU_W4), TOLERANCES, setup=setup_w4, setup_reads=("w_packed", "scales"),
             setup_allowance=w4_state_allowance, write_budget=quant_write_budget, write_budget_says=QUANT_WRITES,
             write_budget_counts_moves=True),
    ],  # fmt: skip
    speed=[
        # Full points sit 12-23% below the reference solution's speed-up in five gradings on an H200, and
        # 17-63% below on an H100 (results/<gpu>/stability.md), so that the reference earns them every time. The course's goals for a
        # Marlin-class kernel (3x, 2x, 2.5x, 1.0x and 1.8x cuBLAS) are beyond it: see the handout.
        _speed(W4, {"M": 1, "K": 4096, "N": 14336, "group_size": 128}, 1.6),
        _speed(W4, {"M": 1, "K": 4096, "N": 4096, "group_size": 128}, 1.45),
        _speed(W4, {"M": 16, "K": 4096, "N": 14336, "group_size": 128}, 1.0, zero_at=0.5),
        # At 64 rows cuBLAS is starting to compute rather than wait on memory.
        _speed(W4, {"M": 64, "K": 4096, "N": 14336, "group_size": 128}, 0.75, zero_at=0.4),
        _speed(W8, {"M": 1, "K": 4096, "N": 14336}, 1.35),
    ],
)


# --------------------------------------------------------------------------------------------------
# Benchmarks (python -m autograder bench quant_matmul): time against M for the solution, cuBLAS on
# dense float16 weights, and PyTorch's int4 kernel (tinygemm, bfloat16 only).
# --------------------------------------------------------------------------------------------------

BENCH_M = [1, 2, 4, 8, 16, 32, 64, 128, 256]
# (K, N) -> the M to time: the full sweep on Llama-3-8B's up-projection, the speed cases' M on the others
BENCH_W4 = {(4096, 14336): BENCH_M, (4096, 4096): [1, 16, 64], (14336, 4096): [1, 16]}
BENCH_W8 = {(4096, 14336): [1, 16, 64]}
BENCH_GROUP = 128


def tinygemm_weights(inputs: Tensors, group_size: int, inner_k_tiles: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Our W4A16 weights in the layout of torch.ops.aten._weight_int4pack_mm (CUDA, bfloat16 activations).

    Its packer wants (N, K // 2) uint8 with the even k in the HIGH nibble (ours has it in the low one), and
    scales and zeros as (K // G, N, 2) bfloat16 with w = (q - 8) * scale + zero: our format has zero = 0.
    """
    w = inputs["w_packed"]
    swapped = ((w << 4) | (w >> 4)).contiguous()
    packed = torch.ops.aten._convert_weight_to_int4pack(swapped, inner_k_tiles)
    scales = inputs["scales"].to(torch.bfloat16).t()  # (K // G, N)
    scale_and_zero = torch.stack((scales, torch.zeros_like(scales)), dim=-1).contiguous()  # (K // G, N, 2)
    return packed, scale_and_zero


def bench_suite(module: ModuleType, quick: bool = False) -> list:
    ms = [1, 16, 64] if quick else BENCH_M

    def solution_w4(inputs: Tensors) -> Callable[[], object]:
        weights: Any = inputs["w_packed"]
        if hasattr(module, "prepare"):
            weights = module.prepare(inputs["w_packed"], inputs["scales"], BENCH_GROUP)
        return lambda: module.w4a16_matmul(inputs["x"], weights, inputs["scales"], BENCH_GROUP)

    def solution_w8(inputs: Tensors) -> Callable[[], object]:
        return lambda: module.w8a16_matmul(inputs["x"], inputs["w_int8"], inputs["scales"])

    def cublas(params: Params) -> Callable[[Tensors], Callable[[], object]]:
        def bind(inputs: Tensors) -> Callable[[], object]:
            w = _dense_weight(inputs, params)
            return lambda: inputs["x"] @ w.T

        return bind

    def torch_int4(inputs: Tensors) -> Callable[[], object]:
        packed, scale_and_zero = tinygemm_weights(inputs, BENCH_GROUP)
        x = inputs["x"].to(torch.bfloat16)
        return lambda: torch.ops.aten._weight_int4pack_mm(x, packed, BENCH_GROUP, scale_and_zero)

    suite = []
    for (k, n), w4_ms in BENCH_W4.items():
        for m in [m for m in w4_ms if m in ms]:
            params = {"M": m, "K": k, "N": n, "group_size": BENCH_GROUP, "dtype": "float16", "shape": [m, k, n]}
            impls = {"solution": solution_w4, "cuBLAS fp16": cublas(params), "torch int4 (bf16)": torch_int4}
            suite.append(BenchCase("w4a16", params, make_w4_inputs, impls, w4_bytes(params), matmul_flops(params)))
    for (k, n), w8_ms in BENCH_W8.items():
        for m in [m for m in w8_ms if m in ms]:
            params = {"M": m, "K": k, "N": n, "dtype": "float16", "shape": [m, k, n]}
            impls = {"solution": solution_w8, "cuBLAS fp16": cublas(params)}
            suite.append(BenchCase("w8a16", params, make_w8_inputs, impls, w8_bytes(params), matmul_flops(params)))
    return suite
