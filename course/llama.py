"""A Llama-3-style decoder block, written once and run two ways: plain PyTorch, or the course's Triton kernels.

The block (pre-norm, grouped-query attention, SwiGLU feed-forward):

    h = rmsnorm(x) ; q, k, v = h Wq, h Wk, h Wv ; q, k = rope(q), rope(k)
    x = x + attention(q, k, v) Wo
    h = rmsnorm(x) ; x = x + (silu(h Wgate) * (h Wup)) Wdown

`block_forward` is the whole block; an `Ops` record says which implementation runs each operation:
`torch_ops()` gives PyTorch's (written the way Hugging Face's Llama is, SDPA attention included), and
`course_ops(kernels, switched_on)` swaps in the course's kernels one operation at a time. `fuse_projections`
gives the same block with q, k, v as one projection and gate, up as another. Notebook 10 and
`scripts/llama_block_bench.py` use it; so do the tests, in a tiny configuration under the CPU interpreter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F

from course.int4 import pack_int4, unpack_int4
from course.loader import load_kernels

# --------------------------------------------------------------------------------------------------
# Configuration and weights
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LlamaConfig:
    name: str
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    rms_eps: float = 1e-5
    rope_base: float = 500000.0  # Llama 3's theta; its long-context frequency scaling is left out
    group_size: int = 128  # W4A16: one scale per 128 inputs of an output channel

    @property
    def q_size(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.n_kv_heads * self.head_dim

    def projection_shapes(self) -> dict[str, tuple[int, int]]:
        """(out_features, in_features) of each weight matrix, as nn.Linear stores them."""
        h, i = self.hidden_size, self.intermediate_size
        return {"wq": (self.q_size, h), "wk": (self.kv_size, h), "wv": (self.kv_size, h), "wo": (h, self.q_size),
                "w_gate": (i, h), "w_up": (i, h), "w_down": (h, i)}  # fmt: skip

    def n_params(self) -> int:
        return sum(n * k for n, k in self.projection_shapes().values()) + 2 * self.hidden_size


# One layer of Meta's Llama-3-8B (32 such layers make the model).
LLAMA3_8B = LlamaConfig("Llama-3-8B layer", hidden_size=4096, n_heads=32, n_kv_heads=8, head_dim=128,
                        intermediate_size=14336)  # fmt: skip
# Small enough for the CPU interpreter; the same structure (GQA with 2 query heads per KV head, K a
# multiple of the W4A16 group size, a head dimension the flash-attention kernel accepts).
TINY = LlamaConfig("tiny", hidden_size=128, n_heads=4, n_kv_heads=2, head_dim=32, intermediate_size=384)


@dataclass
class Linear:
    """One projection: y = x @ weight.T, optionally also held as W4A16 codes."""

    weight: torch.Tensor  # (N, K), the activations' dtype
    w_packed: torch.Tensor | None = None  # (N, K // 2) uint8, two 4-bit codes a byte
    scales: torch.Tensor | None = None  # (N, K // group_size)


@dataclass
class BlockWeights:
    attn_norm: torch.Tensor  # (hidden,)
    ffn_norm: torch.Tensor  # (hidden,)
    linears: dict[str, Linear]

    def to(self, dtype: torch.dtype) -> BlockWeights:
        """The same weights in another dtype (the codes and their scales are dropped)."""
        return BlockWeights(self.attn_norm.to(dtype), self.ffn_norm.to(dtype),
                            {k: Linear(v.weight.to(dtype)) for k, v in self.linears.items()})  # fmt: skip

    def nbytes(self) -> int:
        """Bytes of weights a forward pass reads: the codes and scales where present, else the dense matrices."""
        total = self.attn_norm.nbytes + self.ffn_norm.nbytes
        for lin in self.linears.values():
            total += lin.w_packed.nbytes + lin.scales.nbytes if lin.w_packed is not None else lin.weight.nbytes
        return total


def random_weights(cfg: LlamaConfig, dtype: torch.dtype, device: torch.device | str, seed: int = 0) -> BlockWeights:
    """Random weights with a trained layer's scale: each projection keeps its input's magnitude."""
    g = torch.Generator().manual_seed(seed)
    linears = {}
    for name, (n, k) in cfg.projection_shapes().items():
        w = torch.randn(n, k, generator=g) / math.sqrt(k)
        linears[name] = Linear(w.to(device=device, dtype=dtype))
    norms = [(1.0 + 0.1 * torch.randn(cfg.hidden_size, generator=g)).to(device=device, dtype=dtype) for _ in range(2)]
    return BlockWeights(norms[0], norms[1], linears)


def quantize_w4(weight: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric round-to-nearest 4-bit quantization, one scale per group of `group_size` inputs.

    weight: (N, K). Returns w_packed (N, K // 2) uint8 in the course's format (code q means (q - 8) * scale)
    and scales (N, K // group_size) in weight's dtype. Codes 1..15 are used, so that +-7 scales are symmetric.
    """
    n, k = weight.shape
    groups = weight.float().reshape(n, k // group_size, group_size)  # (N, K/G, G)
    scales = groups.abs().amax(dim=-1).clamp_min(1e-8) / 7.0  # (N, K/G)
    scales = scales.to(weight.dtype)  # round the scale first, so codes are chosen against the scale stored
    q = torch.round(groups / scales.float()[..., None]).clamp(-7, 7) + 8
    return pack_int4(q.reshape(n, k).to(torch.uint8)), scales


def dequantize_w4(w_packed: torch.Tensor, scales: torch.Tensor, group_size: int) -> torch.Tensor:
    """(N, K) dense weights, in scales' dtype, that the codes stand for."""
    q = unpack_int4(w_packed).float() - 8.0  # (N, K)
    return (q * scales.float().repeat_interleave(group_size, dim=1)).to(scales.dtype)


def quantized(weights: BlockWeights, group_size: int) -> BlockWeights:
    """The weights as W4A16 codes, with each dense matrix replaced by what its codes stand for.

    A block run on the dense matrices then computes what the W4A16 kernels compute, so the two can be
    compared without the quantization error in between.
    """
    linears = {}
    for name, lin in weights.linears.items():
        w_packed, scales = quantize_w4(lin.weight, group_size)
        linears[name] = Linear(dequantize_w4(w_packed, scales, group_size), w_packed, scales)
    return BlockWeights(weights.attn_norm, weights.ffn_norm, linears)


# The projections that read the same input, and the one wider projection each group becomes when fused.
FUSED_PROJECTIONS: dict[str, tuple[str, ...]] = {"wqkv": ("wq", "wk", "wv"), "w_gate_up": ("w_gate", "w_up")}


def fuse_projections(weights: BlockWeights) -> BlockWeights:
    """The same block with q, k and v as one projection (wqkv) and gate and up as another (w_gate_up), their
    rows stacked: one call reads h once and launches once where there were three and two, as vLLM's
    QKVParallelLinear and MergedColumnParallelLinear do. Each row of W4A16 codes and scales belongs to its
    output channel, so the codes stack the same way. The block computes the same numbers either way."""

    def stacked(group: list[Linear], field: str) -> torch.Tensor | None:
        parts = [getattr(lin, field) for lin in group]
        return None if any(t is None for t in parts) else torch.cat(parts)  # (sum of N, ...)

    linears = dict(weights.linears)
    for fused, names in FUSED_PROJECTIONS.items():
        group = [linears.pop(name) for name in names]
        linears[fused] = Linear(*(stacked(group, f) for f in ("weight", "w_packed", "scales")))
    return BlockWeights(weights.attn_norm, weights.ffn_norm, linears)


@dataclass
class Rotary:
    """RoPE tables for positions 0 .. max_positions - 1, in the two layouts the two implementations want."""

    cos: torch.Tensor  # (P, D/2) float32: the course's rope kernel
    sin: torch.Tensor
    cos_full: torch.Tensor  # (P, D) in the activations' dtype: Hugging Face's rotate_half form
    sin_full: torch.Tensor


def rotary_tables(cfg: LlamaConfig, max_positions: int, dtype: torch.dtype, device: torch.device | str) -> Rotary:
    inv_freq = cfg.rope_base ** (-torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim)  # (D/2,)
    angles = torch.arange(max_positions, dtype=torch.float64)[:, None] * inv_freq[None, :]  # (P, D/2)
    cos, sin = angles.cos(), angles.sin()
    return Rotary(cos.float().to(device), sin.float().to(device),
                  torch.cat((cos, cos), -1).to(device=device, dtype=dtype),
                  torch.cat((sin, sin), -1).to(device=device, dtype=dtype))  # fmt: skip


@dataclass
class KVCache:
    k: torch.Tensor  # (B, Hkv, L, D)
    v: torch.Tensor  # (B, Hkv, L, D)

    @classmethod
    def empty(cls, cfg: LlamaConfig, batch: int, length: int, dtype: torch.dtype, device: torch.device | str) -> KVCache:
        shape = (batch, cfg.n_kv_heads, length, cfg.head_dim)
        return cls(torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device))


