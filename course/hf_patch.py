"""The course's kernels inside a Hugging Face Llama (`transformers`, an optional extra: `pip install -e .[hf]`).

`build_model` makes a `LlamaForCausalLM` from a configuration with random weights (nothing is downloaded);
`patch` swaps four of its operations for the course's kernels, module by module:

- every `LlamaRMSNorm` becomes a module calling the course's `rmsnorm`;
- every `LlamaMLP` computes `down(swiglu(gate(x), up(x)))` with the course's `swiglu`;
- every `LlamaAttention` applies the course's `rope` to q and k and runs the course's `flash_attention`
  (causal for a prefill, over the whole cache for a decode step), around the model's own projections
  and key-value cache.

The projections and the embedding stay PyTorch's (cuBLAS on a GPU). `compare_logits` checks the patched
model against the unpatched one; `scripts/llama_block_bench.py --sections hf` times prefill and decode of both on a GPU.
Batches must be unpadded: every sequence of a batch at the same positions (the course's rope takes one
table of positions), which `patch` checks by refusing an attention mask.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
from torch import nn

try:
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama import modeling_llama
except ImportError:  # the course runs without it; callers check `available()` first
    transformers = None

PINNED = "5.23.0"  # pyproject.toml's [hf] extra


def available() -> bool:
    return transformers is not None


def missing_sentence() -> str:
    return (f"transformers is not installed, so the Hugging Face part is skipped: install it with "
            f"`pip install -e .[hf]` (transformers=={PINNED}) to run it.")  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Models with random weights
# --------------------------------------------------------------------------------------------------


def tiny_config(layers: int = 2) -> Any:
    """Small enough for the CPU interpreter, with the shapes' odd corners: GQA (4 query heads, 2 KV heads)."""
    return LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=layers,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                       rms_norm_eps=1e-5, rope_theta=500000.0, hidden_act="silu")  # fmt: skip


def llama3_8b_config(layers: int = 2) -> Any:
    """Llama-3-8B's shapes (hidden 4096, 32 query / 8 KV heads of 128, MLP 14336, vocab 128256), `layers` deep."""
    return LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers,
                       num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=8192,
                       rms_norm_eps=1e-5, rope_theta=500000.0, hidden_act="silu")  # fmt: skip


def build_model(config: Any, dtype: torch.dtype, device: torch.device | str, seed: int = 0) -> Any:
    """An unpatched LlamaForCausalLM with random weights (the same for the same seed), in eval mode."""
    torch.manual_seed(seed)
    with torch.device(device):  # initialised where it runs: a few 8B-shaped layers build in seconds on a GPU
        model = LlamaForCausalLM(config)
    with torch.no_grad():  # RMSNorm weights start at one: random ones make the check see them
        for module in model.modules():
            if isinstance(module, modeling_llama.LlamaRMSNorm):
                module.weight.uniform_(0.5, 1.5)
    model.config._attn_implementation = "sdpa"
    rotary = [(m, m.inv_freq.clone()) for m in model.modules() if isinstance(m, modeling_llama.LlamaRotaryEmbedding)]
    model = model.to(dtype=dtype).eval()
    for module, inv_freq in rotary:  # the frequencies stay float32, as a checkpoint loaded in bf16 keeps them
        module.inv_freq = inv_freq
    return model


# --------------------------------------------------------------------------------------------------
# The patch
# --------------------------------------------------------------------------------------------------


