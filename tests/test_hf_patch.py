"""The course's kernels inside a Hugging Face Llama (course/hf_patch.py): a tiny random model, patched and not.

Skipped, with the sentence that says how to install it, where transformers (the [hf] extra) is missing.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from course import hf_patch

if not hf_patch.available():
    pytest.skip(hf_patch.missing_sentence(), allow_module_level=True)

from course.llama import load_course_kernels  # noqa: E402

LAYERS = 1
TOLERANCE = {torch.float32: 1e-5}  # relative to the largest logit; the interpreter computes in float32


def _torch_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def _torch_kernels(swiglu=lambda gate, up: F.silu(gate) * up) -> dict:
    """The course's API computed by PyTorch: checks the patch's plumbing in milliseconds."""
    return {
        "rmsnorm": SimpleNamespace(rmsnorm=lambda x, w, eps: w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))),
        "rope": SimpleNamespace(rope=_torch_rope),
        "flash_attention": SimpleNamespace(flash_attention=lambda q, k, v, causal, scale: F.scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=scale, enable_gqa=True)),
        "swiglu": SimpleNamespace(swiglu=swiglu),
    }  # fmt: skip


def test_the_course_kernels_inside_a_llama_give_its_logits_in_prefill_and_decode() -> None:
    kernels, _ = load_course_kernels(torch.device("cpu"), prefer="solutions")
    r = hf_patch.compare_logits(kernels, hf_patch.tiny_config(LAYERS), torch.float32, "cpu", batch=2, seq=5, steps=2)
    assert r["patched"] == {"rmsnorm": 2 * LAYERS + 1, "swiglu": LAYERS, "attention": LAYERS}
    assert r["logits"] == (2, 5 + 2, 128)
    assert r["relative_error"] < TOLERANCE[torch.float32] and r["same_tokens"]


def test_a_wrong_kernel_inside_the_model_shows_in_its_logits() -> None:
    config = hf_patch.tiny_config(LAYERS)
    right = hf_patch.compare_logits(_torch_kernels(), config, torch.float32, "cpu")
    wrong = hf_patch.compare_logits(_torch_kernels(swiglu=lambda gate, up: gate * up), config, torch.float32, "cpu")
    assert right["relative_error"] < TOLERANCE[torch.float32]
    assert wrong["relative_error"] > 1e-2


def test_a_padded_batch_is_refused_with_a_sentence() -> None:
    model = hf_patch.build_model(hf_patch.tiny_config(1), torch.float32, "cpu")
    hf_patch.patch(model, _torch_kernels())
    tokens = torch.ones(2, 4, dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 1], [0, 1, 1, 1]])
    with pytest.raises(ValueError, match="pass unpadded batches"):
        model(input_ids=tokens, attention_mask=mask)