# --------------------------------------------------------------------------------------------------
# The operations, two ways
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ops:
    """Which implementation runs each operation of the block; `names` says so in words."""

    rmsnorm: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]  # (M, H), (H,), eps -> (M, H)
    rope: Callable[[torch.Tensor, Rotary, int], torch.Tensor]  # (B, h, S, D) at positions start.. -> same
    attention: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor]  # -> (B, Hq, S, D)
    swiglu: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (M, I), (M, I) -> (M, I)
    linear: Callable[[torch.Tensor, Linear], torch.Tensor]  # (M, K) -> (M, N)
    names: dict[str, str] = field(default_factory=dict)


def torch_rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()  # Hugging Face's LlamaRMSNorm: statistics in float32, the weight applied in x's dtype
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def torch_rope(x: torch.Tensor, rotary: Rotary, start: int) -> torch.Tensor:
    seq = x.shape[2]
    cos, sin = rotary.cos_full[start : start + seq], rotary.sin_full[start : start + seq]  # (S, D)
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def torch_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    # Under torch.compile with dynamic shapes `seq > 1` is a symbolic bool, which SDPA's is_causal refuses;
    # branching on it makes the compiler decide it (a guard) and pass SDPA a constant.
    if causal:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=True)


def torch_swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return F.silu(gate) * up


