"""The fusion tolerances accept honest kernels and reject a lower precision, a zero output, the input passed
through and, in float32, the exact (erf) GeLU in place of its tanh approximation.

Inputs come from the spec's own generators at the graded shapes (rows capped so the float64 work stays
small on a CPU), so what is shown here holds for the cases the grader runs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from autograder.checking import compare
from autograder.spec import DTYPES, generator
from autograder.specs.fusion import (
    CPU_GELU,
    CPU_SOFTMAX,
    GELU_TOLERANCES,
    GPU_GELU,
    GPU_SOFTMAX,
    SOFTMAX_TOLERANCES,
    make_gelu_inputs,
    make_softmax_inputs,
    reference_gelu,
    reference_softmax,
)
from conftest import SEED

LOWER = {"float32": torch.bfloat16, "float16": torch.bfloat16, "bfloat16": torch.float8_e4m3fn}


def _capped(shape: list[int], max_rows: int = 8) -> list[int]:
    rows = 1
    for s in shape[:-1]:
        rows *= s
    return [min(rows, max_rows), shape[-1]] if len(shape) > 1 else [min(shape[0], 1 << 16)]


def _cases(cpu: list[dict], gpu: list[dict]) -> list[dict]:
    cases = [{**p, "dtype": "float32"} for p in cpu]
    cases += [{**p, "shape": _capped(p["shape"]), "dtype": d} for d in ("float32", "float16", "bfloat16") for p in gpu]
    return cases


def _id(p: dict) -> str:
    extra = "".join(f"-{k}{p[k]}" for k in ("scale", "offset", "dist") if k in p)
    return f"{p['dtype']}-{'x'.join(map(str, p['shape']))}{extra}"


def _low(t: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """Round through the next lower precision than `out`."""
    return t.to(LOWER[str(out).replace("torch.", "")]).to(torch.float32)


def _gelu_lower(x: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    xl = _low(x.float(), out)
    u = _low(0.7978845608028654 * _low(xl + _low(0.044715 * _low(xl * xl * xl, out), out), out), out)
    return _low(0.5 * xl * _low(1.0 + _low(torch.tanh(u), out), out), out).to(out)


GELU_CANDIDATES: dict[str, tuple[Callable, bool]] = {
    "float32 math, one rounding": (lambda x, out: F.gelu(x.float(), approximate="tanh").to(out), True),
    "next lower precision": (_gelu_lower, False),
    "zero output": (lambda x, out: torch.zeros_like(x), False),
    "input passed through": (lambda x, out: x.clone(), False),
}


@pytest.mark.parametrize("name", list(GELU_CANDIDATES))
@pytest.mark.parametrize("params", _cases(CPU_GELU, GPU_GELU), ids=_id)
def test_gelu_tolerance(name: str, params: dict) -> None:
    fn, should_pass = GELU_CANDIDATES[name]
    if name == "next lower precision" and params["shape"] == [1]:
        pytest.skip("one element can round the same way in both precisions")
    device = torch.device("cpu")
    x = make_gelu_inputs(params, generator(SEED, device), device)["x"]
    ref = reference_gelu({"x": x}, params)["y"]
    verdict = compare("y", fn(x, DTYPES[params["dtype"]]), ref, GELU_TOLERANCES[params["dtype"]])
    assert verdict.ok == should_pass, verdict.message or f"passed with max error {verdict.max_error:.2f} of the tolerance"
    if should_pass:
        assert verdict.max_error <= 0.75  # honest kernels keep a margin, not a coin flip at the edge


@pytest.mark.parametrize("params", [p for p in _cases(CPU_GELU, GPU_GELU) if p["dtype"] == "float32"
                                    and p.get("scale", 1.0) >= 1.0 and p["shape"] != [1] and "dist" not in p],
                         ids=_id)  # fmt: skip  (the two forms agree at |x| near the dtype's largest value)
def test_float32_tolerance_tells_exact_gelu_from_tanh_gelu(params: dict) -> None:
    device = torch.device("cpu")
    x = make_gelu_inputs(params, generator(SEED, device), device)["x"]
    ref = reference_gelu({"x": x}, params)["y"]
    exact = F.gelu(x.double()).float()  # the erf form, computed exactly and rounded once
    verdict = compare("y", exact, ref, GELU_TOLERANCES["float32"])
    assert not verdict.ok
    assert verdict.max_error > 2  # not a near miss: at least twice the float32 tolerance


def test_exact_and_tanh_gelu_differ_by_up_to_5e_4_near_x_2_7() -> None:
    x = torch.linspace(-8, 8, 160001, dtype=torch.float64)
    diff = (F.gelu(x) - F.gelu(x, approximate="tanh")).abs()
    assert 4.6e-4 < diff.max().item() < 4.8e-4
    assert 2.6 < abs(x[diff.argmax()].item()) < 2.8


def _softmax_lower(x: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    xl = _low(x.float(), out)
    e = _low(torch.exp(_low(xl - xl.amax(-1, keepdim=True), out)), out)
    return _low(e / _low(e.sum(-1, keepdim=True), out), out).to(out)


SOFTMAX_CANDIDATES: dict[str, tuple[Callable, bool]] = {
    "float32 math, one rounding": (lambda x, out: torch.softmax(x.float(), -1).to(out), True),
    "next lower precision": (_softmax_lower, False),
    "zero output": (lambda x, out: torch.zeros_like(x), False),
    "input passed through": (lambda x, out: x.clone(), False),
}


@pytest.mark.parametrize("name", list(SOFTMAX_CANDIDATES))
@pytest.mark.parametrize("params", _cases(CPU_SOFTMAX, GPU_SOFTMAX), ids=_id)
def test_softmax_tolerance(name: str, params: dict) -> None:
    fn, should_pass = SOFTMAX_CANDIDATES[name]
    if name == "next lower precision" and params["shape"] == [1]:
        pytest.skip("the softmax of one element is 1 in any precision")
    device = torch.device("cpu")
    x = make_softmax_inputs(params, generator(SEED, device), device)["x"]
    ref = reference_softmax({"x": x}, params)["y"]
    verdict = compare("y", fn(x, DTYPES[params["dtype"]]), ref, SOFTMAX_TOLERANCES[params["dtype"]])
    assert verdict.ok == should_pass, verdict.message or f"passed with max error {verdict.max_error:.2f} of the tolerance"
    if should_pass:
        assert verdict.max_error <= 0.75


def test_float16_softmax_subnormal_rounding_of_a_vocabulary_row_passes_and_a_wrong_grid_does_not() -> None:
    # 128256 columns: outputs average 7.8e-6, many fall below float16's smallest normal (6.1e-5) and
    # round to a grid of 6e-8; an honest kernel is off by up to 3e-8 there, which rtol alone cannot cover:
    # the comparison allows one subnormal spacing of the output dtype (course/comparison.py), whatever atol says.
    params = {"shape": [4, 128256], "dtype": "float16"}
    device = torch.device("cpu")
    x = make_softmax_inputs(params, generator(SEED, device), device)["x"]
    ref = reference_softmax({"x": x}, params)["y"]
    honest = torch.softmax(x.float(), -1).half()
    from autograder.spec import Tolerance

    rtol_only = Tolerance(rtol=SOFTMAX_TOLERANCES["float16"].rtol, atol=1e-5)
    assert compare("y", honest, ref, rtol_only).ok
    assert compare("y", honest, ref, SOFTMAX_TOLERANCES["float16"]).ok
    spacing = torch.finfo(torch.float16).smallest_normal * torch.finfo(torch.float16).eps
    off_by_three = (honest.double() + 3 * spacing).half()  # three spacings above every subnormal answer
    assert not compare("y", off_by_three, ref, rtol_only).ok


def test_a_tanh_written_through_exp_passes_one_element_anywhere_in_the_negative_tail() -> None:
    """1 - 2 / (exp(2u) + 1) is an honest float32 tanh, but for negative x the GeLU's two terms cancel: near x = -4 its
    output (2e-5) is off by about 1e-7 absolute, 0.6% of itself. One element is then judged against the size of
    those terms, as inside any larger tensor, not against its own small value (2 gradings in 100 failed before)."""
    lost_to_the_old_scale = 0
    for value in torch.linspace(-9.0, -0.5, 341).tolist():
        x = torch.tensor([value], dtype=torch.float32)
        u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        honest = 0.5 * x * (1.0 + (1.0 - 2.0 / (torch.exp(2.0 * u) + 1.0)))  # float32 throughout
        ref = reference_gelu({"x": x}, {"shape": [1], "dtype": "float32"})["y"]
        verdict = compare("y", honest, ref, GELU_TOLERANCES["float32"])
        assert verdict.ok, (value, verdict.message)
        err = (honest.double() - ref).abs().item()
        lost_to_the_old_scale += err > 2e-5 * abs(ref.item())  # atol * mean|ref| + rtol * |ref| with one element
    assert lost_to_the_old_scale > 50
