"""Grading spec for assignment 08, flash attention: flash_attention(q, k, v, causal, scale), its backward
and its decode path.

Parts: the forward on block-aligned shapes (forward), with the causal mask (causal), with fewer KV heads
than query heads (gqa), and on lengths that are multiples of no block, Sq != Sk and every head dim
(ragged); bonuses: gradients through autograd (backward), one query row (decode), the latter also
timed against SDPA, and one query row over an INT8 KV cache (kv_int8) and over an INT4 KIVI cache (kv_int4),
each judged against the float64 attention over the dequantized cache, so that the kernel is graded apart from
the quantization's own error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from autograder.spec import DTYPES, Assignment, Case, Params, Part, SpeedCase, Tensors, Tolerance, WRITE_SLACK, bonus_function, read_fenced
from course.kivi import dequantize_kivi, kivi_bytes, quantize_kivi

# --------------------------------------------------------------------------------------------------
# Inputs. q and k are scaled so that the scores scale * q.k have a standard deviation drawn per seed
# between 1.5 and 3 (peaked like a trained model's, not the flat softmax of raw randn), or exactly
# `score_std` when a case sets it: a large one (40) drives the row maxima past 88, where exp overflows
# in float32 unless the maximum is subtracted first.
# --------------------------------------------------------------------------------------------------


def _uniform(g: torch.Generator, lo: float, hi: float) -> float:
    return lo + (hi - lo) * torch.rand((), generator=g, device=g.device).item()


def dims(params: Params) -> tuple[int, int, int, int, int, int]:
    """(B, Hq, Hkv, Sq, Sk, D) of a case."""
    batch, n_heads_q, seqlen_q, head_dim = params["shape"]
    return batch, n_heads_q, params.get("kv_heads", n_heads_q), seqlen_q, params.get("seq_k", seqlen_q), head_dim


def scale_of(params: Params) -> float:
    return params.get("scale") or 1.0 / math.sqrt(params["shape"][3])


def make_forward_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    batch, n_heads_q, n_heads_kv, seqlen_q, seqlen_k, head_dim = dims(params)
    dtype = DTYPES[params["dtype"]]
    score_std = params.get("score_std") or _uniform(g, 1.5, 3.0)
    # scale * q.k has standard deviation scale * sqrt(D) * a**2 when q and k are N(0, a**2).
    a = math.sqrt(score_std / (scale_of(params) * math.sqrt(head_dim)))
    q = torch.randn((batch, n_heads_q, seqlen_q, head_dim), generator=g, device=device) * a
    k = torch.randn((batch, n_heads_kv, seqlen_k, head_dim), generator=g, device=device) * a
    v = torch.randn((batch, n_heads_kv, seqlen_k, head_dim), generator=g, device=device) * _uniform(g, 0.5, 2.0)
    if params.get("dist") == "hostile":
        q, k = _hostile_scores(q, k, scale_of(params))
    elif params.get("dist") == "huge":  # |v| up to HUGE_V, never past it
        v = v.clamp(-4.0, 4.0) / 4.0 * HUGE_V[params["dtype"]]
    return read_fenced({"q": q.to(dtype), "k": k.to(dtype), "v": v.to(dtype)})


# The hostile distribution "hostile": every query row one of HOSTILE_ROWS, in turn (counting rows over
# batch, heads and positions, so a decode case mixes them across heads). Head dims 0 and 1 carry the
# construction, the others the usual random scores:
# - "negative": every score near -120 (q[0] = 1 against k[0] = -120 / scale). A running maximum started at
#   0 instead of -inf makes every exp2(s - m) underflow to 0 (exp2(-173) is below float32's smallest
#   number), and the row 0 / 0 = NaN.
# - "rising": the same, plus a ramp from 0 to +30 along the keys (q[1] = 1 against k[1]): the row maximum
#   arrives in the last key block and stays negative, so every block's partial sums must be rescaled,
#   including while the running maximum is below zero.
# - "equal": q = 0, every score exactly 0: the uniform average of the values.
# - "normal": the usual random scores.
# "huge" (GPU tier): values up to HUGE_V, near float16's largest (65504), where an accumulator kept in
# float16 (up to Sk times |v|) overflows although the output, a weighted average of v, does not.
HOSTILE_ROWS = ("negative", "rising", "equal", "normal")
HOSTILE_OFFSET, HOSTILE_RAMP = -120.0, 30.0
HUGE_V = {"float32": 1e30, "bfloat16": 1e30, "float16": 6e4}


def _hostile_scores(q: torch.Tensor, k: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """q (B, Hq, Sq, D), k (B, Hkv, Sk, D) rebuilt so that query row r has scores of kind HOSTILE_ROWS[r % 4]."""
    # On a grid of 2**-6 every product q_d k_d is a multiple of 2**-12, so float32 sums them exactly while
    # they stay below 4096 (D = 128: 1700 + 340): an honest kernel's scores then carry only the rounding
    # of the final scaling, not a dozen roundings at the offset's magnitude.
    q, k = (torch.round(t * 64) / 64 for t in (q, k))
    seqlen_k = k.shape[2]
    k[..., 0] = HOSTILE_OFFSET / scale
    k[..., 1] = HOSTILE_RAMP / scale * torch.arange(seqlen_k, device=k.device) / max(1, seqlen_k - 1)
    rows = q.reshape(-1, q.shape[-1])  # a view: (B * Hq * Sq, D)
    kind = torch.arange(rows.shape[0], device=q.device) % len(HOSTILE_ROWS)
    rows[:, 0] = (kind <= 1).to(q.dtype)
    rows[:, 1] = (kind == 1).to(q.dtype)
    rows[kind == 2] = 0.0
    return q, k


# --------------------------------------------------------------------------------------------------
# The INT8 KV cache (bonus kv_int8): symmetric per token and head, k = k_q * k_scale[..., None], codes in
# [-127, 127], float32 scales. The grader quantizes the cache itself (quantize_int8, in float32), so that
# a submission is graded on the cache it is given. The hostile distribution "spread" scales each token's
# V by 10^u, u uniform in [-2, 2], and its K by 10^u, u in [-0.5, 0.5]: a scale read from the wrong token,
# head or split is then off by up to 10^4; "hostile" is the decode's (scores near -120, rising, equal), with
# every scale a power of two: the dequantized cache is then exact in float16 and bfloat16, as the decode's
# hostile inputs are, so that a kernel that dequantizes into q's dtype before its dots is not judged on
# the rounding of values near 1400 (the -120 offset's keys), which no scaling of the tolerance separates
# from a real error.
# --------------------------------------------------------------------------------------------------

KV_SPREAD_DECADES = {"k": 0.5, "v": 2.0}


def quantize_int8(t: torch.Tensor, pow2: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, H, S, D) -> int8 codes and float32 per-token scales (B, H, S): max|t| / 127 (or, with pow2, the power
    of two at or above it), codes rounded to nearest."""
    t = t.float()
    scale = t.abs().amax(-1) / 127.0
    if pow2:
        scale = torch.where(scale > 0, torch.exp2(torch.ceil(torch.log2(scale))), scale)
    codes = torch.round(t / torch.where(scale > 0, scale, 1.0)[..., None]).clamp(-127, 127).to(torch.int8)
    return codes, scale