class CourseRMSNorm(nn.Module):
    """LlamaRMSNorm's weight and epsilon, computed by the course's kernel."""

    def __init__(self, original: nn.Module, rmsnorm: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.weight = original.weight
        self.variance_epsilon = original.variance_epsilon
        self._rmsnorm = rmsnorm

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:  # (B, S, H)
        return self._rmsnorm(hidden_states.contiguous(), self.weight, self.variance_epsilon)


def _mlp_forward(self: nn.Module, x: torch.Tensor, swiglu: Callable[..., torch.Tensor]) -> torch.Tensor:
    return self.down_proj(swiglu(self.gate_proj(x), self.up_proj(x)))


def _attention_forward(self: nn.Module, hidden_states: torch.Tensor, position_embeddings: tuple[torch.Tensor, torch.Tensor],
                       attention_mask: torch.Tensor | None = None, past_key_values: Any = None,
                       *, kernels: dict[str, ModuleType], **kwargs: Any) -> tuple[torch.Tensor, None]:  # fmt: skip
    """LlamaAttention's computation with the course's rope and flash attention (the projections are the model's)."""
    if attention_mask is not None:
        raise ValueError("the course's attention takes no mask: pass unpadded batches (every sequence the same length).")
    batch, seq, _ = hidden_states.shape
    heads = (batch, seq, -1, self.head_dim)
    q = self.q_proj(hidden_states).view(heads).transpose(1, 2).contiguous()  # (B, Hq, S, D)
    k = self.k_proj(hidden_states).view(heads).transpose(1, 2).contiguous()  # (B, Hkv, S, D)
    v = self.v_proj(hidden_states).view(heads).transpose(1, 2).contiguous()
    cos, sin = position_embeddings  # (B, S, D) in rotate-half form, the same positions in every row of the batch
    half = self.head_dim // 2
    cos, sin = cos[0, :, :half].float().contiguous(), sin[0, :, :half].float().contiguous()  # (S, D/2)
    q = kernels["rope"].rope(q, cos, sin)
    k = kernels["rope"].rope(k, cos, sin)
    if past_key_values is not None:
        k, v = past_key_values.update(k, v, self.layer_idx)  # (B, Hkv, L, D)
    keys = k.shape[2]
    if seq not in (1, keys):
        raise ValueError(f"the course's attention runs a prefill (all {keys} keys at once) or a decode step (one query); "
                         f"got {seq} queries against {keys} keys.")  # fmt: skip
    out = kernels["flash_attention"].flash_attention(q, k.contiguous(), v.contiguous(), causal=seq > 1, scale=self.scaling)
    out = out.transpose(1, 2).reshape(batch, seq, -1)  # (B, S, Hq * D)
    return self.o_proj(out), None


def patch(model: Any, kernels: dict[str, ModuleType]) -> dict[str, int]:
    """Swap RMSNorm, the MLP's SwiGLU, rope and attention for the course's kernels, in place.

    kernels maps a slug to its kernels.py module (course.llama.load_course_kernels). Returns how many
    modules of each kind now run a course kernel.
    """
    if model.config.hidden_act != "silu":
        raise ValueError(f"the course's swiglu is silu(gate) * up; this model's activation is {model.config.hidden_act}.")
    counts = {"rmsnorm": 0, "swiglu": 0, "attention": 0}
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, modeling_llama.LlamaRMSNorm):
                setattr(parent, name, CourseRMSNorm(child, kernels["rmsnorm"].rmsnorm))
                counts["rmsnorm"] += 1
    for module in model.modules():
        if isinstance(module, modeling_llama.LlamaMLP):
            module.forward = types.MethodType(lambda self, x: _mlp_forward(self, x, kernels["swiglu"].swiglu), module)
            counts["swiglu"] += 1
        elif isinstance(module, modeling_llama.LlamaAttention):
            module.forward = types.MethodType(
                lambda self, *args, **kw: _attention_forward(self, *args, kernels=kernels, **kw), module)  # fmt: skip
            counts["attention"] += 1
    return counts


# --------------------------------------------------------------------------------------------------
# Checking and running
# --------------------------------------------------------------------------------------------------


@torch.no_grad()
def prefill_and_decode(model: Any, tokens: torch.Tensor, steps: int) -> torch.Tensor:
    """Logits of a prefill of `tokens` (B, S), then of `steps` greedy decode steps with the model's KV cache.

    Returns (B, S + steps, vocab) float32: the prefill's logits, then one row per decode step.
    """
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    out = model(input_ids=tokens, past_key_values=cache, use_cache=True)
    logits = [out.logits.float()]
    for _ in range(steps):
        nxt = logits[-1][:, -1:].argmax(-1)  # (B, 1)
        out = model(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
        logits.append(out.logits.float())
    return torch.cat(logits, dim=1)


def compare_logits(kernels: dict[str, ModuleType], config: Any, dtype: torch.dtype, device: torch.device | str,
                   batch: int = 2, seq: int = 7, steps: int = 3, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """The same random model unpatched and patched, on the same tokens: prefill and decode logits compared.

    The decode steps of the patched model follow the unpatched model's tokens (teacher forcing is not
    needed: greedy tokens agree while the logits do), so a wrong cache or rope position shows at once.
    """
    reference = build_model(config, dtype, device, seed)
    patched = build_model(config, dtype, device, seed)
    counts = patch(patched, kernels)
    return {"patched": counts, **compare_models(reference, patched, batch, seq, steps, seed)}


def compare_models(reference: Any, patched: Any, batch: int, seq: int, steps: int, seed: int = 0) -> dict[str, Any]:
    """Prefill and decode logits of two models of one configuration on the same random tokens."""
    device = next(reference.parameters()).device
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, reference.config.vocab_size, (batch, seq), generator=g).to(device)  # (B, S)
    ref = prefill_and_decode(reference, tokens, steps)
    got = prefill_and_decode(patched, tokens, steps)
    scale = ref.abs().max().item()
    err = (got - ref).abs().max().item()
    return {"max_abs_error": err, "relative_error": err / scale if scale else err,
            "same_tokens": bool(torch.equal(ref.argmax(-1), got.argmax(-1))), "logits": tuple(ref.shape)}  # fmt: skip
