"""The matmul tolerances accept honest float32 accumulation and reject float16 accumulation, lower-precision
inputs, a zero output, an input passed through and a dropped K remainder: on every graded shape.

Inputs come from the spec's generator at the graded K, with M and N capped at 48 so that the emulations
stay quick on a CPU; the errors that matter grow with K, not with M or N.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from autograder.checking import compare
from autograder.spec import DTYPES, generator
from autograder.specs.tiling import CPU_CASES, GPU_CASES, TOLERANCES, make_inputs, reference
from conftest import SEED

LOWER = {"float32": torch.bfloat16, "float16": torch.bfloat16, "bfloat16": torch.float8_e4m3fn}
CAP = 48


def _cases() -> list[dict]:
    cases = [{**p, "dtype": "float32"} for p in CPU_CASES]
    for d in ("float32", "float16", "bfloat16"):
        for p in GPU_CASES:
            m, k, n = p["shape"]
            cases.append({"shape": [min(m, CAP), k, min(n, CAP)], "dtype": d})
    return cases


def _round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """float32 rounded to 10 explicit mantissa bits (nearest, ties away), as the tensor cores' tf32 inputs."""
    bits = x.float().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def _chunked(a: torch.Tensor, b: torch.Tensor, chunk: int, add: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
             acc_dtype: torch.dtype) -> torch.Tensor:
    """Sum over K in chunks: each chunk's dot products exactly (float64), then added to the accumulator by `add`."""
    a64, b64 = a.double(), b.double()
    acc = torch.zeros((a.shape[0], b.shape[1]), dtype=acc_dtype)
    for k0 in range(0, a.shape[1], chunk):
        acc = add(acc, a64[:, k0:k0 + chunk] @ b64[k0:k0 + chunk, :])
    return acc


def _toward_zero_fp32(acc: torch.Tensor, partial: torch.Tensor) -> torch.Tensor:
    """acc + partial rounded to float32 toward zero, as the tensor cores' accumulator was measured to behave."""
    exact = acc.double() + partial
    rounded = exact.float()
    over = rounded.double().abs() > exact.abs()
    return torch.where(over, torch.nextafter(rounded, torch.zeros_like(rounded)), rounded)


def fp32_accumulation(a: torch.Tensor, b: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    return (a.float() @ b.float()).to(out)  # float32 products and sums, rounded once


def truncating_tensor_cores(a: torch.Tensor, b: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """16 products at a time, exactly, then into a float32 accumulator that truncates."""
    return _chunked(a, b, 16, _toward_zero_fp32, torch.float32).to(out)


def tf32x3(a: torch.Tensor, b: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """Triton's input_precision="tf32x3": hi*hi + hi*lo + lo*hi, each operand split into two tf32 numbers."""
    a_hi, b_hi = _round_to_tf32(a), _round_to_tf32(b)
    a_lo, b_lo = _round_to_tf32(a.float() - a_hi), _round_to_tf32(b.float() - b_hi)
    return (a_hi @ b_hi + (a_hi @ b_lo + a_lo @ b_hi)).to(out)


def tf32(a: torch.Tensor, b: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """Triton's default for float32 (input_precision="tf32"): inputs rounded to 10 mantissa bits."""
    return (_round_to_tf32(a) @ _round_to_tf32(b)).to(out)


def fp16_accumulation(a: torch.Tensor, b: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """An accumulator declared float16: rounded after every BLOCK_K = 32 step."""
    return _chunked(a, b, 32, lambda acc, p: (acc.double() + p).half(), torch.float16).to(out)


def lower_inputs(a: torch.Tensor, b: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    low = LOWER[str(out).replace("torch.", "")]
    return (a.to(low).float() @ b.to(low).float()).to(out)


def k_remainder_dropped(a: torch.Tensor, b: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    k = a.shape[1] // 16 * 16  # a loop over K // BLOCK_K full steps only
    return (a[:, :k].float() @ b[:k].float()).to(out)


def passthrough(a: torch.Tensor, b: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    c = torch.zeros((a.shape[0], b.shape[1]), dtype=out)
    w = min(a.shape[1], b.shape[1])
    c[:, :w] = a[:, :w]
    return c


HONEST = {
    "float32 accumulation": fp32_accumulation,
    "truncating float32 accumulation (tensor cores)": truncating_tensor_cores,
}
DISHONEST = {
    "float16 accumulation": fp16_accumulation,
    "next lower input precision": lower_inputs,
    "zero output": lambda a, b, out: torch.zeros((a.shape[0], b.shape[1]), dtype=out),
    "input passed through": passthrough,
    "K remainder dropped": k_remainder_dropped,
}


def _run(params: dict, fn: Callable) -> tuple[bool, float, str]:
    device = torch.device("cpu")
    inputs = make_inputs(params, generator(SEED, device), device)
    ref = reference(inputs, params)["c"]
    out = fn(inputs["a"], inputs["b"], DTYPES[params["dtype"]])
    verdict = compare("c", out, ref, TOLERANCES[params["dtype"]](params))
    return verdict.ok, verdict.max_error, verdict.message


def _id(p: dict) -> str:
    return f"{p['dtype']}-{'x'.join(map(str, p['shape']))}"


@pytest.mark.parametrize("name", list(HONEST))
@pytest.mark.parametrize("params", _cases(), ids=_id)
def test_honest_accumulation_passes_with_a_margin(name: str, params: dict) -> None:
    ok, worst, message = _run(params, HONEST[name])
    assert ok, message
    assert worst <= 0.75, f"max error {worst:.2f} of the tolerance: too close to the edge"


@pytest.mark.parametrize("params", [p for p in _cases() if p["dtype"] == "float32"], ids=_id)
def test_tf32x3_passes_and_plain_tf32_fails_for_float32(params: dict) -> None:
    ok, worst, message = _run(params, tf32x3)
    assert ok and worst <= 0.75, message or worst
    if params["shape"] == [1, 1, 1]:
        return  # one product: tf32 rounding can be exact by luck
    ok, _, _ = _run(params, tf32)
    assert not ok, "tf32 products passed the float32 tolerance"


@pytest.mark.parametrize("name", list(DISHONEST))
@pytest.mark.parametrize("params", _cases(), ids=_id)
def test_dishonest_results_fail(name: str, params: dict) -> None:
    k = params["shape"][1]
    if name == "float16 accumulation" and params["dtype"] != "float32" and k < 128:
        pytest.skip("with K below a few BLOCK_K steps, a float16 accumulator rounds no more than the output does")
    if name == "K remainder dropped" and k % 16 == 0:
        pytest.skip("no remainder to drop")
    if name in ("next lower input precision", "float16 accumulation") and params["shape"] == [1, 1, 1]:
        pytest.skip("a single product can happen to round to the same value in the lower precision")
    ok, worst, _ = _run(params, DISHONEST[name])
    assert not ok, f"passed with max error {worst:.2f} of the tolerance"