def make_kv_int8_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    dense = make_forward_inputs(params, g, device)
    k, v = dense["k"].float(), dense["v"].float()
    if params.get("dist") == "spread":
        for name, t in (("k", k), ("v", v)):
            d = KV_SPREAD_DECADES[name]
            t *= 10.0 ** (torch.rand(t.shape[:3], generator=g, device=device) * 2 * d - d)[..., None]
    pow2 = params.get("dist") == "hostile"
    k_q, k_scale = quantize_int8(k, pow2)
    v_q, v_scale = quantize_int8(v, pow2)
    return read_fenced({"q": dense["q"], "k_q": k_q, "k_scale": k_scale, "v_q": v_q, "v_scale": v_scale})


def dequantized(inputs: Tensors, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    k = inputs["k_q"].to(dtype) * inputs["k_scale"].to(dtype)[..., None]
    v = inputs["v_q"].to(dtype) * inputs["v_scale"].to(dtype)[..., None]
    return k, v


# --------------------------------------------------------------------------------------------------
# The INT4 KIVI cache (bonus kv_int4, course/kivi.py): K per channel over groups of `group_size` tokens, V per
# token, both asymmetric (a scale and a zero), 4-bit codes two a byte. The grader quantizes the cache itself
# (quantize_kivi, float32). "spread" gives K outlier channels (each channel scaled by 10^u, u in [-1, 1], and
# shifted by up to 4 of its own scale), which is why KIVI quantizes K per channel, and scales each token's V by
# 10^u, u in [-2, 2]: a scale or zero read from the wrong channel, group, token or head is then far off. "hostile"
# is the decode's, with power-of-two scales as for kv_int8.
# --------------------------------------------------------------------------------------------------

KV_INT4_GROUP = 32  # KIVI's group of tokens for K, when a case names none


def make_kv_int4_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    dense = make_forward_inputs(params, g, device)
    k, v = dense["k"].float(), dense["v"].float()
    if params.get("dist") == "spread":
        head_dim = k.shape[-1]
        channel = 10.0 ** (torch.rand(head_dim, generator=g, device=device) * 2 - 1)
        k = k * channel + 4 * channel * (torch.rand(head_dim, generator=g, device=device) * 2 - 1)
        v = v * 10.0 ** (torch.rand(v.shape[:3], generator=g, device=device) * 4 - 2)[..., None]
    cache = quantize_kivi(k, v, params.get("group_size", KV_INT4_GROUP), pow2=params.get("dist") == "hostile")
    return read_fenced({"q": dense["q"], **cache})


def make_backward_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    inputs = make_forward_inputs(params, g, device)
    do = torch.randn(inputs["q"].shape, generator=g, device=device)  # (B, Hq, Sq, D)
    inputs["do"] = do.to(DTYPES[params["dtype"]])
    return read_fenced(inputs)


# --------------------------------------------------------------------------------------------------
# References (float64, in the grader's process) and the PyTorch baselines (the submission's dtype).
# --------------------------------------------------------------------------------------------------


def attention64(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float) -> torch.Tensor:
    """Textbook attention in float64, the whole score matrix materialised; K/V repeated for GQA."""
    group = q.shape[1] // k.shape[1]
    k = k.double().repeat_interleave(group, dim=1)
    v = v.double().repeat_interleave(group, dim=1)
    s = q.double() @ k.transpose(-1, -2) * scale  # (B, Hq, Sq, Sk)
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def reference_forward(inputs: Tensors, params: Params) -> Tensors:
    return {"o": attention64(inputs["q"], inputs["k"], inputs["v"], params["causal"], scale_of(params))}


def reference_kv_int8(inputs: Tensors, params: Params) -> Tensors:
    """float64 attention over the dequantized cache: the kernel judged apart from the quantization."""
    k, v = dequantized(inputs)
    return {"o": attention64(inputs["q"], k, v, False, scale_of(params))}


def reference_kv_int4(inputs: Tensors, params: Params) -> Tensors:
    """float64 attention over the dequantized KIVI cache."""
    k, v = dequantize_kivi(inputs, params.get("group_size", KV_INT4_GROUP))
    return {"o": attention64(inputs["q"], k, v, False, scale_of(params))}


def reference_backward(inputs: Tensors, params: Params) -> Tensors:
    q, k, v = (inputs[n].double().requires_grad_() for n in ("q", "k", "v"))
    o = attention64(q, k, v, params["causal"], scale_of(params))
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), inputs["do"].double())
    return {"dq": dq, "dk": dk, "dv": dv}


