"""Third-party anchors for `python -m autograder bench`: Liger-Kernel and GemLite, timed beside the solutions
where they are installed (both are pure Python over Triton: `pip install liger-kernel gemlite`), and named
"not installed" where they are not. Grading never uses them.

What each anchors, forward passes only (their backward entry points differ from the course's):
    rmsnorm forward   Liger  liger_rms_norm(x, w, eps)  (casting mode "llama", offset 0)
    swiglu forward    Liger  liger_swiglu(gate, up)
    rope forward      Liger  liger_rope(x, k, cos, sin): Liger rotates q and k together, in place; k is one head
                             (the GQA case), 1/H more bytes than the course's call, and the tables are
                             duplicated to (1, S, D) in x's dtype beforehand, as Hugging Face passes them
    fusion softmax    Liger  liger_softmax(x)
    quant_matmul w4a16 GemLite  GemLiteLinear(4, group_size=G, in_features=K, out_features=N, FP16 in and out),
                             packed from the course's codes with zeros = 8: GemLite's W = (q - zero) * scale is
                             then the course's (q - 8) * scale
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch

from course.int4 import unpack_int4

Prepare = Callable[[dict[str, torch.Tensor]], Callable[[], object]]

# display name -> importable module
LIBRARIES = {"Liger-Kernel": "liger_kernel", "GemLite": "gemlite"}


def _module(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a library that cannot be imported (missing, or broken here) is not there
        return None


def versions() -> dict[str, str]:
    """Display name -> version, or "not installed"."""
    out = {}
    for shown, name in LIBRARIES.items():
        module = _module(name)
        out[shown] = "not installed" if module is None else str(getattr(module, "__version__", "installed"))
    return out


def _liger(fn: str) -> Callable[..., Any] | None:
    functional = _module("liger_kernel.transformers.functional")
    return getattr(functional, fn, None) if functional is not None else None


def _liger_rope(inputs: dict[str, torch.Tensor]) -> Callable[[], object]:
    rope = _liger("liger_rope")
    x = inputs["x"]  # (B, H, S, D)
    k = torch.randn_like(x[:, :1])  # (B, 1, S, D)
    cos = torch.cat((inputs["cos"], inputs["cos"]), dim=-1)[None].to(x.dtype)  # (1, S, D)
    sin = torch.cat((inputs["sin"], inputs["sin"]), dim=-1)[None].to(x.dtype)
    q = x.clone()
    return lambda: rope(q, k, cos, sin)


def _gemlite_w4(group_size: int) -> Prepare:
    def prepare(inputs: dict[str, torch.Tensor]) -> Callable[[], object]:
        gemlite = _module("gemlite")
        n, k = inputs["w_packed"].shape[0], inputs["x"].shape[1]
        layer = gemlite.GemLiteLinear(4, group_size=group_size, in_features=k, out_features=n,
                                      input_dtype=gemlite.DType.FP16, output_dtype=gemlite.DType.FP16)  # fmt: skip
        layer.pack(unpack_int4(inputs["w_packed"]).to(torch.uint8).contiguous(), inputs["scales"].contiguous(), 8, None)
        x = inputs["x"]
        return lambda: layer(x)

    return prepare


def extra_impls(slug: str, pass_name: str, params: dict) -> dict[str, Prepare]:
    """The installed anchors for one bench case: impl name -> prepare(inputs) -> call."""
    impls: dict[str, Prepare] = {}
    if slug == "rmsnorm" and pass_name == "forward" and _liger("liger_rms_norm"):
        impls["Liger"] = lambda inputs: (lambda f=_liger("liger_rms_norm"): f(inputs["x"], inputs["weight"], params["eps"]))
    elif slug == "swiglu" and pass_name == "forward" and _liger("liger_swiglu"):
        impls["Liger"] = lambda inputs: (lambda f=_liger("liger_swiglu"): f(inputs["gate"], inputs["up"]))
    elif slug == "rope" and pass_name == "forward" and _liger("liger_rope"):
        impls["Liger"] = _liger_rope
    elif slug == "fusion" and pass_name == "softmax" and _liger("liger_softmax"):
        impls["Liger"] = lambda inputs: (lambda f=_liger("liger_softmax"): f(inputs["x"]))
    elif slug == "quant_matmul" and pass_name == "w4a16" and params.get("dtype") == "float16" and _module("gemlite"):
        impls["GemLite"] = _gemlite_w4(params["group_size"])
    return impls
