"""The RoPE and SwiGLU tolerances accept float32 math rounded once, and reject a second rounding, the next
lower precision, the wrong formula, a zero output and an input passed through.

The Triton interpreter cannot do bf16 arithmetic, so a kernel's 16-bit roundings are emulated in PyTorch,
whose casts round to nearest-even as the GPU's do. Inputs come from the specs' own generators at the GPU
tier's shapes, capped to at most about sixty thousand elements so the float64 work stays small on a CPU; every
16-bit GPU case keeps enough elements for a second rounding to show (the smallest, 4097 elements, shows it
on 9 to 23 of them at the graded tolerance).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import autograder.specs.rope as rope_spec
import autograder.specs.swiglu as swiglu_spec
from autograder.checking import compare
from autograder.spec import DTYPES, generator
from conftest import SEED

LOWER = {"float32": torch.bfloat16, "float16": torch.bfloat16, "bfloat16": torch.float8_e4m3fn}


def _round(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """t rounded to dtype (nearest-even) and back to float32: one rounding, as a kernel's cast does."""
    return t.to(dtype).float()


def _cases(spec, cap: Callable[[list[int]], list[int]]) -> list[dict]:
    cases = [{**p, "dtype": "float32"} for p in spec.CPU_FORWARD]
    cases += [{**p, "shape": cap(p["shape"]), "dtype": d} for d in ("float32", "float16", "bfloat16") for p in spec.GPU_FORWARD]
    return cases


def _case_id(p: dict) -> str:
    return f"{p['dtype']}-{'x'.join(map(str, p['shape']))}"


_inputs: dict[tuple, tuple[dict, torch.Tensor]] = {}


def inputs_and_reference(spec, params: dict) -> tuple[dict, torch.Tensor]:
    """The spec's inputs for these params at the fixed seed, and its float64 reference (made once, shared)."""
    key = (spec.ASSIGNMENT.slug, params["dtype"], tuple(params["shape"]))
    if key not in _inputs:
        device = torch.device("cpu")
        inputs = spec.make_forward_inputs(params, generator(SEED, device), device)
        _inputs[key] = (inputs, spec.reference_forward(inputs, params)["y"])
    return _inputs[key]


# --------------------------------------------------------------------------------------------------
# SwiGLU
# --------------------------------------------------------------------------------------------------


def _swiglu_cap(shape: list[int]) -> list[int]:
    rows = 1
    for s in shape[:-1]:
        rows *= s
    return [min(rows, 4), shape[-1]] if len(shape) > 1 else shape


