"""Each tolerance accepts honest kernels and rejects a lower precision, a zero output and the input passed through.

Inputs come from the spec's own generator at the graded shapes (rows capped so the float64 work stays
small on a CPU), so what is shown here holds for the cases the grader runs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from autograder.checking import compare
from autograder.spec import DTYPES, generator
from autograder.specs.rmsnorm import (
    CPU_FORWARD,
    CPU_LINEAR,
    GPU_FORWARD,
    GPU_LINEAR,
    LINEAR_TOLERANCES,
    TOLERANCES,
    make_forward_inputs,
    make_linear_inputs,
    reference_forward,
    reference_linear,
)
from conftest import SEED

LOWER = {"float32": torch.bfloat16, "float16": torch.bfloat16, "bfloat16": torch.float8_e4m3fn}


def _capped(shape: list[int], max_rows: int = 64) -> list[int]:
    rows = 1
    for s in shape[:-1]:
        rows *= s
    return [min(rows, max_rows), shape[-1]] if len(shape) > 1 else shape


def _forward_cases() -> list[dict]:
    cases = [{**p, "dtype": "float32"} for p in CPU_FORWARD]
    cases += [{**p, "shape": _capped(p["shape"]), "dtype": d} for d in ("float32", "float16", "bfloat16") for p in GPU_FORWARD]
    return cases


def _round_through(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return t.to(dtype).to(torch.float32)


def _fp32_kernel(x: torch.Tensor, w: torch.Tensor, eps: float, out: torch.dtype) -> torch.Tensor:
    xf, wf = x.float(), w.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * wf).to(out)


def _llama_order(x: torch.Tensor, w: torch.Tensor, eps: float, out: torch.dtype) -> torch.Tensor:
    """Honest but rounds twice: x * rstd is rounded to the input dtype before the weight multiplies it."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(out) * w


def _lower_precision(x: torch.Tensor, w: torch.Tensor, eps: float, out: torch.dtype) -> torch.Tensor:
    """Every input and intermediate rounded to the next lower precision."""
    low = LOWER[str(out).replace("torch.", "")]
    xl, wl = _round_through(x.float(), low), _round_through(w.float(), low)
    ms = _round_through(xl.pow(2), low).mean(-1, keepdim=True)
    rstd = _round_through(torch.rsqrt(_round_through(ms + eps, low)), low)
    return _round_through(_round_through(xl * rstd, low) * wl, low).to(out)


CANDIDATES: dict[str, tuple[Callable, bool]] = {
    "float32 math, one rounding": (_fp32_kernel, True),
    "Llama order, two roundings": (_llama_order, True),
    "next lower precision": (_lower_precision, False),
    "zero output": (lambda x, w, eps, out: torch.zeros_like(x), False),
    "input passed through": (lambda x, w, eps, out: x.clone(), False),
}


@pytest.mark.parametrize("name", list(CANDIDATES))
@pytest.mark.parametrize("params", _forward_cases(), ids=lambda p: f"{p['dtype']}-{'x'.join(map(str, p['shape']))}-eps{p['eps']}")
def test_forward_tolerance(name: str, params: dict) -> None:
    fn, should_pass = CANDIDATES[name]
    device = torch.device("cpu")
    inputs = make_forward_inputs(params, generator(SEED, device), device)
    ref = reference_forward(inputs, params)["y"]
    out = fn(inputs["x"], inputs["weight"], params["eps"], DTYPES[params["dtype"]])
    verdict = compare("y", out, ref, TOLERANCES[params["dtype"]])
    if name == "next lower precision" and params["shape"] == [1]:
        pytest.skip("a single element normalises to sign(x) * w in any precision")
    assert verdict.ok == should_pass, verdict.message or f"passed with max error {verdict.max_error:.2f} of the tolerance"
    if should_pass:
        assert verdict.max_error <= 0.75  # honest kernels keep a margin, not a coin flip at the edge


# --------------------------------------------------------------------------------------------------
# rmsnorm_linear: y = rmsnorm(x) @ w.T, judged against the size of each output's K terms.
# --------------------------------------------------------------------------------------------------


def _linear_cases() -> list[dict]:
    """The graded cases; on the GPU tier's, M capped at 16 and N at 2048 (K, which sets the error, kept)."""
    cases = [{**p, "dtype": "float32"} for p in CPU_LINEAR]
    cases += [{**p, "M": min(p["M"], 16), "N": min(p["N"], 2048), "dtype": d}
              for d in ("float32", "float16", "bfloat16") for p in GPU_LINEAR]  # fmt: skip
    return cases


def _norm32(x: torch.Tensor, nw: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * nw.float()  # (M, K)


def _linear_fp32(x, nw, w, eps, out):
    """The float32 computation, rounded once on the store."""
    return (_norm32(x, nw, eps) @ w.float().T).to(out)


def _linear_unfused(x, nw, w, eps, out):
    """What the solution and the unfused path do: x_norm rounded to the input dtype, then a float32-accumulated product."""
    return (_norm32(x, nw, eps).to(out).float() @ w.float().T).to(out)


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """float32 rounded to tf32's 10-bit mantissa (to nearest), as tensor cores read float32 in tf32 mode."""
    bits = t.float().contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def _linear_lower(x, nw, w, eps, out):
    """x_norm and w rounded to the next lower precision: tf32 for float32, bfloat16 for float16, float8 for bfloat16."""
    dtype = str(out).replace("torch.", "")
    low = (lambda t: _tf32(t)) if dtype == "float32" else (lambda t: _round_through(t, LOWER[dtype]))
    return (low(_norm32(x, nw, eps)) @ low(w.float()).T).to(out)


LINEAR_CANDIDATES: dict[str, tuple[Callable, bool]] = {
    "float32 math, one rounding": (_linear_fp32, True),
    "x_norm rounded to the input dtype (unfused)": (_linear_unfused, True),
    "next lower precision": (_linear_lower, False),
    "zero output": (lambda x, nw, w, eps, out: torch.zeros(x.shape[0], w.shape[0], dtype=out), False),
    "norm left out (x @ w.T)": (lambda x, nw, w, eps, out: (x.float() @ w.float().T).to(out), False),
    "norm weight left out": (lambda x, nw, w, eps, out: (_norm32(x, torch.ones_like(nw), eps) @ w.float().T).to(out), False),
}


@pytest.mark.parametrize("params", _linear_cases(), ids=lambda p: f"{p['dtype']}-M{p['M']}-K{p['K']}-N{p['N']}-eps{p['eps']}-{p.get('dist', 'normal')}")
def test_linear_tolerance_accepts_honest_products_and_rejects_the_rest(params: dict) -> None:
    device = torch.device("cpu")
    inputs = make_linear_inputs(params, generator(SEED, device), device)
    ref = reference_linear(inputs, params)["y"]
    tol = LINEAR_TOLERANCES[params["dtype"]]
    for name, (fn, should_pass) in LINEAR_CANDIDATES.items():
        out = fn(inputs["x"], inputs["norm_weight"], inputs["w"], params["eps"], DTYPES[params["dtype"]])
        verdict = compare("y", out, ref, tol)
        assert verdict.ok == should_pass, (name, verdict.message or f"passed with max error {verdict.max_error:.2f}")
        if should_pass:
            assert verdict.max_error <= 0.75, (name, verdict.max_error)  # a margin, not a coin flip at the edge