def sdpa(inputs: Tensors, params: Params, backend: str | None = None) -> torch.Tensor:
    """PyTorch's fused attention in the inputs' dtype, on one backend ('flash', 'cudnn', ...) or its choice."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    gqa = q.shape[1] != k.shape[1]
    def call() -> torch.Tensor:
        return scaled_dot_product_attention(q, k, v, is_causal=params["causal"], scale=scale_of(params), enable_gqa=gqa)

    if backend is None:
        return call()
    chosen = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
              "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[backend]  # fmt: skip
    try:
        with sdpa_kernel(chosen):
            return call()
    except RuntimeError:  # the backend cannot run these inputs here (flash needs sm_80+ and 16 bits): PyTorch's choice
        return call()


def sdpa_flash_baseline(inputs: Tensors, params: Params) -> torch.Tensor:
    return sdpa(inputs, params, "flash")


def sdpa_baseline(inputs: Tensors, params: Params) -> torch.Tensor:
    return sdpa(inputs, params)


# --------------------------------------------------------------------------------------------------
# Calls on the submission (run in the worker process).
# --------------------------------------------------------------------------------------------------


def call_forward(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"o": module.flash_attention(inputs["q"], inputs["k"], inputs["v"], params["causal"], params.get("scale"))}


def call_backward(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    q, k, v = (inputs[n].detach().requires_grad_() for n in ("q", "k", "v"))
    o = module.flash_attention(q, k, v, params["causal"], params.get("scale"))
    if not isinstance(o, torch.Tensor) or o.grad_fn is None:
        raise TypeError(
            "flash_attention returned a tensor with no autograd history: route the call through "
            "FlashAttentionFunction.apply so that the backward can run."
        )
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), inputs["do"])
    return {"dq": dq, "dk": dk, "dv": dv}


def speed_forward(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return module.flash_attention(inputs["q"], inputs["k"], inputs["v"], params["causal"], params.get("scale"))


# Not in the assignment's `api`: a kernels.py written before this bonus existed keeps every other part graded
# (bonus_function).
KV_INT8_SIGNATURE = "flash_decode_int8(q, k_q, k_scale, v_q, v_scale, scale=None)"


def call_kv_int8(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    names = ("q", "k_q", "k_scale", "v_q", "v_scale")
    fn = bonus_function(module, "flash_attention", "flash_decode_int8", KV_INT8_SIGNATURE)
    return {"o": fn(*(inputs[n] for n in names), params.get("scale"))}


def speed_kv_int8(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return call_kv_int8(module, inputs, params)["o"]


def kv_int8_bytes(params: Params) -> int:
    """Read q, the INT8 codes of K and V and their float32 scales once, write o once."""
    batch, n_heads_q, n_heads_kv, _, seqlen_k, head_dim = dims(params)
    size = DTYPES[params["dtype"]].itemsize
    return 2 * batch * n_heads_q * head_dim * size + 2 * batch * n_heads_kv * seqlen_k * (head_dim + 4)


KV_INT4_SIGNATURE = "flash_decode_int4(q, k_packed, k_scale, k_zero, v_packed, v_scale, v_zero, group_size=32, scale=None)"
KV_INT4_NAMES = ("q", "k_packed", "k_scale", "k_zero", "v_packed", "v_scale", "v_zero")


def call_kv_int4(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    fn = bonus_function(module, "flash_attention", "flash_decode_int4", KV_INT4_SIGNATURE)
    group_size = params.get("group_size", KV_INT4_GROUP)
    return {"o": fn(*(inputs[n] for n in KV_INT4_NAMES), group_size, params.get("scale"))}


def speed_kv_int4(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return call_kv_int4(module, inputs, params)["o"]


def kv_int4_bytes(params: Params) -> int:
    """Read q and the KIVI cache (codes, K's scales and zeros per group, V's per token) once, write o once."""
    batch, n_heads_q, n_heads_kv, _, seqlen_k, head_dim = dims(params)
    size = DTYPES[params["dtype"]].itemsize
    cache = kivi_bytes(batch, n_heads_kv, seqlen_k, head_dim, params.get("group_size", KV_INT4_GROUP))
    return 2 * batch * n_heads_q * head_dim * size + cache


def _dense_int4_cache(inputs: Tensors, params: Params) -> Tensors:
    """The baseline's cache: the dequantized KIVI K and V in q's dtype, made outside the timed region."""
    k, v = dequantize_kivi(inputs, params.get("group_size", KV_INT4_GROUP), torch.float32)
    return {"k": k.to(inputs["q"].dtype).contiguous(), "v": v.to(inputs["q"].dtype).contiguous()}


def _dense_cache(inputs: Tensors, params: Params) -> Tensors:
    """The baseline's cache: the dequantized K and V in q's dtype, made outside the timed region."""
    k, v = dequantized(inputs, torch.float32)
    return {"k": k.to(inputs["q"].dtype).contiguous(), "v": v.to(inputs["q"].dtype).contiguous()}


def sdpa_dense_baseline(inputs: Tensors, params: Params) -> torch.Tensor:
    """What decode costs with the unquantized cache: SDPA over 16-bit K and V."""
    return sdpa(inputs, params)


def attention_flops(params: Params) -> int:
    """4 * B * Hq * Sq * Sk * D (two matmuls), halved under the causal mask, as FlashAttention counts."""
    batch, n_heads_q, _, seqlen_q, seqlen_k, head_dim = dims(params)
    flops = 4 * batch * n_heads_q * seqlen_q * seqlen_k * head_dim
    return flops // 2 if params["causal"] else flops


def attention_bytes(params: Params) -> int:
    """Read q, k, v once and write o once."""
    batch, n_heads_q, n_heads_kv, seqlen_q, seqlen_k, head_dim = dims(params)
    size = DTYPES[params["dtype"]].itemsize
    return (2 * batch * n_heads_q * seqlen_q + 2 * batch * n_heads_kv * seqlen_k) * head_dim * size


# --------------------------------------------------------------------------------------------------
# Tolerances.
#
# Practice in the field (FlashAttention's own tests) is to compare a kernel with a high-precision
# reference and allow a small multiple of the error that PyTorch's attention makes in the same low
# precision. The error is measured as the smallest c with |out - ref| <= c * (scale + |ref|) for every
# element, scale as below. Two sources:
#
# 1. On an H200 (results/h200/tune_flash_attention.txt, the calibration against SDPA), SDPA's flash,
#    cuDNN, memory-efficient and default backends on every GPU case below, one seed each, scale = mean|ref|
#    of the whole tensor. Worst c of any backend:
#
#                 forward    backward (dq, dk, dv)
#     float32     4.7e-5     2.7e-5     (the score_std=40 case; 2e-5 elsewhere)
#     float16     1.4e-3     8.6e-3
#     bfloat16    1.1e-2     5.8e-2
#
# 2. On a CPU, the same computation as a FlashAttention kernel rounds it (scores and sums in float32,
#    P and dS rounded to the input dtype before their matmuls; tests/test_tolerances_flash_attention.py
#    has it), over several seeds and at the speed cases' 4x32x4096x128. It matches (1) where both
#    exist, and showed two things one seed per case had hidden:
#    - with a tensor-wide scale, the first rows of a long causal sequence (which average a handful of
#      values, so they are several times larger than the typical row) reach c = 2.2e-2 in bfloat16 at
#      S = 4096: the solution lost the causal speed case to 1 element of 67 million in an H200 run.
#      Hence scale="row_or_tensor": an element's scale is the larger of its row's mean|ref| and the tensor's. Then
#      the forward's c stays at 8e-3 (bfloat16), 1.1e-3 (float16), 1.1e-5 (float32) at every shape;
#    - the bfloat16 backward reaches c = 9.6e-2 on some seeds (dq, on the (2x4x300x32) Sk 513 case).
#
# Each tolerance is about 2 to 3 times the worst honest c. The solution's worst on the H200 GPU tier
# (with the tensor-wide scale, one seed) was 4.6e-5, 1.3e-3, 9.6e-3 forward and 2.1e-5, 7.8e-3, 5.4e-2
# backward. The same computation in the next lower precision (tf32 for float32, bfloat16 for float16,
# float8 e4m3 for bfloat16) lands at 4e-3, 3e-2 and 0.25 or more forward and 4e-3, 3.5e-2 and 0.6
# backward, and fails; so do a zero output and q passed through (tests/test_tolerances_flash_attention.py).
# --------------------------------------------------------------------------------------------------

TOLERANCES = {
    "float32": Tolerance(rtol=1e-4, atol=1e-4, scale="row_or_tensor"),
    "float16": Tolerance(rtol=3e-3, atol=3e-3, scale="row_or_tensor"),
    "bfloat16": Tolerance(rtol=2.5e-2, atol=2.5e-2, scale="row_or_tensor"),
}
# Gradients go through three more matmuls and the rounding of P and dS to the input dtype; dK and dV
# sum over every query (and over the query heads of a group).
BACKWARD_TOLERANCES = {
    "float32": Tolerance(rtol=6e-5, atol=6e-5, scale="row_or_tensor"),
    "float16": Tolerance(rtol=2e-2, atol=2e-2, scale="row_or_tensor"),
    "bfloat16": Tolerance(rtol=2e-1, atol=2e-1, scale="row_or_tensor"),
}

# --------------------------------------------------------------------------------------------------
# Cases. CPU tier: float32 under the interpreter, tiny (S <= ~300, D 16/32), each crossing several
# blocks of any size a student might pick. GPU tier: each case in float32, float16 and bfloat16, at
# lengths up to 2048 so the float64 reference stays cheap.
# --------------------------------------------------------------------------------------------------

CPU_FORWARD = [
    {"shape": [1, 2, 64, 16], "causal": False},
    {"shape": [2, 2, 128, 32], "causal": False},
    {"shape": [1, 2, 256, 16], "causal": False, "scale": 0.3},
    {"shape": [1, 2, 128, 16], "causal": False, "dist": "hostile"},
]
CPU_CAUSAL = [
    {"shape": [1, 2, 64, 16], "causal": True},
    {"shape": [2, 2, 128, 32], "causal": True},
    {"shape": [1, 2, 256, 16], "causal": True, "scale": 0.5},
    {"shape": [1, 2, 128, 32], "causal": True, "dist": "hostile"},
]
CPU_GQA = [
    {"shape": [1, 4, 64, 16], "kv_heads": 1, "causal": False},
    {"shape": [2, 6, 64, 32], "kv_heads": 2, "causal": True},
    {"shape": [1, 4, 128, 16], "kv_heads": 1, "causal": False},
]
CPU_RAGGED = [
    {"shape": [1, 2, 70, 16], "causal": False},
    {"shape": [2, 3, 45, 32], "causal": True},
    {"shape": [1, 2, 37, 16], "seq_k": 300, "causal": False},
    {"shape": [1, 4, 100, 32], "kv_heads": 2, "seq_k": 17, "causal": False},
    {"shape": [1, 2, 33, 64], "causal": True},
    {"shape": [1, 1, 19, 128], "seq_k": 50, "causal": False},
    {"shape": [1, 2, 67, 16], "causal": False, "score_std": 40.0},
    {"shape": [1, 2, 3, 16], "seq_k": 1, "causal": False},
]
CPU_BACKWARD = [
    {"shape": [1, 2, 64, 16], "causal": False},
    {"shape": [1, 2, 70, 32], "causal": True},
    {"shape": [1, 4, 45, 16], "kv_heads": 2, "seq_k": 100, "causal": False},
    {"shape": [2, 4, 37, 32], "kv_heads": 1, "causal": True},
    # Eight query heads over two KV heads, causal: on the interpreter's table the dK/dV programs share each group of
    # four, two heads a program (dkdv_split), so a program that sums the wrong heads of its share shows.
    {"shape": [1, 8, 100, 16], "kv_heads": 2, "causal": True},
    # Sq and Sk one past a multiple of every power-of-two block, so the last query block of dK/dV and the last
    # key block of dQ hold one row; two batches of two KV heads, so a head mapping that drops the batch shows.
    {"shape": [2, 4, 33, 16], "kv_heads": 2, "seq_k": 65, "causal": False},
    # One query row: the forward runs the decode path (flash_attention.decode), whose combine kernel stores the
    # logsumexp that the backward reads. The only graded use of the decode's logsumexp.
    {"shape": [2, 4, 1, 16], "kv_heads": 2, "seq_k": 65, "causal": False},
]
CPU_DECODE = [
    {"shape": [2, 4, 1, 16], "seq_k": 70, "causal": False},
    {"shape": [1, 8, 1, 32], "kv_heads": 2, "seq_k": 300, "causal": False},
    {"shape": [3, 4, 1, 16], "kv_heads": 1, "seq_k": 5, "causal": False},
    {"shape": [2, 8, 1, 16], "kv_heads": 2, "seq_k": 150, "causal": False, "dist": "hostile"},
    {"shape": [1, 4, 1, 32], "kv_heads": 2, "seq_k": 257, "causal": False},  # a last key block of one key
    {"shape": [1, 6, 1, 32], "kv_heads": 2, "seq_k": 100, "causal": False},  # 3 query heads per KV head
]

# kv_int8: the decode's shapes, over an INT8 cache, and the spread of per-token scales.
CPU_KV_INT8 = [
    {"shape": [2, 4, 1, 16], "seq_k": 70, "causal": False},
    {"shape": [1, 8, 1, 32], "kv_heads": 2, "seq_k": 300, "causal": False},
    {"shape": [3, 4, 1, 16], "kv_heads": 1, "seq_k": 5, "causal": False},
    {"shape": [2, 8, 1, 16], "kv_heads": 2, "seq_k": 150, "causal": False, "dist": "hostile"},
    {"shape": [1, 4, 1, 32], "kv_heads": 2, "seq_k": 257, "causal": False, "dist": "spread"},
    {"shape": [1, 6, 1, 32], "kv_heads": 2, "seq_k": 100, "causal": False},  # 3 query heads per KV head
]

# kv_int4: the decode's shapes over the KIVI cache, every group size, a cache shorter than one group, the
# spread of channels and tokens, query heads per KV head that are not a power of two (3, and 6 as in
# Qwen2-1.5B), whose rows the kernel pads, and 16 of them over one KV head (multi-query) in groups of 16 tokens.
CPU_KV_INT4 = [
    {"shape": [2, 4, 1, 16], "seq_k": 70, "causal": False},
    {"shape": [1, 8, 1, 32], "kv_heads": 2, "seq_k": 300, "causal": False, "group_size": 16},
    {"shape": [3, 4, 1, 16], "kv_heads": 1, "seq_k": 5, "causal": False},
    {"shape": [2, 8, 1, 16], "kv_heads": 2, "seq_k": 150, "causal": False, "dist": "hostile"},
    {"shape": [1, 4, 1, 32], "kv_heads": 2, "seq_k": 257, "causal": False, "dist": "spread", "group_size": 64},
    {"shape": [1, 6, 1, 32], "kv_heads": 2, "seq_k": 100, "causal": False, "group_size": 16},
    {"shape": [1, 16, 1, 16], "kv_heads": 1, "seq_k": 40, "causal": False, "group_size": 16},
]

GPU_FORWARD = [
    {"shape": [2, 8, 1024, 128], "causal": False},
    {"shape": [1, 16, 2048, 64], "causal": False},
    {"shape": [2, 8, 1000, 64], "causal": False, "dist": "hostile"},
    {"shape": [1, 8, 1024, 128], "causal": False, "dist": "huge"},
]
GPU_CAUSAL = [
    {"shape": [2, 8, 1024, 128], "causal": True},
    {"shape": [1, 8, 2048, 64], "causal": True},
    {"shape": [1, 8, 1024, 128], "causal": True, "dist": "hostile"},
]
GPU_GQA = [
    {"shape": [2, 16, 1024, 128], "kv_heads": 2, "causal": False},
    {"shape": [1, 32, 1024, 128], "kv_heads": 8, "causal": True},
]
GPU_RAGGED = [
    {"shape": [2, 4, 1000, 128], "causal": True},
    {"shape": [1, 8, 333, 64], "kv_heads": 2, "seq_k": 1777, "causal": False},
    {"shape": [3, 6, 777, 32], "kv_heads": 3, "causal": True},
    {"shape": [2, 4, 129, 16], "seq_k": 1500, "causal": False},
    {"shape": [1, 4, 257, 64], "causal": False, "score_std": 40.0},
]
GPU_BACKWARD = [
    {"shape": [2, 8, 1024, 128], "causal": True},
    {"shape": [1, 8, 777, 64], "kv_heads": 2, "causal": False},
    {"shape": [2, 4, 300, 32], "seq_k": 513, "causal": False},
]
GPU_DECODE = [
    {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": 4096, "causal": False},
    {"shape": [3, 8, 1, 64], "seq_k": 1000, "causal": False},
    {"shape": [2, 16, 1, 128], "kv_heads": 2, "seq_k": 777, "causal": False},
    {"shape": [4, 32, 1, 128], "kv_heads": 8, "seq_k": 3000, "causal": False, "dist": "hostile"},
]

GPU_KV_INT8 = [
    {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": 4096, "causal": False},
    {"shape": [2, 16, 1, 128], "kv_heads": 2, "seq_k": 777, "causal": False},
    {"shape": [3, 8, 1, 64], "seq_k": 1000, "causal": False},
    {"shape": [1, 32, 1, 128], "kv_heads": 8, "seq_k": 16384, "causal": False, "dist": "spread"},
    {"shape": [4, 32, 1, 128], "kv_heads": 8, "seq_k": 3000, "causal": False, "dist": "hostile"},
]

GPU_KV_INT4 = [
    {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": 4096, "causal": False},
    {"shape": [2, 16, 1, 128], "kv_heads": 2, "seq_k": 777, "causal": False, "group_size": 128},
    {"shape": [3, 8, 1, 64], "seq_k": 1000, "causal": False, "group_size": 16},
    {"shape": [1, 32, 1, 128], "kv_heads": 8, "seq_k": 16384, "causal": False, "dist": "spread", "group_size": 64},
    {"shape": [4, 32, 1, 128], "kv_heads": 8, "seq_k": 3000, "causal": False, "dist": "hostile", "group_size": 16},
    {"shape": [2, 12, 1, 128], "kv_heads": 2, "seq_k": 3000, "causal": False},
]


def _cases(cpu: list[Params], gpu: list[Params]) -> list[Case]:
    cases = [Case({**p, "dtype": "float32"}, "cpu") for p in cpu]
    cases += [Case({**p, "dtype": d}, "gpu") for d in ("float32", "float16", "bfloat16") for p in gpu]
    return cases


# A forward may split the keys over programs (FlashAttention-2 does where batch x heads x query blocks leave SMs idle):
# each split stores a float32 partial output and two statistics a query row, for a split of at least
# ATTENTION_SPLIT_MIN keys and twice the head dim, or of a fixed count up to ATTENTION_SPLITS_ANY whatever the keys
# (a decode's split count reused, empty splits storing their partials too: red team 24). Storing the scores is 4 x Sk
# bytes a row, about twice that. The fixed count stops where every part's largest case still refuses the stored causal
# triangle of scores (2 x Sk bytes a row; 1.7 times the budget at 256 keys and D = 16), since one refused case fails
# the part; splits of 32 keys at D = 16 store more than the scores and stay refused.
ATTENTION_SPLIT_MIN = 64
ATTENTION_SPLITS_ANY = 4


def attention_write_budget(inputs: Tensors, params: Params) -> int:
    """What a forward that keeps its scores on chip may store: the output, the partials of as many key splits as splits
    of ATTENTION_SPLIT_MIN keys and 2 x D allow, or ATTENTION_SPLITS_ANY if more, and four floats a query row (a
    log-sum-exp, running maxima and sums). Red team 23's FlashAttention-2 split rule fits."""
    q, k = inputs["q"], inputs["k"]  # (B, Hq, Sq, D), (B, Hkv, Sk, D)
    rows, head_dim = q.numel() // q.shape[-1], q.shape[-1]
    splits = max(-(-k.shape[2] // max(ATTENTION_SPLIT_MIN, 2 * head_dim)), ATTENTION_SPLITS_ANY)
    return q.numel() * q.element_size() + rows * (splits * (4 * head_dim + 8) + 16) + WRITE_SLACK


ATTENTION_WRITES = (
    "a flash attention forward keeps each block of scores and probabilities in registers and stores the output, "
    f"with room for float32 partial outputs of the keys split over programs (a split of at least {ATTENTION_SPLIT_MIN} "
    f"keys and twice the head dim, or up to {ATTENTION_SPLITS_ANY} splits of any length) and four floats a query row. "
    "Storing the score matrix (or the probabilities) and reading it back is the attention this assignment replaces: "
    "compute each block of scores, fold it into the running maximum, sum and output (the online softmax), and move "
    "on to the next block of keys"
)


def _part(task: str, title: str, points: float, cpu: list[Params], gpu: list[Params], bonus: bool = False,
          launches: tuple[str, ...] = (), kernel_probe: Callable[..., Tensors] | None = None,
          write_budget: Callable[[Tensors, Params], int] | None = None) -> Part:
    return Part(task=task, title=title, points=points, make_inputs=make_forward_inputs, call=call_forward,
                reference=reference_forward, cases=_cases(cpu, gpu), tolerances=TOLERANCES, bonus=bonus,
                launches=launches, kernel_probe=kernel_probe, write_budget=write_budget,
                write_budget_says=ATTENTION_WRITES if write_budget is not None else "")  # fmt: skip


# The decode bonuses grade the split-K kernels: the forward kernel at one query row, or a dense copy of a quantized
# cache handed to it, computes the same result without them (red team 18); so does a kernel of the right name that
# does either in one mode of a constexpr and the rest in another (red team 19). Hence also the grader's own launches
# (Part.kernel_probe), in the replayer on the case's inputs: the split kernel with the given launcher's arguments, and
# splits and key tiles of the grader's, then the combine kernel, with no dependent launch. On the CPU, splits of three
# key tiles, which no entry of the given configs.json makes (its splits are powers of two), so that a split kernel that
# takes its split's length from a constant instead of keys_per_split fails (red team 20: the CPU entry's 32 keys,
# hard-coded, passed while the probe used 32 too). On a GPU, the settings run on an H100 on 2026-12-07
# (results/h100/grader_gpu_check_2026-12-07i/); the tiles keep under every GPU's shared memory.
PROBE_SPLIT = {"cpu": (16, 48, 1, 1), "gpu": (32, 128, 4, 2)}  # BLOCK_N, keys per split, num_warps, num_stages
PROBE_TILES_PER_SPLIT = {"cpu": 3, "gpu": 2}  # the INT4 kernel's keys per split, in its tiles
LOG2E = 1.4426950408889634


def _next_power_of_2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _probe_decode(kernels: Callable[[str], Any], split: str, q: torch.Tensor, cache: tuple[torch.Tensor, ...],
                  seqlen_k: int, n_heads_kv: int, scale: float, keys: int, block_n: int, meta: dict) -> Tensors:
    """The split kernel `split` over the cache, keys a split, then the combine kernel: o (B, Hq, 1, D)."""
    batch, n_heads_q, _, head_dim = q.shape
    warps, stages = PROBE_SPLIT[_tier(q.device)][2:]
    n_splits = -(-seqlen_k // keys)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    kernels(split)[(n_splits, batch * n_heads_kv)](
        q, *cache, o_part, lse_part, seqlen_k, *meta.pop("after_seqlen", ()), n_heads_q // n_heads_kv, keys,
        scale * LOG2E, HEAD_DIM=head_dim, BLOCK_N=block_n, DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=warps, num_stages=stages, **meta,
    )  # fmt: skip
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    kernels("_attn_decode_combine_kernel")[(batch * n_heads_q,)](
        o_part, lse_part, o, lse, n_splits, HEAD_DIM=head_dim, BLOCK_S=_next_power_of_2(n_splits), AFTER_SPLIT=False,
        num_warps=1,
    )  # fmt: skip
    return {"o": o}


def _tier(device: torch.device) -> str:
    return "cpu" if device.type == "cpu" else "gpu"


def _split_tiles(device: torch.device) -> tuple[int, int]:
    block_n, keys = PROBE_SPLIT[_tier(device)][:2]
    return block_n, keys


def probe_decode(kernels: Callable[[str], Any], inputs: Tensors, params: Params, device: torch.device) -> Tensors:
    q, k, v = inputs["q"], inputs["k"], inputs["v"]  # (B, Hq, 1, D), (B, Hkv, Sk, D), (B, Hkv, Sk, D)
    block_n, keys = _split_tiles(device)
    group = q.shape[1] // k.shape[1]
    return _probe_decode(kernels, "_attn_decode_split_kernel", q, (k, v), k.shape[2], k.shape[1], scale_of(params),
                         keys, block_n, {"BLOCK_G": max(16, _next_power_of_2(group))})  # fmt: skip


def probe_kv_int8(kernels: Callable[[str], Any], inputs: Tensors, params: Params, device: torch.device) -> Tensors:
    q, k_q = inputs["q"], inputs["k_q"]
    block_n, keys = _split_tiles(device)
    group = q.shape[1] // k_q.shape[1]
    cache = (k_q, inputs["k_scale"], inputs["v_q"], inputs["v_scale"])
    return _probe_decode(kernels, "_attn_decode_int8_split_kernel", q, cache, k_q.shape[2], k_q.shape[1],
                         scale_of(params), keys, block_n, {"BLOCK_G": max(16, _next_power_of_2(group))})  # fmt: skip


def probe_kv_int4(kernels: Callable[[str], Any], inputs: Tensors, params: Params, device: torch.device) -> Tensors:
    """As the given launcher's tiles (int4_tiles): each sub-split's chunk of keys lies in one K group."""
    q, k_packed, k_scale = inputs["q"], inputs["k_packed"], inputs["k_scale"]
    group_size = params.get("group_size", KV_INT4_GROUP)
    group = q.shape[1] // k_packed.shape[1]
    gqp = _next_power_of_2(group)
    block_g = max(16, gqp)
    wanted = _split_tiles(device)[0]
    while True:
        n_sub = block_g // gqp
        block_n = n_sub * min(group_size, max(1, wanted // n_sub))
        if block_n >= 32:
            break
        block_g *= 2
    head_dim = q.shape[3]
    cache = tuple(inputs[n] for n in KV_INT4_NAMES[1:])
    meta = {"after_seqlen": (k_scale.shape[2],), "GROUP_SIZE": group_size, "BLOCK_D": max(32, head_dim),
            "BLOCK_G": block_g, "GQP": gqp}  # fmt: skip
    return _probe_decode(kernels, "_attn_decode_int4_split_kernel", q, cache, k_packed.shape[2], k_packed.shape[1],
                         scale_of(params), PROBE_TILES_PER_SPLIT[_tier(device)] * block_n, block_n, meta)  # fmt: skip


DECODE_KERNELS = ("_attn_decode_split_kernel", "_attn_decode_combine_kernel")
INT8_KERNELS = ("_attn_decode_int8_split_kernel", "_attn_decode_combine_kernel")
INT4_KERNELS = ("_attn_decode_int4_split_kernel", "_attn_decode_combine_kernel")


SPEED_SHAPE = [4, 32, 4096, 128]
DECODE_SPEED = {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": 4096, "causal": False, "dtype": "bfloat16"}

ASSIGNMENT = Assignment(
    slug="flash_attention",
    title="08 Flash attention",
    api={"flash_attention": "flash_attention(q, k, v, causal=False, scale=None)"},
    parts=[
        _part("flash_attention.forward", "forward, block-aligned", 30, CPU_FORWARD, GPU_FORWARD,
              write_budget=attention_write_budget),
        _part("flash_attention.causal", "causal mask, whole blocks skipped", 20, CPU_CAUSAL, GPU_CAUSAL,
              write_budget=attention_write_budget),
        _part("flash_attention.gqa", "grouped-query attention", 15, CPU_GQA, GPU_GQA,
              write_budget=attention_write_budget),
        _part("flash_attention.ragged", "any length, Sq != Sk, every head dim", 15, CPU_RAGGED, GPU_RAGGED,
              write_budget=attention_write_budget),
        Part(
            task="flash_attention.backward",
            title="backward (dq, dk, dv)",
            points=20,
            bonus=True,
            make_inputs=make_backward_inputs,
            call=call_backward,
            reference=reference_backward,
            cases=_cases(CPU_BACKWARD, GPU_BACKWARD),
            tolerances=BACKWARD_TOLERANCES,
        ),
        _part("flash_attention.decode", "decode: one query row, keys split", 10, CPU_DECODE, GPU_DECODE, bonus=True,
              launches=DECODE_KERNELS, kernel_probe=probe_decode),
        Part(task="flash_attention.kv_int8", title="decode over an INT8 KV cache", points=10, bonus=True,
             make_inputs=make_kv_int8_inputs, call=call_kv_int8, reference=reference_kv_int8,
             cases=_cases(CPU_KV_INT8, GPU_KV_INT8), tolerances=TOLERANCES, launches=INT8_KERNELS,
             kernel_probe=probe_kv_int8),
        Part(task="flash_attention.kv_int4", title="decode over an INT4 (KIVI) KV cache", points=10, bonus=True,
             make_inputs=make_kv_int4_inputs, call=call_kv_int4, reference=reference_kv_int4,
             cases=_cases(CPU_KV_INT4, GPU_KV_INT4), tolerances=TOLERANCES, launches=INT4_KERNELS,
             kernel_probe=probe_kv_int4),
    ],
    speed=[
        SpeedCase("flash_attention.forward", {"shape": SPEED_SHAPE, "causal": False, "dtype": "bfloat16"}, 10, 1.0,
                  attention_bytes, flops=attention_flops, baseline=sdpa_flash_baseline,
                  baseline_name="SDPA (flash backend)", zero_at=0.25),
        SpeedCase("flash_attention.causal", {"shape": SPEED_SHAPE, "causal": True, "dtype": "bfloat16"}, 10, 1.0,
                  attention_bytes, flops=attention_flops, baseline=sdpa_flash_baseline,
                  baseline_name="SDPA (flash backend)", zero_at=0.25),
        # Full bonus at 0.9x PyTorch's own decode path (cuDNN's kernel on an H200), which already streams K
        # and V at the bandwidth this launch-plus-ramp-bound size allows (README, section 6). The reference
        # runs 1.01-1.05x over five gradings (results/h200/stability_2026-11-21.md): full points at parity would hang
        # on noise, so the threshold sits 10% below.
        SpeedCase("flash_attention.decode", DECODE_SPEED, 10, 0.9, attention_bytes, baseline=sdpa_baseline,
                  baseline_name="SDPA (enable_gqa)", zero_at=0.5, bonus=True),
        # The INT8 cache moves about half the bytes of the 16-bit one: the decode's shape against SDPA over the
        # 16-bit cache. Full points at parity (a first target, to be raised from GPU measurements).
        SpeedCase("flash_attention.kv_int8", {**DECODE_SPEED, "seq_k": 16384}, 5, 1.0, kv_int8_bytes,
                  call=speed_kv_int8, baseline=sdpa_dense_baseline, baseline_setup=_dense_cache,
                  baseline_name="SDPA over the bf16 cache", zero_at=0.5, bonus=True),
        # The KIVI cache moves about a third of the 16-bit one's bytes (0.33x at D = 128, group 32). Provisional:
        # full points at parity with SDPA over the 16-bit cache, as kv_int8, until measured on a GPU.
        SpeedCase("flash_attention.kv_int4", {**DECODE_SPEED, "seq_k": 16384}, 5, 1.0, kv_int4_bytes,
                  call=speed_kv_int4, baseline=sdpa_dense_baseline, baseline_setup=_dense_int4_cache,
                  baseline_name="SDPA over the bf16 cache", zero_at=0.5, bonus=True),
    ],
    speed_call=speed_forward,
)


# --------------------------------------------------------------------------------------------------
# Benchmarks (python -m autograder bench flash_attention): the solution against PyTorch's attention
# backends, forward and backward at 4 x 32 heads x S x 128 for S from 512 to 16K, and decode.
# --------------------------------------------------------------------------------------------------

BENCH_SEQ = [512, 1024, 2048, 4096, 8192, 16384]
BENCH_DECODE_SEQ = [1024, 4096, 16384, 65536]
EAGER_MAX_SEQ = 4096  # eager attention stores the (S, S) scores: 4 x 32 x 8192^2 in bf16 is 17 GB


def eager_attention(inputs: Tensors, params: Params) -> torch.Tensor:
    """Attention as eager PyTorch code writes it: the score matrix in memory, softmax in float32."""
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = (q @ k.transpose(-1, -2)) * scale_of(params)
    if params["causal"]:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s.float(), dim=-1).to(q.dtype) @ v


def backward_bytes(params: Params) -> int:
    """Read q, k, v, o, dO and write dq, dk, dv, each once (the (B, H, S) logsumexp and delta left out):
    twice the forward's q, k, v, o."""
    return 2 * attention_bytes(params)


def bench_suite(module: ModuleType, quick: bool = False) -> list:
    from autograder.spec import BenchCase

    def forward(fn):
        return lambda params: lambda inputs: (lambda: fn(inputs, params))

    def backward(fn):
        def prepare(params: Params):
            def bind(inputs: Tensors):
                q, k, v = (inputs[n].detach().requires_grad_() for n in ("q", "k", "v"))
                o = fn({"q": q, "k": k, "v": v}, params)
                return lambda: torch.autograd.grad(o, (q, k, v), inputs["do"], retain_graph=True)

            return bind

        return prepare

    def solution(inputs: Tensors, params: Params) -> torch.Tensor:
        return module.flash_attention(inputs["q"], inputs["k"], inputs["v"], params["causal"])

    impls = {
        "solution": solution,
        "SDPA flash": sdpa_flash_baseline,
        "SDPA cuDNN": lambda inputs, params: sdpa(inputs, params, "cudnn"),
        "eager PyTorch": eager_attention,  # not named "eager": the table's ratios are then against SDPA flash
    }
    suite = []
    seqs = [1024, 4096] if quick else BENCH_SEQ
    for pass_name, wrap, make, nbytes, fl in (
        ("forward", forward, make_forward_inputs, attention_bytes, lambda p: attention_flops(p)),
        ("backward", backward, make_backward_inputs, backward_bytes, lambda p: attention_flops(p) * 5 // 2),
    ):
        for causal in (False, True):
            for seq in seqs:
                params = {"shape": [4, 32, seq, 128], "causal": causal, "dtype": "bfloat16"}
                chosen = {n: f for n, f in impls.items() if n != "eager PyTorch" or seq <= EAGER_MAX_SEQ}
                suite.append(BenchCase(pass_name + (" causal" if causal else ""), params, make,
                                       {n: wrap(f)(params) for n, f in chosen.items()}, nbytes(params), fl(params)))
    decode_impls = {"solution": solution, "SDPA (enable_gqa)": sdpa_baseline, "SDPA flash": sdpa_flash_baseline}
    for seq_k in [4096, 16384] if quick else BENCH_DECODE_SEQ:
        params = {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": seq_k, "causal": False, "dtype": "bfloat16"}
        suite.append(BenchCase(f"decode Sk={seq_k}", params, make_forward_inputs,
                               {n: forward(f)(params) for n, f in decode_impls.items()}, attention_bytes(params)))
    return suite