def torch_linear(x: torch.Tensor, lin: Linear) -> torch.Tensor:
    return F.linear(x, lin.weight)


def torch_ops() -> Ops:
    return Ops(torch_rmsnorm, torch_rope, torch_attention, torch_swiglu, torch_linear,
               names=dict.fromkeys(KERNELS, "PyTorch"))  # fmt: skip


# The course kernel behind each switch, and the assignment it comes from.
KERNELS: dict[str, str] = {
    "rmsnorm": "rmsnorm",
    "rope": "rope",
    "attention": "flash_attention",
    "swiglu": "swiglu",
    "w4a16": "quant_matmul",
}


def course_ops(kernels: dict[str, ModuleType], switched_on: Iterable[str], group_size: int = 128) -> Ops:
    """PyTorch's operations with the named ones (keys of KERNELS) replaced by the course's kernels.

    kernels maps a slug to its kernels.py module (see `load_course_kernels`). With "w4a16" on, every
    projection runs the W4A16 kernel on the Linear's codes, so the weights must come from `quantized()`.
    """
    on = set(switched_on)
    unknown = on - set(KERNELS)
    if unknown:
        raise ValueError(f"unknown kernel switch(es) {sorted(unknown)}: choose from {list(KERNELS)}.")
    ops = torch_ops()
    names = dict(ops.names)
    chosen: dict[str, Any] = {}
    if "rmsnorm" in on:
        norm = kernels["rmsnorm"].rmsnorm

        def course_rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
            return norm(x.contiguous(), weight, eps)

        chosen["rmsnorm"] = course_rmsnorm
    if "rope" in on:
        rope = kernels["rope"].rope

        def course_rope(x: torch.Tensor, rotary: Rotary, start: int) -> torch.Tensor:
            seq = x.shape[2]
            # The kernel wants (B, h, S, D) contiguous; a projection's output viewed per head is not.
            return rope(x.contiguous(), rotary.cos[start : start + seq], rotary.sin[start : start + seq])

        chosen["rope"] = course_rope
    if "attention" in on:
        flash = kernels["flash_attention"].flash_attention

        def course_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
            return flash(q.contiguous(), k.contiguous(), v.contiguous(), causal=causal)

        chosen["attention"] = course_attention
    if "swiglu" in on:
        swiglu = kernels["swiglu"].swiglu

        def course_swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
            # The kernel wants contiguous inputs; the halves of a fused gate-up projection are strided when M > 1.
            return swiglu(gate.contiguous(), up.contiguous())

        chosen["swiglu"] = course_swiglu
    if "w4a16" in on:
        chosen["linear"] = _w4a16_linear(kernels["quant_matmul"], group_size)
    for switch in on:
        names[switch] = "course"
    return replace(ops, **chosen, names=names)


