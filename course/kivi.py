"""The course's INT4 KV-cache format (after KIVI, Liu et al. 2024): keys per channel, values per token.

Keys have outlier channels (a few channels are large for every token), values do not: KIVI quantizes each
channel of K over a group of G consecutive tokens, and each token of V over its channels. Both asymmetric,
4-bit codes q in 0..15 packed two a byte along the head dimension (course/int4.py's packing):

    k_packed (B, Hkv, Sk, D // 2) uint8     K[t, d] = q * k_scale[t // G, d] + k_zero[t // G, d]
    k_scale, k_zero (B, Hkv, ceil(Sk / G), D) float32
    v_packed (B, Hkv, Sk, D // 2) uint8     V[t, d] = q * v_scale[t] + v_zero[t]
    v_scale, v_zero (B, Hkv, Sk) float32

zero is the minimum of its group (or token), scale = (max - min) / 15. The last group of K may hold fewer
than G tokens: it is quantized over the tokens it has (KIVI keeps them in 16 bits until the group fills, a
policy of the cache's owner; the attention kernel reads the same format either way).
The grader, the notebooks and the benchmarks quantize with `quantize_kivi` and read back with `dequantize_kivi`.
"""

from __future__ import annotations

import torch

from course.int4 import pack_int4, unpack_int4

KIVI_GROUP_SIZES = (16, 32, 64, 128)  # tokens per K group: powers of two, so a key tile lies in one group
LEVELS = 15  # 4-bit codes 0..15


def _affine(lo: torch.Tensor, hi: torch.Tensor, pow2: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(scale, zero) that map codes 0..15 onto [lo, hi]; with pow2 the scale is the power of two at or above."""
    scale = (hi - lo) / LEVELS
    if pow2:
        scale = torch.where(scale > 0, torch.exp2(torch.ceil(torch.log2(scale))), scale)
    return scale, lo


def _codes(x: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    return torch.round((x - zero) / torch.where(scale > 0, scale, 1.0)).clamp(0, LEVELS)


def _pack(codes: torch.Tensor) -> torch.Tensor:
    """(..., D) codes -> (..., D // 2) uint8, channel 2j in the low nibble of byte j."""
    return pack_int4(codes.reshape(-1, codes.shape[-1])).reshape(*codes.shape[:-1], codes.shape[-1] // 2)


def unpack_codes(packed: torch.Tensor) -> torch.Tensor:
    """(..., D // 2) uint8 -> (..., D) codes 0..15 as int16, channel 2j from the low nibble of byte j."""
    return unpack_int4(packed.reshape(-1, packed.shape[-1])).reshape(*packed.shape[:-1], 2 * packed.shape[-1])


def quantize_kivi(
    k: torch.Tensor, v: torch.Tensor, group_size: int = 32, pow2: bool = False
) -> dict[str, torch.Tensor]:
    """k, v (B, Hkv, Sk, D) -> the KIVI cache: k_packed, k_scale, k_zero, v_packed, v_scale, v_zero (format
    above), computed in float32. pow2: every scale a power of two (the grader's hostile inputs)."""
    if group_size not in KIVI_GROUP_SIZES:
        raise ValueError(f"quantize_kivi: group_size must be one of {KIVI_GROUP_SIZES}, got {group_size}.")
    k, v = k.float(), v.float()
    batch, heads, seqlen, head_dim = k.shape
    n_groups = -(-seqlen // group_size)
    # K per channel over groups of tokens: pad the last group with copies of its first token, which moves
    # neither its minimum nor its maximum
    pad = n_groups * group_size - seqlen
    first = k[:, :, (n_groups - 1) * group_size : (n_groups - 1) * group_size + 1]
    grouped = torch.cat([k, first.expand(-1, -1, pad, -1)], 2).reshape(batch, heads, n_groups, group_size, head_dim)
    k_scale, k_zero = _affine(grouped.amin(3), grouped.amax(3), pow2)  # (B, Hkv, G, D)
    per_token = lambda t: t.repeat_interleave(group_size, 2)[:, :, :seqlen]  # noqa: E731
    k_codes = _codes(k, per_token(k_scale), per_token(k_zero))
    v_scale, v_zero = _affine(v.amin(-1), v.amax(-1), pow2)  # (B, Hkv, Sk)
    v_codes = _codes(v, v_scale[..., None], v_zero[..., None])
    return {"k_packed": _pack(k_codes), "k_scale": k_scale.contiguous(), "k_zero": k_zero.contiguous(),
            "v_packed": _pack(v_codes), "v_scale": v_scale.contiguous(), "v_zero": v_zero.contiguous()}  # fmt: skip


def dequantize_kivi(cache: dict[str, torch.Tensor], group_size: int, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """The KIVI cache -> (K, V) (B, Hkv, Sk, D) in dtype, computed in dtype."""
    k_codes, v_codes = unpack_codes(cache["k_packed"]).to(dtype), unpack_codes(cache["v_packed"]).to(dtype)
    seqlen = k_codes.shape[2]
    per_token = lambda t: t.to(dtype).repeat_interleave(group_size, 2)[:, :, :seqlen]  # noqa: E731
    k = k_codes * per_token(cache["k_scale"]) + per_token(cache["k_zero"])
    v = v_codes * cache["v_scale"].to(dtype)[..., None] + cache["v_zero"].to(dtype)[..., None]
    return k, v


def kivi_bytes(batch: int, heads: int, seqlen: int, head_dim: int, group_size: int) -> int:
    """Bytes of a KIVI cache: the codes (half a byte each), K's two float32 rows per group, V's two per token."""
    n_groups = -(-seqlen // group_size)
    return batch * heads * (2 * seqlen * head_dim // 2 + 8 * n_groups * head_dim + 8 * seqlen)