def sw_fp32(g: torch.Tensor, u: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    gf, uf = g.float(), u.float()
    return (gf * torch.sigmoid(gf) * uf).to(out)


def sw_product_first(g: torch.Tensor, u: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """tests/submissions/swiglu/wrong_bf16_product.py: gate * up rounded to the input dtype, then the activation."""
    gf, uf = g.float(), u.float()
    return (_round(gf * uf, out) * torch.sigmoid(gf)).to(out)


def sw_eager(g: torch.Tensor, u: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """Eager PyTorch, F.silu(gate) * up in the input dtype: silu is rounded before the product."""
    return torch.nn.functional.silu(g) * u


def sw_lower(g: torch.Tensor, u: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    low = LOWER[str(out).replace("torch.", "")]
    gl, ul = _round(g.float(), low), _round(u.float(), low)
    s = _round(torch.sigmoid(gl), low)
    return _round(_round(gl * s, low) * ul, low).to(out)


def sw_sigmoid(g: torch.Tensor, u: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    return (torch.sigmoid(g.float()) * u.float()).to(out)


# name -> (candidate, passes in float32, passes in 16-bit dtypes)
SWIGLU: dict[str, tuple[Callable, bool, bool]] = {
    "float32 math, one rounding": (sw_fp32, True, True),
    "gate * up rounded before the activation": (sw_product_first, True, False),
    "eager F.silu(gate) * up, two roundings": (sw_eager, True, False),
    "next lower precision": (sw_lower, False, False),
    "sigmoid instead of silu": (sw_sigmoid, False, False),
    "zero output": (lambda g, u, out: torch.zeros_like(g), False, False),
    "gate passed through": (lambda g, u, out: g.clone(), False, False),
    "up passed through": (lambda g, u, out: u.clone(), False, False),
}


@pytest.mark.parametrize("name", list(SWIGLU))
@pytest.mark.parametrize("params", _cases(swiglu_spec, _swiglu_cap), ids=_case_id)
def test_swiglu_forward_tolerance(name: str, params: dict) -> None:
    fn, passes_fp32, passes_16 = SWIGLU[name]
    inputs, ref = inputs_and_reference(swiglu_spec, params)
    out = fn(inputs["gate"], inputs["up"], DTYPES[params["dtype"]])
    verdict = compare("y", out, ref, swiglu_spec.TOLERANCES[params["dtype"]])
    should_pass = passes_fp32 if params["dtype"] == "float32" else passes_16
    if name in ("gate passed through", "up passed through") and params["shape"] == [1]:
        pytest.skip("one element can land within the tolerance of anything")
    assert verdict.ok == should_pass, verdict.message or f"passed with max error {verdict.max_error:.2f} of the tolerance"
    if should_pass and name == "float32 math, one rounding":
        assert verdict.max_error <= 0.7  # an honest kernel keeps a margin, not a coin flip at the edge


def test_swiglu_backward_tolerance_accepts_float32_math_rounded_once() -> None:
    device = torch.device("cpu")
    for dtype in ("float32", "float16", "bfloat16"):
        params = {"shape": [4, 14336], "dtype": dtype}
        inputs = swiglu_spec.make_backward_inputs(params, generator(SEED, device), device)
        ref = swiglu_spec.reference_backward(inputs, params)
        g, u, dy = inputs["gate"].float(), inputs["up"].float(), inputs["dy"].float()
        s = torch.sigmoid(g)
        got = {"dgate": dy * u * s * (1 + g * (1 - s)), "dup": dy * g * s}
        for key, value in got.items():
            verdict = compare(key, value.to(DTYPES[dtype]), ref[key], swiglu_spec.TOLERANCES[dtype])
            assert verdict.ok and verdict.max_error <= 0.7, (dtype, key, verdict.message, verdict.max_error)
            twice = _round(value, DTYPES[dtype]) * (1 + 2**-8 if dtype == "bfloat16" else 1 + 2**-11)
            if dtype != "float32":  # a second rounding's worth of error on top fails
                assert not compare(key, twice.to(DTYPES[dtype]), ref[key], swiglu_spec.TOLERANCES[dtype]).ok


# --------------------------------------------------------------------------------------------------
# RoPE
# --------------------------------------------------------------------------------------------------


def _rope_cap(shape: list[int]) -> list[int]:
    batch, heads, seq_len, head_dim = shape
    return [1, min(batch * heads, 2), min(seq_len, 128), head_dim]


def _halves(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    half = x.shape[-1] // 2
    return x[..., :half].float(), x[..., half:].float()


def rp_fp32(x: torch.Tensor, c: torch.Tensor, s: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    x1, x2 = _halves(x)
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1).to(out)


def _rounded_rope(x: torch.Tensor, c: torch.Tensor, s: torch.Tensor, through: torch.dtype) -> torch.Tensor:
    """RoPE with x, the tables, each product and each sum rounded to `through`."""
    x1, x2 = _halves(x)
    x1, x2, c, s = (_round(t, through) for t in (x1, x2, c, s))
    lo = _round(_round(x1 * c, through) - _round(x2 * s, through), through)
    hi = _round(_round(x2 * c, through) + _round(x1 * s, through), through)
    return torch.cat((lo, hi), -1)


def rp_tables_in_dtype(x: torch.Tensor, c: torch.Tensor, s: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    """Llama's bf16 code: the tables cast to x's dtype, each product and the sum rounded."""
    return _rounded_rope(x, c, s, out).to(out)


def rp_lower(x: torch.Tensor, c: torch.Tensor, s: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    return _rounded_rope(x, c, s, LOWER[str(out).replace("torch.", "")]).to(out)


def rp_wrong_sign(x: torch.Tensor, c: torch.Tensor, s: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    return rp_fp32(x, c, -s, out)


def rp_interleaved(x: torch.Tensor, c: torch.Tensor, s: torch.Tensor, out: torch.dtype) -> torch.Tensor:
    x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()
    y = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), -1).flatten(-2)
    return y.to(out)


ROPE: dict[str, tuple[Callable, bool, bool]] = {
    "float32 math, one rounding": (rp_fp32, True, True),
    "tables in x's dtype, every product rounded": (rp_tables_in_dtype, True, False),
    "next lower precision": (rp_lower, False, False),
    "sin with the wrong sign": (rp_wrong_sign, False, False),
    "interleaved pairing": (rp_interleaved, False, False),
    "zero output": (lambda x, c, s, out: torch.zeros_like(x), False, False),
    "input passed through": (lambda x, c, s, out: x.clone(), False, False),
}


@pytest.mark.parametrize("name", list(ROPE))
@pytest.mark.parametrize("params", _cases(rope_spec, _rope_cap), ids=_case_id)
def test_rope_forward_tolerance(name: str, params: dict) -> None:
    fn, passes_fp32, passes_16 = ROPE[name]
    if name == "interleaved pairing" and params["shape"][3] == 2:
        pytest.skip("with one pair both pairings agree")
    inputs, ref = inputs_and_reference(rope_spec, params)
    out = fn(inputs["x"], inputs["cos"], inputs["sin"], DTYPES[params["dtype"]])
    verdict = compare("y", out, ref, rope_spec.TOLERANCES[params["dtype"]])
    should_pass = passes_fp32 if params["dtype"] == "float32" else passes_16
    assert verdict.ok == should_pass, verdict.message or f"passed with max error {verdict.max_error:.2f} of the tolerance"
    if should_pass and name == "float32 math, one rounding":
        assert verdict.max_error <= 0.7


def test_an_honest_swiglu_backward_passes_one_element_where_silus_slope_is_zero() -> None:
    """dgate = dy up (s + g s (1 - s)) in float32, as the solution computes it: near g = -1.2785 its two terms cancel,
    and one element is judged against their size, as inside any larger tensor, not against its own small value (the
    solution failed a one-element case of the bonus that way in one grading of the solutions)."""
    g = torch.linspace(-1.29, -1.267, 231, dtype=torch.float32)
    draw = generator(SEED, torch.device("cpu"))
    up, dy = torch.randn(231, generator=draw), torch.randn(231, generator=draw)
    lost_to_the_old_scale = 0
    for i in range(g.numel()):
        inputs = {"gate": g[i : i + 1], "up": up[i : i + 1], "dy": dy[i : i + 1]}
        s = torch.sigmoid(inputs["gate"])
        honest = inputs["dy"] * inputs["up"] * s * (1.0 + inputs["gate"] * (1.0 - s))  # float32 throughout
        ref = swiglu_spec.reference_backward(inputs, {"shape": [1], "dtype": "float32"})["dgate"]
        verdict = compare("dgate", honest, ref, swiglu_spec.TOLERANCES["float32"])
        assert verdict.ok, (g[i].item(), verdict.message)
        without_the_slope_term = inputs["dy"] * inputs["up"] * s  # a backward that forgets g s (1 - s)
        assert not compare("dgate", without_the_slope_term, ref, swiglu_spec.TOLERANCES["float32"]).ok
        err = (honest.double() - ref).abs().item()
        lost_to_the_old_scale += err > 2e-5 * abs(ref.item())  # atol * mean|ref| + rtol * |ref| with one element
    assert lost_to_the_old_scale > 10