def _w4a16_linear(module: ModuleType, group_size: int) -> Callable[[torch.Tensor, Linear], torch.Tensor]:
    """The W4A16 kernel as a projection; a module's optional prepare() re-lays each weight once, on first use."""
    prepare = getattr(module, "prepare", None)
    prepared: dict[int, Any] = {}

    def linear(x: torch.Tensor, lin: Linear) -> torch.Tensor:
        if lin.w_packed is None or lin.scales is None:
            raise ValueError("the W4A16 projections need quantized weights: build them with quantized(weights, group_size).")
        key = id(lin.w_packed)
        if key not in prepared:
            made = prepare(lin.w_packed, lin.scales, group_size) if prepare is not None else None
            prepared[key] = made if made is not None else lin.w_packed
        return module.w4a16_matmul(x, prepared[key], lin.scales, group_size)

    return linear


# --------------------------------------------------------------------------------------------------
# The block
# --------------------------------------------------------------------------------------------------


def run_stage(name: str, fn: Callable[..., torch.Tensor], *args: Any) -> torch.Tensor:
    """How block_forward runs each step; a profiler passes its own to time the steps one by one."""
    return fn(*args)


def block_forward(
    x: torch.Tensor,
    weights: BlockWeights,
    cfg: LlamaConfig,
    ops: Ops,
    rotary: Rotary,
    start: int = 0,
    cache: KVCache | None = None,
    stage: Callable[..., torch.Tensor] = run_stage,
) -> torch.Tensor:
    """One decoder block on x (B, S, hidden) at positions start .. start + S - 1; returns (B, S, hidden).

    With a cache, the new keys and values are written into it at those positions and attention reads every
    position up to the last new one. S > 1 (prefill) starts at position 0; S == 1 (decode) may start anywhere.
    """
    batch, seq, hidden = x.shape
    if seq > 1 and start != 0:
        raise ValueError("block_forward: a prompt of several tokens must start at position 0 (no chunked prefill).")
    hq, hkv, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    lin = weights.linears
    x2 = x.reshape(batch * seq, hidden)  # (M, H), M = B * S tokens

    h = stage("attn_norm", ops.rmsnorm, x2, weights.attn_norm, cfg.rms_eps)
    if "wqkv" in lin:  # fused (fuse_projections): one projection, its columns split into q, k and v
        q, k, v = stage("qkv_proj", ops.linear, h, lin["wqkv"]).split([hq * d, hkv * d, hkv * d], dim=1)
    else:
        q, k, v = (stage(f"{n}_proj", ops.linear, h, lin[f"w{n}"]) for n in "qkv")
    q = q.view(batch, seq, hq, d).transpose(1, 2)  # (B, Hq, S, D)
    k = k.view(batch, seq, hkv, d).transpose(1, 2)  # (B, Hkv, S, D)
    v = v.view(batch, seq, hkv, d).transpose(1, 2)
    q = stage("rope_q", ops.rope, q, rotary, start)
    k = stage("rope_k", ops.rope, k, rotary, start)
    if cache is not None:
        end = start + seq
        stage("cache_write", _write_cache, cache, k, v, start)
        k, v = cache.k[:, :, :end], cache.v[:, :, :end]  # (B, Hkv, end, D)
    o = stage("attention", ops.attention, q, k, v, seq > 1)  # (B, Hq, S, D)
    o = stage("o_layout", _heads_to_rows, o)  # (M, Hq * D)
    x2 = stage("residual_1", torch.add, x2, stage("o_proj", ops.linear, o, lin["wo"]))

    h = stage("ffn_norm", ops.rmsnorm, x2, weights.ffn_norm, cfg.rms_eps)
    if "w_gate_up" in lin:
        gate, up = stage("gate_up_proj", ops.linear, h, lin["w_gate_up"]).chunk(2, dim=1)  # (M, I) each, strided
    else:
        gate = stage("gate_proj", ops.linear, h, lin["w_gate"])  # (M, I)
        up = stage("up_proj", ops.linear, h, lin["w_up"])
    a = stage("swiglu", ops.swiglu, gate, up)
    x2 = stage("residual_2", torch.add, x2, stage("down_proj", ops.linear, a, lin["w_down"]))
    return x2.view(batch, seq, hidden)


