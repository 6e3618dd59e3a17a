"""autograder/anchors.py: the third-party anchors of `make bench` are named "not installed" when absent, and
when present they are called on the course's inputs as their libraries expect (checked with stand-ins that
compute what Liger-Kernel's RMSNorm and GemLite's W4 layer compute)."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from autograder import anchors
from autograder.plots import markdown_table
from autograder.specs import quant_matmul as qm_spec


@pytest.fixture
def absent(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("liger_kernel", "liger_kernel.transformers", "liger_kernel.transformers.functional", "gemlite"):
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules: the import raises ImportError


def test_absent_libraries_are_named_not_installed_and_add_nothing(absent: None) -> None:
    assert anchors.versions() == {"Liger-Kernel": "not installed", "GemLite": "not installed"}
    assert anchors.extra_impls("rmsnorm", "forward", {"eps": 1e-6}) == {}
    assert anchors.extra_impls("quant_matmul", "w4a16", {"dtype": "float16", "group_size": 128}) == {}


def test_liger_rmsnorm_is_called_on_the_cases_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    functional = types.ModuleType("liger_kernel.transformers.functional")
    functional.liger_rms_norm = lambda x, w, eps: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    monkeypatch.setitem(sys.modules, "liger_kernel", types.SimpleNamespace(__version__="0.0-test"))
    monkeypatch.setitem(sys.modules, "liger_kernel.transformers.functional", functional)
    monkeypatch.setitem(sys.modules, "gemlite", None)
    assert anchors.versions() == {"Liger-Kernel": "0.0-test", "GemLite": "not installed"}
    assert anchors.extra_impls("rmsnorm", "backward", {"eps": 1e-6}) == {}  # forward passes only
    x, w = torch.randn(3, 8), torch.randn(8)
    call = anchors.extra_impls("rmsnorm", "forward", {"eps": 1e-6})["Liger"]({"x": x, "weight": w})
    torch.testing.assert_close(call(), torch.nn.functional.rms_norm(x, (8,), w, 1e-6))


class _FakeGemLite(torch.nn.Module):
    """GemLite's W4 layer as its documentation defines it: W = (W_q - zeros) * scales, groups along K."""

    def __init__(self, bits: int, group_size: int, in_features: int, out_features: int, input_dtype: str, output_dtype: str) -> None:
        super().__init__()
        assert bits == 4
        self.group_size, self.shape = group_size, (out_features, in_features)

    def pack(self, w_q: torch.Tensor, scales: torch.Tensor, zeros: int, bias: torch.Tensor | None) -> None:
        assert w_q.dtype == torch.uint8 and tuple(w_q.shape) == self.shape and bias is None
        self.w = (w_q.double() - zeros) * scales.double().repeat_interleave(self.group_size, dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.double() @ self.w.T


def test_gemlite_gets_the_course_codes_with_zero_8(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.SimpleNamespace(__version__="0.0-test", GemLiteLinear=_FakeGemLite,
                                 DType=types.SimpleNamespace(FP16="fp16"))  # fmt: skip
    monkeypatch.setitem(sys.modules, "gemlite", fake)
    params = {"M": 2, "K": 64, "N": 5, "group_size": 32, "dtype": "float16"}
    inputs = qm_spec.make_w4_inputs({**params, "dtype": "float32"}, torch.Generator().manual_seed(5), torch.device("cpu"))
    call = anchors.extra_impls("quant_matmul", "w4a16", params)["GemLite"](inputs)
    torch.testing.assert_close(call(), qm_spec.reference_w4(inputs, params)["y"])


def test_the_bench_table_names_the_anchors_it_had() -> None:
    meta = {"gpu": "G", "date": "d", "torch": "t", "triton": "tr", "copy_gbps": 1.0, "reps": 3,
            "anchors": {"Liger-Kernel": "not installed", "GemLite": "0.6.0"}}  # fmt: skip
    row = {"pass": "forward", "shape": [2], "dtype": "bfloat16", "impl": "solution", "ms": 1.0, "gbps": 1.0, "pct_copy": 1.0}
    assert "Liger-Kernel: not installed. GemLite: 0.6.0." in markdown_table({"meta": meta, "rows": [row]})
