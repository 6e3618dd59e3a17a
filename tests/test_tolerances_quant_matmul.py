"""Each quant_matmul tolerance accepts honest kernels and rejects a lower precision, a zero output, the
input passed through and the scales forgotten.

Inputs come from the spec's own generators at the graded shapes (M and N capped so the float64 work stays
small on a CPU; K, which sets how rounding errors add up, is kept), so what is shown here holds for the
cases the grader runs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from autograder.checking import compare
from autograder.spec import DTYPES, generator
from autograder.specs import quant_matmul as spec
from conftest import SEED

# The next lower precision for each graded dtype: float16 rounding stands in for tf32 (both keep 10
# mantissa bits) for float32 outputs.
LOWER = {"float32": torch.float16, "float16": torch.bfloat16, "bfloat16": torch.float8_e4m3fn}


def _cases() -> list[dict]:
    out = []
    for task, cpu, gpu in ((spec.W8, spec.CPU_W8, spec.GPU_W8), (spec.W4, spec.CPU_W4, spec.GPU_W4)):
        out += [{**p, "task": task, "dtype": "float32"} for p in cpu]
        out += [{**p, "M": min(p["M"], 8), "N": min(p["N"], 256), "task": task, "dtype": d}
                for d in ("float32", "float16", "bfloat16") for p in gpu]
    return out


def _weights(inputs: dict, params: dict) -> torch.Tensor:
    """The dequantized weights in float32 (exact: a code times a 16-bit scale), made once per case."""
    if "_w32" not in inputs:
        w = spec.dequantize_w4(inputs, params["group_size"], torch.float32) if params["task"] == spec.W4 \
            else spec.dequantize_w8(inputs, torch.float32)
        inputs["_w32"] = w
    return inputs["_w32"]


def _fp32_kernel(inputs: dict, params: dict, out: torch.dtype) -> torch.Tensor:
    """Decoded weights and products in float32, one rounding on the store."""
    return (inputs["x"].float() @ _weights(inputs, params).T).to(out)


def _summed_in_order(inputs: dict, params: dict, out: torch.dtype) -> torch.Tensor:
    """Honest: float32 products added one k at a time into a float32 accumulator, as a GPU kernel's
    K loop does (the reference's float64 and PyTorch's blocked CPU matmul both err far less)."""
    x, w = inputs["x"].float(), _weights(inputs, params)
    acc = torch.zeros(params["M"], params["N"])
    for k in range(params["K"]):
        acc = acc + x[:, k : k + 1] * w[:, k][None, :]
    return acc.to(out)


def _weights_rounded(inputs: dict, params: dict, out: torch.dtype) -> torch.Tensor:
    """Honest for 16-bit outputs: each scaled weight rounded to x's dtype before a 16-bit tl.dot."""
    w = _weights(inputs, params).to(out).float()
    return (inputs["x"].float() @ w.T).to(out)


def _lower_precision(inputs: dict, params: dict, out: torch.dtype) -> torch.Tensor:
    low = LOWER[params["dtype"]]
    w = _weights(inputs, params).to(low).float()
    x = inputs["x"].float().to(low).float()
    return (x @ w.T).to(out)


def _passthrough(inputs: dict, params: dict, out: torch.dtype) -> torch.Tensor:
    """x cropped or zero-padded to (M, N)."""
    x = inputs["x"]
    y = torch.zeros(params["M"], params["N"], dtype=out)
    n = min(params["N"], params["K"])
    y[:, :n] = x[:, :n]
    return y


def _scales_forgotten(inputs: dict, params: dict, out: torch.dtype) -> torch.Tensor:
    if params["task"] == spec.W4:
        q = spec.unpack_int4(inputs["w_packed"]).float() - 8
    else:
        q = inputs["w_int8"].float()
    return (inputs["x"].float() @ q.T).to(out)


CANDIDATES: dict[str, tuple[Callable, bool]] = {
    "float32 math, one rounding": (_fp32_kernel, True),
    "float32 summed in order": (_summed_in_order, True),
    "weights rounded to x's dtype": (_weights_rounded, True),
    "next lower precision": (_lower_precision, False),
    "zero output": (lambda inputs, params, out: torch.zeros(params["M"], params["N"], dtype=out), False),
    "input passed through": (_passthrough, False),
    "scales forgotten": (_scales_forgotten, False),
}


_made: dict[str, tuple[dict, torch.Tensor]] = {}


def _inputs_and_reference(params: dict) -> tuple[dict, torch.Tensor]:
    """Made once per case and shared by the candidates (the float64 reference is the slow part)."""
    key = repr(sorted(params.items()))
    if key not in _made:
        device = torch.device("cpu")
        make = spec.make_w4_inputs if params["task"] == spec.W4 else spec.make_w8_inputs
        inputs = make(params, generator(SEED, device), device)
        ref = (spec.reference_w4 if params["task"] == spec.W4 else spec.reference_w8)(inputs, params)["y"]
        _made.clear()  # the parametrization runs each case's candidates back to back
        _made[key] = (inputs, ref)
    return _made[key]


@pytest.mark.parametrize("name", list(CANDIDATES))
@pytest.mark.parametrize("params", _cases(), ids=lambda p: f"{p['task'][-5:]}-{p['dtype']}-{p['M']}x{p['K']}x{p['N']}")
def test_tolerance(name: str, params: dict) -> None:
    fn, should_pass = CANDIDATES[name]
    if name == "weights rounded to x's dtype" and params["dtype"] == "float32":
        pytest.skip("for float32 outputs, 16-bit weights are the lower precision, tested as such")
    if name == "float32 summed in order" and params["dtype"] != "float32":
        pytest.skip("the float32 sum's drift matters against the float32 tolerance only")
    inputs, ref = _inputs_and_reference(params)
    out = fn(inputs, params, DTYPES[params["dtype"]])
    verdict = compare("y", out, ref, spec.TOLERANCES[params["dtype"]])
    assert verdict.ok == should_pass, verdict.message or f"passed with max error {verdict.max_error:.2f} of the tolerance"
    if should_pass:
        assert verdict.max_error <= 0.75  # honest kernels keep a margin, not a coin flip at the edge