def trainable(x: torch.Tensor, weights: BlockWeights) -> dict[str, torch.Tensor]:
    """Leaf copies of x ("x"), the two norms' weights and every projection, each requiring its gradient."""
    leaves = {"x": x, "attn_norm": weights.attn_norm, "ffn_norm": weights.ffn_norm}
    leaves |= {name: lin.weight for name, lin in weights.linears.items()}
    return {name: t.detach().clone().requires_grad_() for name, t in leaves.items()}


def train_step(leaves: dict[str, torch.Tensor], cfg: LlamaConfig, ops: Ops, rotary: Rotary, grad_out: torch.Tensor,
               forward: Callable[..., torch.Tensor] | None = None) -> dict[str, torch.Tensor]:  # fmt: skip
    """One training step's forward and backward through the block (no cache, positions from 0) on the leaves
    of `trainable`: returns the gradients of sum(out * grad_out), by leaf name.

    The course's rmsnorm, rope, swiglu and flash attention carry their own backward kernels; the projections'
    gradients come from PyTorch's matmuls (cuBLAS on a GPU). `forward` replaces block_forward (a compiled one).
    """
    for t in leaves.values():
        t.grad = None
    names = [n for n in leaves if n not in ("x", "attn_norm", "ffn_norm")]
    w = BlockWeights(leaves["attn_norm"], leaves["ffn_norm"], {name: Linear(leaves[name]) for name in names})
    out = (forward or block_forward)(leaves["x"], w, cfg, ops, rotary)
    out.backward(grad_out)
    return {name: t.grad for name, t in leaves.items()}


def block_gradients(x: torch.Tensor, weights: BlockWeights, cfg: LlamaConfig, ops: Ops, rotary: Rotary,
                    grad_out: torch.Tensor, forward: Callable[..., torch.Tensor] | None = None) -> dict[str, torch.Tensor]:  # fmt: skip
    """The gradients of one training step on fresh leaves (see train_step)."""
    return train_step(trainable(x, weights), cfg, ops, rotary, grad_out, forward)


def reference_block(x: torch.Tensor, weights: BlockWeights, cfg: LlamaConfig, dtype: torch.dtype, start: int = 0,
                    cache: KVCache | None = None) -> torch.Tensor:  # fmt: skip
    """The PyTorch block in a wider dtype (float32 or float64), on the same weights and a copy of the cache:
    what the course's blocks are checked against."""
    rotary = rotary_tables(cfg, start + x.shape[1], dtype, x.device)
    cache_ref = KVCache(cache.k.to(dtype), cache.v.to(dtype)) if cache is not None else None
    return block_forward(x.to(dtype), weights.to(dtype), cfg, torch_ops(), rotary, start, cache_ref)


def _write_cache(cache: KVCache, k: torch.Tensor, v: torch.Tensor, start: int) -> torch.Tensor:
    end = start + k.shape[2]
    cache.k[:, :, start:end] = k
    cache.v[:, :, start:end] = v
    return cache.k


def _heads_to_rows(o: torch.Tensor) -> torch.Tensor:
    batch, _, seq, _ = o.shape
    return o.transpose(1, 2).reshape(batch * seq, -1)  # a copy unless o is a transposed view already


# Which kind of work each stage is, for the breakdown of where the time goes.
STAGE_KIND: dict[str, str] = {
    "attn_norm": "rmsnorm", "ffn_norm": "rmsnorm",
    "q_proj": "projections", "k_proj": "projections", "v_proj": "projections", "o_proj": "projections",
    "gate_proj": "projections", "up_proj": "projections", "down_proj": "projections",
    "qkv_proj": "projections", "gate_up_proj": "projections",
    "rope_q": "rope", "rope_k": "rope", "attention": "attention", "swiglu": "swiglu",
    "cache_write": "other", "o_layout": "other", "residual_1": "other", "residual_2": "other",
}  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Choosing kernels: yours where they run, the reference solutions elsewhere
# --------------------------------------------------------------------------------------------------


def _probe(slug: str, module: ModuleType, device: torch.device) -> None:
    """Call the slug's public function once on a small input; raises what it raises."""
    g = torch.Generator().manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g).to(device)

    if slug == "rmsnorm":
        module.rmsnorm(randn(3, 64), randn(64))
    elif slug == "rope":
        module.rope(randn(1, 2, 3, 32), randn(3, 16), randn(3, 16))
    elif slug == "flash_attention":
        module.flash_attention(randn(1, 2, 5, 32), randn(1, 1, 5, 32), randn(1, 1, 5, 32), causal=True)
    elif slug == "swiglu":
        module.swiglu(randn(3, 40), randn(3, 40))
    elif slug == "quant_matmul":
        w_packed, scales = quantize_w4(torch.randn(16, 128, generator=g), 128)
        module.w4a16_matmul(randn(1, 128), w_packed.to(device), scales.to(device), 128)
    else:
        raise ValueError(f"no probe for {slug!r}")


def _is_todo(err: BaseException) -> bool:
    """True when err comes from a stub's NotImplementedError (the interpreter wraps it in its own error)."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, NotImplementedError) or "NotImplementedError" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def load_course_kernels(device: torch.device, prefer: str = "assignments") -> tuple[dict[str, ModuleType], dict[str, str]]:
    """For each kernel of the block, your assignment's module if it runs, else the reference solution's.

    Returns (modules by slug, a sentence per slug saying which was chosen and why).
    """
    modules: dict[str, ModuleType] = {}
    why: dict[str, str] = {}
    for slug in KERNELS.values():
        if prefer == "solutions":
            modules[slug], why[slug] = load_kernels(slug, "solutions"), "the reference solution (asked for)"
            continue
        try:
            mine = load_kernels(slug, "assignments")
            _probe(slug, mine, device)
        except Exception as err:  # a TODO, or a bug in the student's kernel: say which, and use the solution
            why[slug] = ("the reference solution: your assignments/ version still has a TODO" if _is_todo(err)
                         else f"the reference solution: yours raised {type(err).__name__}: {err}")
        else:
            modules[slug], why[slug] = mine, "yours (assignments/)"
            continue
        modules[slug] = load_kernels(slug, "solutions")
    return modules, why


# --------------------------------------------------------------------------------------------------
# Counting: the work a block does
# --------------------------------------------------------------------------------------------------


def block_flops(cfg: LlamaConfig, batch: int, seq: int, keys: int, causal: bool) -> float:
    """Multiply-adds times two: the projections, plus attention's two matrix products."""
    projections = 2 * batch * seq * sum(n * k for n, k in cfg.projection_shapes().values())
    pairs = batch * seq * keys * (0.5 if causal else 1.0)  # causal prefill: about half the (query, key) pairs
    return projections + 4 * cfg.n_heads * cfg.head_dim * pairs


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| over all elements, in float64."""
    diff = (out.double() - ref.double()).norm()
    return (diff / ref.double().norm()).item()


def work_by_kind(cfg: LlamaConfig, batch: int, seq: int, keys: int, weight_bytes: float = 2.0,
                 act_bytes: int = 2) -> dict[str, tuple[float, float]]:  # fmt: skip
    """(FLOPs, bytes) each kind of stage must at least do in one block call: the least traffic is reading
    each input and writing each output once. weight_bytes is per weight (2 for bf16, about 0.53 for W4A16
    with one 16-bit scale per 128 weights). `keys` is how many positions attention reads (seq in prefill)."""
    m, h, i = batch * seq, cfg.hidden_size, cfg.intermediate_size
    qs, kvs = cfg.q_size, cfg.kv_size
    shapes = cfg.projection_shapes().values()
    causal = seq > 1
    pairs = batch * seq * keys * (0.5 if causal else 1.0)
    return {
        "rmsnorm": (2 * 4.0 * m * h, 2 * (2 * m * h * act_bytes + h * act_bytes)),
        "projections": (2.0 * m * sum(n * k for n, k in shapes),
                        sum(n * k * weight_bytes + m * (n + k) * act_bytes for n, k in shapes)),
        "rope": (6.0 * m * (qs + kvs), 2.0 * m * (qs + kvs) * act_bytes),
        "attention": (4.0 * cfg.n_heads * cfg.head_dim * pairs,
                      (2.0 * m * qs + 2 * batch * keys * kvs) * act_bytes),
        "swiglu": (5.0 * m * i, 3.0 * m * i * act_bytes),
        "other": (2.0 * m * h, 2 * 3.0 * m * h * act_bytes),  # the two residual adds
    }  # fmt: skip
