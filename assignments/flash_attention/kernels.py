"""Assignment 08, flash attention: a fused Triton forward (causal, grouped-query, any length), and as
bonuses a Triton backward, a split-K decode kernel, and decode over an INT8 and an INT4 (KIVI) KV cache.

    O = softmax(scale * Q K^T  [+ causal mask]) V        one (Sq, Sk) score matrix per head, never stored

The handout is README.md beside this file. Fill in every region marked TODO; keep the signatures, the
launch wrappers and the autograd Function as they are: the grader calls
`flash_attention(q, k, v, causal=False, scale=None)`, `flash_decode_int8(q, k_q, k_scale, v_q, v_scale, scale=None)`
and `flash_decode_int4(q, k_packed, k_scale, k_zero, v_packed, v_scale, v_zero, group_size=32, scale=None)`.
Grade yourself with `make grade` (or
`python -m autograder grade flash_attention`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.configs import ConfigTable, SearchSpace, ceil_bucket, grid
from course.device import Device, device_of
from course.kivi import KIVI_GROUP_SIZES, quantize_kivi
from course.launch import cdiv, launch, next_power_of_2
from course.ops import OpLibrary, needs_autograd
from course.validate import CheckedOnce, check_same, check_tensor

try:  # Hopper's bulk tensor copy engine (TMA), reached through host-side descriptors (triton >= 3.3)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - triton < 3.3: no TMA
    TensorDescriptor = None

LOG2E = 1.4426950408889634  # exp(x) = exp2(x * LOG2E): the hardware has a fast exp2, not a fast exp
LN2 = 0.6931471805599453
HEAD_DIMS = (16, 32, 64, 128)


# --------------------------------------------------------------------------------------------------
# Kernels: the forward, (bonus) the split-K decode, (bonus) the backward, (bonus) the quantized KV cache
# --------------------------------------------------------------------------------------------------


@triton.jit
def _attn_fwd_inner(
    acc,  # (BLOCK_M, HEAD_DIM) float32: sum over the keys seen so far of exp2(s - m_i) * v
    l_i,  # (BLOCK_M,) float32: sum over the keys seen so far of exp2(s - m_i)
    m_i,  # (BLOCK_M,) float32: running row maximum of the scores, in log2 units
    q,  # (BLOCK_M, HEAD_DIM) this program's queries, in the input dtype
    k_head_ptr,  # first element of this KV head's K, (Sk, HEAD_DIM) contiguous
    v_head_ptr,  # first element of this KV head's V
    k_desc,  # TMA descriptor over K viewed as (B*Hkv*Sk, HEAD_DIM), used when USE_TMA
    v_desc,
    kv_row0,  # row of this KV head's first key in the (B*Hkv*Sk, HEAD_DIM) view
    lo,  # first key of the range (a multiple of BLOCK_N)
    hi,  # one past the last key of the range
    offs_m,  # (BLOCK_M,) query indices of this program
    seqlen_k,
    qk_scale,  # scale * log2(e): scores come out of the dot in log2 units after one multiply
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    MASK_KEYS: tl.constexpr,  # the range may run past seqlen_k: mask the keys past the end
    MASK_CAUSAL: tl.constexpr,  # the range crosses the diagonal: mask keys after the query
    USE_TMA: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """Online softmax over the keys [lo, hi), BLOCK_N at a time. Returns the updated (acc, l_i, m_i)."""
    # TODO(flash_attention.forward)
    #   The online softmax over the key blocks of [lo, hi), scores in log2 units (qk_scale includes log2 e):
    #   update (acc, l_i, m_i) block by block. MASK_KEYS masks keys >= seqlen_k, MASK_CAUSAL keys after the
    #   query (offs_m). You may ignore k_desc / v_desc / USE_TMA: the Hopper fast path (see the README).
    #   More, one step at a time: python -m autograder hint flash_attention.forward
    raise NotImplementedError("TODO(flash_attention.forward): not implemented yet; see README.md")
    return acc, l_i, m_i


@triton.jit
def _attn_fwd_kernel(
    q_ptr,  # (B, Hq, Sq, HEAD_DIM) contiguous
    k_ptr,  # (B, Hkv, Sk, HEAD_DIM) contiguous
    v_ptr,  # (B, Hkv, Sk, HEAD_DIM) contiguous
    o_ptr,  # (B, Hq, Sq, HEAD_DIM) output, q's dtype
    lse_ptr,  # (B, Hq, Sq) float32: natural-log logsumexp of each score row, written when STORE_LSE
    k_desc,  # TMA descriptors over K and V as (B*Hkv*Sk, HEAD_DIM) when USE_TMA, else unused
    v_desc,
    seqlen_q,
    seqlen_k,
    n_heads_q,  # Hq
    group,  # Hq // Hkv: query heads that share one KV head
    qk_scale,  # scale * log2(e)
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,  # queries per program
    BLOCK_N: tl.constexpr,  # keys per step of the inner loop; BLOCK_M is a multiple of it
    CAUSAL: tl.constexpr,
    STORE_LSE: tl.constexpr,
    USE_TMA: tl.constexpr,
    DOT_PRECISION: tl.constexpr,  # "ieee" for float32 inputs (no tf32 rounding), else ignored
):
    """Program (i, b * Hq + h) computes the output rows i*BLOCK_M ... i*BLOCK_M + BLOCK_M - 1 of head h."""
    qk_scale = tl.cast(qk_scale, tl.float32)  # Triton's launch passes floats as float32, Inductor as float64
    # TODO(flash_attention.forward)
    #   Program (pid_m, b * Hq + h): BLOCK_M queries of head h against the keys of KV head h // group, with
    #   _attn_fwd_inner; store acc / l_i in o's dtype and, when STORE_LSE, the logsumexp (m_i + log2(l_i)) * ln(2)
    #   at lse_ptr + pid_bh * seqlen_q + row. Causal blocks after the diagonal are skipped, not masked.
    #   More, one step at a time: python -m autograder hint flash_attention.forward
    raise NotImplementedError("TODO(flash_attention.forward): not implemented yet; see README.md")


@triton.jit
def _attn_decode_split_kernel(
    q_ptr,  # (B, Hq, 1, HEAD_DIM) contiguous: row b * Hq + h
    k_ptr,  # (B, Hkv, Sk, HEAD_DIM) contiguous
    v_ptr,
    o_part_ptr,  # (B * Hq, n_splits, HEAD_DIM) float32: each split's normalised partial output
    lse_part_ptr,  # (B * Hq, n_splits) float32: each split's logsumexp, in log2 units
    seqlen_k,
    group,  # Hq // Hkv
    keys_per_split,  # a multiple of BLOCK_N
    qk_scale,  # scale * log2(e)
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_G: tl.constexpr,  # >= group and >= 16: the query heads of one KV head, padded for tl.dot
    DOT_PRECISION: tl.constexpr,
):
    """Program (s, b * Hkv + j): the `group` query heads of KV head j against split s of the keys."""
    qk_scale = tl.cast(qk_scale, tl.float32)  # Triton's launch passes floats as float32, Inductor as float64
    # TODO(flash_attention.decode)
    #   The `group` query heads of KV head j (rows (b * Hkv + j) * group + g of q and of the outputs) read
    #   its K and V once, together, for the keys of split s; store acc / l_i into o_part and m_i + log2(l_i) into
    #   lse_part at (row, s).
    #   More: python -m autograder hint flash_attention.decode
    raise NotImplementedError("TODO(flash_attention.decode): not implemented yet; see README.md")


@triton.jit
def _attn_decode_combine_kernel(
    o_part_ptr,  # (B * Hq, n_splits, HEAD_DIM) float32
    lse_part_ptr,  # (B * Hq, n_splits) float32, log2 units
    o_ptr,  # (B, Hq, 1, HEAD_DIM) output, q's dtype: row b * Hq + h
    lse_ptr,  # (B, Hq, 1) float32: natural-log logsumexp over all keys
    n_splits,
    HEAD_DIM: tl.constexpr,
    BLOCK_S: tl.constexpr,  # power of two >= n_splits
    AFTER_SPLIT: tl.constexpr,  # launched as the split kernel's dependent (PDL): wait on the GPU for its results
):
    """Program r merges the n_splits partial results of query row r."""
    if AFTER_SPLIT:  # pragma: no cover - GPU only: a dependent launch (Hopper and newer)
        tl.extra.cuda.gdc_wait()  # the split kernel's stores are visible from here on
    # TODO(flash_attention.decode)
    #   Split s holds o_s (normalised over its keys) and L_s = log2 of its sum of exp2(scores); merge the
    #   n_splits of row r into o and the row's logsumexp (natural log), masking splits >= n_splits.
    #   More: python -m autograder hint flash_attention.decode
    raise NotImplementedError("TODO(flash_attention.decode): not implemented yet; see README.md")


@triton.jit
def _kv_quantize_int8_kernel(  # pragma: no cover - not graded (tests/test_wrappers.py)
    x_ptr,  # (R, HEAD_DIM) rows of K or V, R = B * Hkv * Sk: one row per token and head
    q_ptr,  # (R, HEAD_DIM) int8 codes (written)
    scale_ptr,  # (R,) float32 per-token scales (written)
    n_rows,
    HEAD_DIM: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    """Symmetric INT8 per token: scale = max|x| / 127 over the row, code = round(x / scale). Given code."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    offs = rows.to(tl.int64)[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    x = tl.load(x_ptr + offs, mask=row_mask[:, None], other=0.0).to(tl.float32)
    scale = tl.max(tl.abs(x), axis=1) / 127.0
    safe = tl.where(scale > 0, scale, 1.0)  # a row of zeros: codes 0, scale 0
    r = x / safe[:, None]
    codes = tl.where(r >= 0, tl.floor(r + 0.5), tl.ceil(r - 0.5))  # to nearest, halves away from zero
    tl.store(q_ptr + offs, codes.to(tl.int8), mask=row_mask[:, None])
    tl.store(scale_ptr + rows, scale, mask=row_mask)


@triton.jit
def _attn_decode_int8_split_kernel(
    q_ptr,  # (B, Hq, 1, HEAD_DIM) contiguous: row b * Hq + h
    kq_ptr,  # (B, Hkv, Sk, HEAD_DIM) int8 codes of K
    ks_ptr,  # (B, Hkv, Sk) float32: K's scale per token
    vq_ptr,  # (B, Hkv, Sk, HEAD_DIM) int8 codes of V
    vs_ptr,  # (B, Hkv, Sk) float32: V's scale per token
    o_part_ptr,  # (B * Hq, n_splits, HEAD_DIM) float32: each split's normalised partial output
    lse_part_ptr,  # (B * Hq, n_splits) float32: each split's logsumexp, in log2 units
    seqlen_k,
    group,  # Hq // Hkv
    keys_per_split,  # a multiple of BLOCK_N
    qk_scale,  # scale * log2(e)
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_G: tl.constexpr,  # >= group and >= 16: the query heads of one KV head, padded for tl.dot
    DOT_PRECISION: tl.constexpr,
):
    """The split-K decode of flash_attention.decode, reading K and V as INT8 codes and per-token scales."""
    qk_scale = tl.cast(qk_scale, tl.float32)  # Triton's launch passes floats as float32, Inductor as float64
    # TODO(flash_attention.kv_int8)
    #   The decode split kernel, with K = codes * k_scale and V = codes * v_scale per key. Never build the
    #   dequantized tiles: the codes are exact in q's dtype, and each key's scale can multiply its score
    #   column (K) or its probability column (V) instead. Partial results as in the decode kernel.
    #   More: python -m autograder hint flash_attention.kv_int8
    raise NotImplementedError("TODO(flash_attention.kv_int8): not implemented yet; see README.md")


@triton.jit
def _int4_codes(nibbles, DTYPE: tl.constexpr, OFFSET: tl.constexpr = 0):
    """Codes 0..15 (uint8) minus OFFSET (0..15) as DTYPE, exactly. Given code.

    An integer-to-float conversion instruction runs at a quarter of the rate of an add or less (16 a cycle per
    SM on Ampere and Hopper), and this kernel would need one per element. In 16 bits the float is built from
    its bits instead: 0x4300 | c is the bfloat16 128 + c (exponent 2^7, c in the low mantissa bits), 0x6400 | c
    the float16 1024 + c; one integer OR and one subtraction, which the compiler packs two elements at a time,
    and which takes OFFSET off for free. Module 09's W4A16 kernels do the same in float32 with 2^23
    (solutions/quant_matmul `_field`)."""
    if DTYPE == tl.bfloat16:  # pragma: no cover - GPU only: the CPU tier grades float32
        return (nibbles.to(tl.uint16) | 0x4300).to(tl.bfloat16, bitcast=True) - (128.0 + OFFSET)
    elif DTYPE == tl.float16:  # pragma: no cover - GPU only: the CPU tier grades float32
        return (nibbles.to(tl.uint16) | 0x6400).to(tl.float16, bitcast=True) - (1024.0 + OFFSET)
    else:
        return nibbles.to(DTYPE) - OFFSET


@triton.jit
def _attn_decode_int4_split_kernel(
    q_ptr,  # (B, Hq, 1, HEAD_DIM) contiguous: row b * Hq + h
    kp_ptr,  # (B, Hkv, Sk, HEAD_DIM // 2) uint8: K's 4-bit codes, channel 2j in the low nibble of byte j
    ks_ptr,  # (B, Hkv, n_k_groups, HEAD_DIM) float32: K's scale per channel and group of GROUP_SIZE tokens
    kz_ptr,  # (B, Hkv, n_k_groups, HEAD_DIM) float32: K's zero (offset), likewise
    vp_ptr,  # (B, Hkv, Sk, HEAD_DIM // 2) uint8: V's 4-bit codes
    vs_ptr,  # (B, Hkv, Sk) float32: V's scale per token
    vz_ptr,  # (B, Hkv, Sk) float32: V's zero per token
    o_part_ptr,  # (B * Hq, n_splits, HEAD_DIM) float32: each split's normalised partial output
    lse_part_ptr,  # (B * Hq, n_splits) float32: each split's logsumexp, in log2 units
    seqlen_k,
    n_k_groups,  # cdiv(Sk, GROUP_SIZE)
    group,  # Hq // Hkv
    keys_per_split,  # a multiple of BLOCK_N
    qk_scale,  # scale * log2(e)
    GROUP_SIZE: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,  # >= HEAD_DIM and >= 32: the byte tiles are BLOCK_D // 2 wide, tl.dot's least 16
    BLOCK_N: tl.constexpr,  # keys per tile: N_SUB chunks of BLOCK_N // N_SUB keys, each inside one K group
    BLOCK_G: tl.constexpr,  # rows of the dots, >= 16: N_SUB sub-splits x GQP query heads
    GQP: tl.constexpr,  # next_power_of_2(group)
    DOT_PRECISION: tl.constexpr,
):
    """The split-K decode of flash_attention.decode over the KIVI INT4 cache (course/kivi.py)."""
    qk_scale = tl.cast(qk_scale, tl.float32)  # Triton's launch passes floats as float32, Inductor as float64
    # TODO(flash_attention.kv_int4)
    #   Row r = j * GQP + h of the dots is query head h over chunk j of each tile: the rows tl.dot pads to 16
    #   become sub-splits of the keys, one K group per row, each masked to its chunk. Unpack with tl.join +
    #   tl.reshape and _int4_codes; fold K's scale and zero into q per row (q * scale as hi + lo in q's dtype) and
    #   V's into the probabilities. At the end merge each head's N_SUB rows as the combine kernel merges splits.
    #   More: python -m autograder hint flash_attention.kv_int4
    raise NotImplementedError("TODO(flash_attention.kv_int4): not implemented yet; see README.md")


@triton.jit
def _attn_bwd_preprocess_kernel(
    o_ptr,  # (R, HEAD_DIM) the forward's output, R = B * Hq * Sq rows
    do_ptr,  # (R, HEAD_DIM) gradient of the output
    delta_ptr,  # (R,) float32: rowsum(dO * O) (written)
    n_rows,
    HEAD_DIM: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    """delta_i = sum_d dO[i, d] * O[i, d] = sum_j P[i, j] * dP[i, j]: the softmax backward's row term."""
    # TODO(flash_attention.backward)
    #   Rows program_id * BLOCK_R ... (mask rows >= n_rows): load O and dO as float32, store the row sums of O * dO.
    raise NotImplementedError("TODO(flash_attention.backward): not implemented yet; see README.md")


@triton.jit
def _attn_bwd_dkdv_inner(
    dk,  # (BLOCK_N, HEAD_DIM) float32 accumulators
    dv,
    k,  # (BLOCK_N, HEAD_DIM) this program's keys and values
    v,
    q_head_ptr,  # this query head's Q, dO (Sq, HEAD_DIM), and lse, delta (Sq,)
    do_head_ptr,
    lse_head_ptr,
    delta_head_ptr,
    lo,  # first query of the range (a multiple of BLOCK_M)
    hi,
    offs_n,  # (BLOCK_N,) key indices of this program
    seqlen_q,
    qk_scale,
    BLOCK_M: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    MASK_Q: tl.constexpr,  # the range may run past seqlen_q
    MASK_CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """Accumulate dV += P^T dO and dK += dS^T Q over the queries [lo, hi), BLOCK_M at a time."""
    # TODO(flash_attention.backward)
    #   Keys stay on the rows: recompute each tile of P transposed from the logsumexp and accumulate dV and dK
    #   over the query blocks of [lo, hi).
    #   More, one step at a time: python -m autograder hint flash_attention.backward
    raise NotImplementedError("TODO(flash_attention.backward): not implemented yet; see README.md")
    return dk, dv


@triton.jit
def _attn_bwd_dkdv_kernel(
    q_ptr,  # (B, Hq, Sq, HEAD_DIM)
    k_ptr,  # (B, Hkv, Sk, HEAD_DIM)
    v_ptr,
    do_ptr,  # (B, Hq, Sq, HEAD_DIM)
    lse_ptr,  # (B, Hq, Sq) float32, natural log
    delta_ptr,  # (B, Hq, Sq) float32
    dk_ptr,  # (B * Hkv * split, Sk, HEAD_DIM) (written): dK itself, or with split > 1 float32 partial sums
    dv_ptr,
    seqlen_q,
    seqlen_k,
    group,
    split,  # programs sharing one KV head's group of query heads, a divisor of group
    qk_scale,  # scale * log2(e)
    sm_scale,  # scale
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,  # queries per step
    BLOCK_N: tl.constexpr,  # keys per program, a multiple of BLOCK_M
    CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """Program (j, (b * Hkv + kv) * split + s): dK and dV of keys j*BLOCK_N ... summed over query heads
    s * group / split ... of the group (all of them when split = 1)."""
    qk_scale = tl.cast(qk_scale, tl.float32)  # Triton's launch passes floats as float32, Inductor as float64
    sm_scale = tl.cast(sm_scale, tl.float32)
    # TODO(flash_attention.backward)
    #   Program (j, (b * Hkv + kv) * split + s): dK and dV of keys j*BLOCK_N ..., summed with _attn_bwd_dkdv_inner
    #   over query heads s * group / split ... of the group (split = 1: all of them); store dk * sm_scale and dv, in
    #   dk_ptr's dtype, at rows program_id(1) * seqlen_k + key of dk_ptr and dv_ptr (mask keys >= seqlen_k).
    #   More: python -m autograder hint flash_attention.backward
    raise NotImplementedError("TODO(flash_attention.backward): not implemented yet; see README.md")


@triton.jit
def _attn_bwd_sum_parts_kernel(
    dk_part_ptr,  # (B * Hkv, split, Sk * HEAD_DIM) float32: the dK/dV kernel's partial sums
    dv_part_ptr,
    dk_ptr,  # (B * Hkv, Sk * HEAD_DIM) in the input dtype (written)
    dv_ptr,
    n_per_head,  # Sk * HEAD_DIM
    split,
    BLOCK: tl.constexpr,
):
    """dK and dV of one KV head: its split partial sums added in order, so the result does not depend on which
    program finished first."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_per_head
    head = tl.program_id(1).to(tl.int64)
    dk = tl.zeros([BLOCK], dtype=tl.float32)
    dv = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(0, split):
        part = (head * split + s) * n_per_head + offs
        dk += tl.load(dk_part_ptr + part, mask=mask, other=0.0)
        dv += tl.load(dv_part_ptr + part, mask=mask, other=0.0)
    tl.store(dk_ptr + head * n_per_head + offs, dk.to(dk_ptr.dtype.element_ty), mask=mask)
    tl.store(dv_ptr + head * n_per_head + offs, dv.to(dv_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _attn_bwd_dq_inner(
    dq,  # (BLOCK_M, HEAD_DIM) float32 accumulator
    q,  # (BLOCK_M, HEAD_DIM)
    do,
    lse2,  # (BLOCK_M,) logsumexp in log2 units (+inf on rows past seqlen_q)
    delta,  # (BLOCK_M,)
    k_head_ptr,
    v_head_ptr,
    lo,
    hi,
    offs_m,
    seqlen_k,
    qk_scale,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    MASK_KEYS: tl.constexpr,
    MASK_CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """Accumulate dQ += dS K over the keys [lo, hi), BLOCK_N at a time."""
    # TODO(flash_attention.backward)
    #   Recompute each tile of P from the logsumexp and accumulate dQ += dS K over the key blocks of [lo, hi).
    #   More: python -m autograder hint flash_attention.backward
    raise NotImplementedError("TODO(flash_attention.backward): not implemented yet; see README.md")
    return dq


@triton.jit
def _attn_bwd_dq_kernel(
    q_ptr,  # (B, Hq, Sq, HEAD_DIM)
    k_ptr,  # (B, Hkv, Sk, HEAD_DIM)
    v_ptr,
    do_ptr,
    lse_ptr,  # (B, Hq, Sq) float32, natural log
    delta_ptr,
    dq_ptr,  # (B, Hq, Sq, HEAD_DIM) (written)
    seqlen_q,
    seqlen_k,
    n_heads_q,
    group,
    qk_scale,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,  # queries per program, a multiple of BLOCK_N
    BLOCK_N: tl.constexpr,  # keys per step
    CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """Program (i, b * Hq + h): dQ of queries i*BLOCK_M ... of head h."""
    qk_scale = tl.cast(qk_scale, tl.float32)  # Triton's launch passes floats as float32, Inductor as float64
    sm_scale = tl.cast(sm_scale, tl.float32)
    # TODO(flash_attention.backward)
    #   Program (i, b * Hq + h): dQ of queries i*BLOCK_M ... of head h, walking the keys as the forward does;
    #   store dq * sm_scale.
    #   More: python -m autograder hint flash_attention.backward
    raise NotImplementedError("TODO(flash_attention.backward): not implemented yet; see README.md")


# --------------------------------------------------------------------------------------------------
# Configuration: launch settings per GPU and shape, from configs.json
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FwdConfig:
    block_m: int  # queries per program
    block_n: int  # keys per step, a divisor of block_m
    num_warps: int
    num_stages: int
    tma: bool = False  # K and V through TMA descriptors (16-bit inputs on Hopper and newer)


@dataclass(frozen=True)
class BwdConfig:
    dkdv_block_m: int  # queries per step of the dK/dV kernel
    dkdv_block_n: int  # keys per dK/dV program
    dkdv_warps: int
    dkdv_stages: int
    dq_block_m: int  # queries per dQ program
    dq_block_n: int  # keys per step of the dQ kernel
    dq_warps: int
    dq_stages: int
    preprocess_rows: int  # rows of O and dO per program of the delta kernel
    dkdv_programs_per_sm: int = 0  # causal: share GQA groups among dK/dV programs up to this many per SM (dkdv_split)


@dataclass(frozen=True)
class DecodeConfig:
    keys_per_split: int
    block_n: int
    num_warps: int
    num_stages: int


def _element_size(bucket: str) -> int:  # pragma: no cover - GPU only: a GPU with no measured entry
    return 4 if bucket.startswith("float32") else 2


def _head_dim(bucket: str) -> int:  # pragma: no cover - GPU only: a GPU with no measured entry
    return 64 if "D<=64" in bucket else 128  # the largest head dimension the bucket holds


def _smem(kernel: str, s: dict, size: int, d: int, pipelined: bool) -> int:  # pragma: no cover - GPU only: a GPU with no measured entry
    """A generous estimate of a kernel's shared memory, from the tiles it keeps (resident) and those it
    streams. With asynchronous copies (sm_80 on) Triton keeps num_stages of the streamed tiles in flight;
    before them it keeps one, and a second copy of the resident ones for the tensor cores' layout."""

    def tiles(resident: int, streamed: int, stages: int) -> int:
        return size * d * (resident + stages * streamed if pipelined else 2 * resident + streamed)

    if kernel == "forward":  # Q resident; K and V streamed
        return tiles(s["block_m"], 2 * s["block_n"], s["num_stages"])
    if kernel in ("decode", "decode_int4"):  # the group's query rows (16 or more) resident; K and V streamed
        return tiles(16, 2 * s["block_n"], s["num_stages"])
    # backward: dK/dV keeps K, V and streams Q, dO; dQ keeps Q, dO and streams K, V
    dkdv = tiles(2 * s["dkdv_block_n"], 2 * s["dkdv_block_m"], s["dkdv_stages"])
    dq = tiles(2 * s["dq_block_m"], 2 * s["dq_block_n"], s["dq_stages"])
    return max(dkdv, dq)


def _fit(device: Device, kernel: str, bucket: str, reference: dict) -> dict:  # pragma: no cover - GPU only: a GPU with no measured entry
    """A GPU with no measured entry: the reference GPU's settings, shrunk until they fit its shared memory
    (fewer keys per step down to 64, then fewer stages down to 2, then smaller tiles, then one stage),
    with TMA only where the GPU has it."""
    s, size, d = dict(reference), _element_size(bucket), _head_dim(bucket)
    if "tma" in s:
        s["tma"] = s["tma"] and device.tma
    steps = {"forward": ("block_n", "num_stages", "block_m"), "decode": ("block_n", "num_stages", None),
             "decode_int4": ("block_n", "num_stages", None),
             "backward": ("dkdv_block_m", "dkdv_stages", "dkdv_block_n")}[kernel]  # fmt: skip
    streamed, stages, resident = steps
    while _smem(kernel, s, size, d, device.capability >= (8, 0)) > device.smem_per_block:
        if s[streamed] > 64:
            s[streamed] //= 2
        elif s[stages] > 2:
            s[stages] -= 1
        elif s[streamed] > 16:
            s[streamed] //= 2
        elif resident and s[resident] > 16:
            s[resident] //= 2
        elif s[stages] > 1:
            s[stages] -= 1
        else:
            break
        if kernel == "backward":  # the dQ kernel's tiles shrink with the dK/dV kernel's
            s.update(dq_block_m=s["dkdv_block_n"], dq_block_n=s["dkdv_block_m"], dq_stages=s["dkdv_stages"])
    return s


# solutions/flash_attention/configs.json, per GPU: "forward" by dtype, head dimension, causality and (16-bit)
# length class, "backward" and "decode" by dtype. The H200 entry came from the sweeps in
# results/h200/tune_flash_attention.txt: forward (128, 128, 8 warps, 3 stages) at D = 128 gave 597 TFLOP/s
# non-causal and 524 causal at 4x32x4096 bf16, against 534 and 487 for (128, 64); at D = 64, (64, 64, 4, 3)
# causal and (128, 64, 8, 3) non-causal. Backward: the dK/dV kernel ran 554 TFLOP/s of its own work with
# (64, 128, 8, 3) and the dQ kernel 596 with (128, 64, 8, 3); two stages instead of three cost 10%. With a
# causal mask and 32 query heads over 8 KV heads, dK/dV programs sharing a group up to 8 per SM
# (dkdv_programs_per_sm) took the backward from 440 to 399 us at 1x2048 tokens and from 1,329 to 1,166 at 1x4096
# (results/h200/flash_bwd_split_ab.md); the tuner of 2026-11-28 put 4 and 8 per SM level. The interpreter's 2 per
# SM make the CPU tier's small GQA cases share. Exact float32 dots run on the FMA units: small tiles. Decode splits
# the keys so that the B * Hkv * n_splits programs fill programs_per_sm per SM once, with no second, partial wave:
# at B8 Hkv8 Sk4096 that is 4 splits of 1024 keys, 47.2 us, against 48.6 us for 16 splits of 256. The
# interpreter gets BLOCK_M = 2 * BLOCK_N, so that the diagonal of a causal tile spans two key blocks and the
# small test shapes still cross several of them. The INT4 decode's interpreter tile is 32 keys (4 sub-splits of 8 at Hq / Hkv = 4) and its
# splits two tiles, so that the CPU tier's short caches cross sub-splits, tiles and splits.
CONFIGS = ConfigTable.beside(__file__, "flash_attention", rules=_fit)


# Lengths at which the 16-bit forward has entries of its own, "S<=1024" and "S<=2048" (both lengths within the
# bound): few key blocks per program, and at a batch of a few heads few programs. On an H200 at 4x32 heads, bf16,
# D = 128, causal, 64-query tiles of 4 warps (two programs per SM) ran at 0.85x, 0.88x and 0.88x cuDNN's speed at
# 512, 1024 and 2048 tokens, where the 128-query tiles that are the fastest from 4096 on ran at 0.69x, 0.77x and
# 0.83x; non-causal the small tile won at 512 only (results/h200/flash_fwd_probe.md). The tuner picks per class.
SHORT_ATTENTION = (1024, 2048)
SHORT_TUNED_AT = {1024: (512, 1024), 2048: (2048,)}  # the lengths at which the tuner times each class


def length_class(seqlen_q: int, seqlen_k: int) -> str:
    """The call's class: S<=b for the least bound b of SHORT_ATTENTION both lengths are within, else "" (long)."""
    return ceil_bucket(max(seqlen_q, seqlen_k), SHORT_ATTENTION, "S", "")


def forward_bucket(table: ConfigTable, head_dim: int, dtype: torch.dtype, causal: bool, length: str) -> str:
    """The table's bucket for a forward call: by dtype, head dimension, causality and length class. A table from
    before the length classes (its reference GPU has no such entry) gets the bucket of every length."""
    if dtype == torch.float32:
        return "float32"
    else:  # pragma: no cover - GPU tier only: 16-bit (tests/test_configs.py calls it on the CPU)
        size = "D=128" if head_dim == 128 else "D<=64"
        bucket = f"16-bit, {size}" + (", causal" if causal else "")
        short = f"{bucket}, {length}"
        return short if length and table.reference("forward", short) is not None else bucket


@CONFIGS.cached
def forward_config(device: Device, head_dim: int, dtype: torch.dtype, causal: bool, length: str = "") -> FwdConfig:
    """Tile shape, warps, pipeline depth and TMA for the forward; length: length_class of the call."""
    cfg = FwdConfig(**CONFIGS.pick(device, "forward", forward_bucket(CONFIGS, head_dim, dtype, causal, length)))
    # TMA descriptors need a GPU that has the engine and a Triton that has the host-side descriptors
    return cfg if cfg.tma and TensorDescriptor is not None and device.tma else replace(cfg, tma=False)


@CONFIGS.cached
def backward_config(device: Device, dtype: torch.dtype) -> BwdConfig:
    """Tiles of the three backward kernels."""
    return BwdConfig(**CONFIGS.pick(device, "backward", "float32" if dtype == torch.float32 else "16-bit"))


def dkdv_split(group: int, programs: int, causal: bool, sms: int, programs_per_sm: int) -> int:
    """How many dK/dV programs share one KV head's group of query heads: a divisor of the group.

    A program walks every query of its heads, so with few KV heads the grid is small; and with a causal mask
    the program of the first keys walks all the queries while that of the last keys walks a few, and the
    kernel lasts as long as its longest program. Sharing the group makes more, shorter programs, for the price
    of float32 partial sums and a kernel that adds them. Causal: the largest share that keeps the grid within
    programs_per_sm per SM (0: never share). Not causal, the work is even: share only while SMs would idle."""
    per_sm = programs_per_sm if causal else min(programs_per_sm, 1)
    shares = [d for d in range(1, group + 1) if group % d == 0 and programs * d <= sms * per_sm]
    return max(shares, default=1)


@CONFIGS.cached
def decode_config(device: Device, dtype: torch.dtype, seqlen_k: int, n_groups: int) -> tuple[DecodeConfig, int]:
    """Split size and tile for decode over seqlen_k keys and n_groups (batch, KV head) pairs, and the
    combine kernel's warps."""
    s = CONFIGS.pick(device, "decode", "float32" if dtype == torch.float32 else "16-bit")
    if "keys_per_split" in s:
        keys = s["keys_per_split"]
    else:  # pragma: no cover - GPU only: splits from the SM count
        # Fill programs_per_sm slots per SM once, with splits of at least min_blocks_per_split key blocks.
        splits = max(1, min(cdiv(seqlen_k, s["min_blocks_per_split"] * s["block_n"]),
                            (s["programs_per_sm"] * device.sms) // n_groups))  # fmt: skip
        keys = cdiv(cdiv(seqlen_k, splits), s["block_n"]) * s["block_n"]
    return DecodeConfig(keys, s["block_n"], s["num_warps"], s["num_stages"]), s["combine_elements"]


def int4_tiles(group: int, group_size: int, block_n: int) -> tuple[int, int]:
    """(BLOCK_G, BLOCK_N) of the INT4 split kernel for `group` query heads per KV head.

    tl.dot needs 16 rows; with fewer query heads the spare rows become sub-splits of each tile of keys (row
    j * GQP + h is head h over the j-th chunk), which lets one tile span several K groups: each chunk of
    BLOCK_N // N_SUB keys lies in one group. Tiles are kept at 32 keys or more (more rows if need be): Triton
    3.6 compiled a 16-key join + reshape wrongly in 16 bits on an H100 (results/h100/NOTES.md, 2026-11-24)."""
    gqp = next_power_of_2(group)
    block_g = max(16, gqp)
    while True:
        n_sub = block_g // gqp
        tile = n_sub * min(group_size, max(1, block_n // n_sub))
        if tile >= 32:
            return block_g, tile
        block_g *= 2


@CONFIGS.cached
def decode_int4_config(device: Device, dtype: torch.dtype, seqlen_k: int, n_groups: int, group: int, group_size: int,
                       ) -> tuple[DecodeConfig, int, int]:
    """The INT4 decode's split size, tile (keys, rows) and warps, and the combine kernel's threshold.

    Its own entry, not the 16-bit decode's: unpacking makes each key cost more instructions than the bytes it
    reads, so it wants wide tiles (fewer q * scale products per key) and the splits that fill the GPU once.
    Measured on an H100 at 8x32/8 heads, D=128, bf16, G=32 (2026-11-25, results/h100/kv_int4_decode.md):
    128-key tiles of 4 sub-splits, 4 warps, 3 stages, 184.5 us at 16384 keys against 222.9 us for the
    32-key tiles of one group before and 195.0 us for SDPA over the bf16 cache."""
    s = CONFIGS.pick(device, "decode_int4", "float32" if dtype == torch.float32 else "16-bit")
    block_g, block_n = int4_tiles(group, group_size, s["block_n"])
    if "keys_per_split" in s:
        keys = cdiv(s["keys_per_split"], block_n) * block_n
    else:  # pragma: no cover - GPU only: splits from the SM count
        # a power of two keys per split: 480 took 90.9 us at 4096 keys, 512 took 62.7 (H100, 2026-11-24)
        splits = max(1, cdiv(s["programs_per_sm"] * device.sms, n_groups))
        keys = min(s["max_keys_per_split"], max(block_n, next_power_of_2(cdiv(seqlen_k, splits))))
    return DecodeConfig(keys, block_n, s["num_warps"], s["num_stages"]), block_g, s["combine_elements"]


# What `python -m autograder tune flash_attention` tries: around the H200's choices, with smaller tiles
# and fewer stages for GPUs with less shared memory or fewer registers. float32 is graded for
# correctness only: its settings are not timed.
def _attn(shape: list[int], causal: bool, **extra: int) -> dict:
    return {"shape": shape, "causal": causal, "dtype": "bfloat16", **extra}


def _fwd(tiles: list[tuple[int, int, int, int]]) -> list[dict]:
    return [{"block_m": m, "block_n": n, "num_warps": w, "num_stages": s, "tma": True} for m, n, w, s in tiles]


SEARCH_SPACE = [
    # D=128 is tuned on the graded speed shape, causal and not apart: their best tiles differ.
    SearchSpace("forward", "flash_attention.forward", {"16-bit, D=128": [_attn([4, 32, 4096, 128], False)]},
                _fwd([(128, 128, 8, 3), (128, 128, 8, 2), (128, 64, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3)])),
    SearchSpace("forward", "flash_attention.forward", {"16-bit, D=128, causal": [_attn([4, 32, 4096, 128], True)]},
                _fwd([(128, 128, 8, 3), (128, 128, 8, 2), (128, 64, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3)])),
    SearchSpace("forward", "flash_attention.forward", {"16-bit, D<=64": [_attn([2, 16, 4096, 64], False)]},
                _fwd([(128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 3), (64, 64, 4, 3)])),
    SearchSpace("forward", "flash_attention.forward", {"16-bit, D<=64, causal": [_attn([2, 16, 4096, 64], True)]},
                _fwd([(64, 64, 4, 3), (128, 64, 8, 3), (128, 64, 4, 3)])),
    # The shorter lengths (SHORT_ATTENTION), causal and not apart: 64-query tiles give twice the programs, and two of
    # them share an SM where 64-key stages leave the room.
    *(SearchSpace("forward", "flash_attention.forward",
                  {f"16-bit, {size}{', causal' if causal else ''}, S<={bound}":
                   [_attn([4, 32, s, d], causal) for s in lengths]},
                  _fwd([(128, 128, 8, 3), (128, 64, 8, 3), (64, 64, 4, 3), (64, 32, 4, 3), (128, 32, 8, 4)]))
      for size, d in (("D=128", 128), ("D<=64", 64)) for causal in (False, True)
      for bound, lengths in SHORT_TUNED_AT.items()),
    # Backward: one long shape with even work (MHA, not causal) and module 10's training shape (causal, 32 query
    # heads over 8 KV heads), where sharing a group among dK/dV programs pays. Tuned at 2048 tokens alone, it once
    # picked 32x64 tiles, 1.6% ahead there and 7% behind 64x128 at 4x32x4096 (7,328 against 6,794 us, two runs on
    # one day: results/h200/flash_bwd_split_ab_first.md and flash_bwd_split_ab.md).
    SearchSpace("backward", "flash_attention.backward",
                {"16-bit": [_attn([2, 16, 4096, 128], False), _attn([1, 32, 2048, 128], True, kv_heads=8)]},
                [{"dkdv_block_m": a, "dkdv_block_n": b, "dkdv_warps": w, "dkdv_stages": s, "dq_block_m": b, "dq_block_n": a,
                  "dq_warps": w, "dq_stages": s, "preprocess_rows": 64, "dkdv_programs_per_sm": per_sm}
                 for a, b, w, s in ((64, 128, 8, 3), (64, 128, 8, 2), (32, 128, 8, 3), (64, 64, 4, 3), (32, 64, 4, 3))
                 for per_sm in (0, 4, 8)]),
    SearchSpace("decode", "flash_attention.decode", {"16-bit": [_attn([8, 32, 1, 128], False, kv_heads=8, seq_k=4096)]},
                grid(block_n=[32, 64], num_warps=[4], num_stages=[2, 3], programs_per_sm=[1, 2, 4],
                     min_blocks_per_split=[2], combine_elements=[4096])),
    # the INT4 decode at KIVI's default group of 32 keys and at groups of 128
    SearchSpace("decode_int4", "flash_attention.kv_int4",
                {"16-bit": [_attn([8, 32, 1, 128], False, kv_heads=8, seq_k=16384, group_size=32),
                            _attn([8, 32, 1, 128], False, kv_heads=8, seq_k=4096, group_size=128)]},
                grid(block_n=[64, 128], num_warps=[2, 4], num_stages=[2, 3], programs_per_sm=[2, 4],
                     max_keys_per_split=[2048], combine_elements=[4096])),
]  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Launchers: inputs already checked, settings from the configuration
# --------------------------------------------------------------------------------------------------


def attention_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    scale: float,
    store_lse: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Launch the forward kernel. Returns o (B, Hq, Sq, D) and, when store_lse, lse (B, Hq, Sq) float32."""
    batch, n_heads_q, seqlen_q, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, seqlen_q), dtype=torch.float32, device=q.device) if store_lse else None
    if o.numel() == 0:  # pragma: no cover - empty input, no launch
        return o, lse
    cfg = forward_config(device_of(q), head_dim, q.dtype, causal, length_class(seqlen_q, seqlen_k))
    if cfg.tma:  # pragma: no cover - GPU only: TMA
        # K and V as one (B*Hkv*Sk, D) matrix each: a tile that runs past its head reads the next head's
        # rows (masked in the kernel) or, at the very end, zeros.
        k_desc = TensorDescriptor(k, shape=[k.numel() // head_dim, head_dim], strides=[head_dim, 1],
                                  block_shape=[cfg.block_n, head_dim])
        v_desc = TensorDescriptor(v, shape=[v.numel() // head_dim, head_dim], strides=[head_dim, 1],
                                  block_shape=[cfg.block_n, head_dim])
    else:
        k_desc, v_desc = k, v  # stand-ins: the kernel does not touch them
    grid = (cdiv(seqlen_q, cfg.block_m), batch * n_heads_q)
    launch(_attn_fwd_kernel, grid,
        q, k, v, o, lse if store_lse else o, k_desc, v_desc,
        seqlen_q, seqlen_k, n_heads_q, n_heads_q // n_heads_kv, scale * LOG2E,
        HEAD_DIM=head_dim, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, CAUSAL=causal, STORE_LSE=store_lse,
        USE_TMA=cfg.tma, DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    return o, lse


def _combine(o_part: torch.Tensor, lse_part: torch.Tensor, o: torch.Tensor, lse: torch.Tensor, combine_elements: int) -> None:
    """Launch the combine kernel after a split kernel: one program per query row. Where the GPU can (Hopper and
    newer), as a programmatic dependent launch: it is launched while the split kernel finishes and waits on the GPU
    for its results, which takes the gap between the two launches out of the decode's time (1.1-1.5 us of 19-135 us
    on an H200, results/h200/decode_pdl_probe.json)."""
    rows, n_splits, head_dim = o_part.shape
    after = device_of(o).dependent_launch
    launch(_attn_decode_combine_kernel, (rows,),
        o_part, lse_part, o, lse, n_splits, HEAD_DIM=head_dim, BLOCK_S=next_power_of_2(n_splits), AFTER_SPLIT=after,
        num_warps=4 if head_dim * n_splits >= combine_elements else 1, **({"launch_pdl": True} if after else {}),
    )  # fmt: skip


def attention_decode(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sq == 1: split the keys over programs, then combine. Returns o (B, Hq, 1, D) and lse (B, Hq, 1)."""
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    cfg, combine_elements = decode_config(device_of(q), q.dtype, seqlen_k, batch * n_heads_kv)
    n_splits = cdiv(seqlen_k, cfg.keys_per_split)
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    launch(_attn_decode_split_kernel, (n_splits, batch * n_heads_kv),
        q, k, v, o_part, lse_part, seqlen_k, group, cfg.keys_per_split, scale * LOG2E,
        HEAD_DIM=head_dim, BLOCK_N=cfg.block_n, BLOCK_G=max(16, next_power_of_2(group)),
        DOT_PRECISION=precision, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    _combine(o_part, lse_part, o, lse, combine_elements)
    return o, lse


def kv_quantize_int8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - not graded (tests/test_wrappers.py)
    """x (B, Hkv, Sk, D) -> INT8 codes shaped like x and float32 scales (B, Hkv, Sk), one per token and head."""
    codes = torch.empty(x.shape, dtype=torch.int8, device=x.device)
    scales = torch.empty(x.shape[:-1], dtype=torch.float32, device=x.device)
    n_rows = scales.numel()
    block_r = 16
    grid = (cdiv(n_rows, block_r),)
    launch(_kv_quantize_int8_kernel, grid, x, codes, scales, n_rows, HEAD_DIM=x.shape[-1], BLOCK_R=block_r)
    return codes, scales


def attention_decode_int8(
    q: torch.Tensor, k_q: torch.Tensor, k_scale: torch.Tensor, v_q: torch.Tensor, v_scale: torch.Tensor, scale: float
) -> torch.Tensor:
    """Sq == 1 over an INT8 cache: split the keys over programs, then the decode's combine. Returns o (B, Hq, 1, D)."""
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k_q.shape[1], k_q.shape[2]
    group = n_heads_q // n_heads_kv
    # The 16-bit decode's splits: the same programs stream half the bytes (plus 4 bytes of scales per key).
    cfg, combine_elements = decode_config(device_of(q), q.dtype, seqlen_k, batch * n_heads_kv)
    n_splits = cdiv(seqlen_k, cfg.keys_per_split)
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    launch(_attn_decode_int8_split_kernel, (n_splits, batch * n_heads_kv),
        q, k_q, k_scale, v_q, v_scale, o_part, lse_part, seqlen_k, group, cfg.keys_per_split, scale * LOG2E,
        HEAD_DIM=head_dim, BLOCK_N=cfg.block_n, BLOCK_G=max(16, next_power_of_2(group)),
        DOT_PRECISION=precision, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    _combine(o_part, lse_part, o, lse, combine_elements)
    return o


def attention_decode_int4(
    q: torch.Tensor,
    k_packed: torch.Tensor,
    k_scale: torch.Tensor,
    k_zero: torch.Tensor,
    v_packed: torch.Tensor,
    v_scale: torch.Tensor,
    v_zero: torch.Tensor,
    group_size: int,
    scale: float,
) -> torch.Tensor:
    """Sq == 1 over the KIVI INT4 cache: split the keys over programs, then the decode's combine. Returns o (B, Hq, 1, D)."""
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k_packed.shape[1], k_packed.shape[2]
    group = n_heads_q // n_heads_kv
    cfg, block_g, combine_elements = decode_int4_config(device_of(q), q.dtype, seqlen_k, batch * n_heads_kv, group,
                                                        group_size)  # fmt: skip
    n_splits = cdiv(seqlen_k, cfg.keys_per_split)
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    launch(_attn_decode_int4_split_kernel, (n_splits, batch * n_heads_kv),
        q, k_packed, k_scale, k_zero, v_packed, v_scale, v_zero, o_part, lse_part, seqlen_k, k_scale.shape[2], group,
        cfg.keys_per_split, scale * LOG2E, GROUP_SIZE=group_size, HEAD_DIM=head_dim, BLOCK_D=max(32, head_dim),
        BLOCK_N=cfg.block_n, BLOCK_G=block_g, GQP=next_power_of_2(group), DOT_PRECISION=precision,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    _combine(o_part, lse_part, o, lse, combine_elements)
    return o


SUM_PARTS_BLOCK = 2048  # elements per program of the partial sums' kernel (a streaming add: any large block will do)


def attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    do: torch.Tensor,
    causal: bool,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Launch the backward kernels (three; four when dK/dV programs share a group). Returns dq (shaped like q),
    dk and dv (shaped like k)."""
    batch, n_heads_q, seqlen_q, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    device = device_of(q)
    cfg = backward_config(device, q.dtype)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    delta = torch.empty_like(lse)  # (B, Hq, Sq) float32
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    n_rows = batch * n_heads_q * seqlen_q
    block_r = cfg.preprocess_rows
    launch(_attn_bwd_preprocess_kernel, (cdiv(n_rows, block_r),),
        o, do, delta, n_rows, HEAD_DIM=head_dim, BLOCK_R=block_r
    )
    key_blocks = cdiv(seqlen_k, cfg.dkdv_block_n)
    split = dkdv_split(group, key_blocks * batch * n_heads_kv, causal, device.sms, cfg.dkdv_programs_per_sm)
    if split == 1:
        dk_out, dv_out = dk, dv
    else:  # float32 partial sums, (B * Hkv * split, Sk, D), added up below
        dk_out = torch.empty((batch * n_heads_kv * split, seqlen_k, head_dim), device=q.device, dtype=torch.float32)
        dv_out = torch.empty_like(dk_out)
    launch(_attn_bwd_dkdv_kernel, (key_blocks, batch * n_heads_kv * split),
        q, k, v, do, lse, delta, dk_out, dv_out, seqlen_q, seqlen_k, group, split, scale * LOG2E, scale,
        HEAD_DIM=head_dim, BLOCK_M=cfg.dkdv_block_m, BLOCK_N=cfg.dkdv_block_n, CAUSAL=causal,
        DOT_PRECISION=precision, num_warps=cfg.dkdv_warps, num_stages=cfg.dkdv_stages,
    )  # fmt: skip
    if split > 1:
        n_per_head = seqlen_k * head_dim
        launch(_attn_bwd_sum_parts_kernel, (cdiv(n_per_head, SUM_PARTS_BLOCK), batch * n_heads_kv),
               dk_out, dv_out, dk, dv, n_per_head, split, BLOCK=SUM_PARTS_BLOCK)
    launch(_attn_bwd_dq_kernel, (cdiv(seqlen_q, cfg.dq_block_m), batch * n_heads_q),
        q, k, v, do, lse, delta, dq, seqlen_q, seqlen_k, n_heads_q, group, scale * LOG2E, scale,
        HEAD_DIM=head_dim, BLOCK_M=cfg.dq_block_m, BLOCK_N=cfg.dq_block_n, CAUSAL=causal,
        DOT_PRECISION=precision, num_warps=cfg.dq_warps, num_stages=cfg.dq_stages,
    )  # fmt: skip
    return dq, dk, dv


# --------------------------------------------------------------------------------------------------
# Autograd Function
# --------------------------------------------------------------------------------------------------


def _attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float, store_lse: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """O and the logsumexp (empty unless stored, or at decode, which always has it) through the right op."""
    if q.shape[2] == 1:
        return attention_decode_op(q, k, v, scale)  # one query row: causal or not is the same
    return attention_forward_op(q, k, v, causal, scale, store_lse)


class FlashAttentionFunction(torch.autograd.Function):
    """Forward through the Triton kernels, saving only O and the logsumexp (B, Hq, Sq) besides the inputs."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float
    ) -> torch.Tensor:
        o, lse = _attention(q, k, v, causal, scale, True)  # only called when a gradient is needed (see flash_attention)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.scale = causal, scale
        return o

    @staticmethod
    def backward(  # type: ignore[override]
        ctx, do: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None, None]:
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = attention_backward_op(q, k, v, o, lse, do, ctx.causal, ctx.scale)
        return dq, dk, dv, None, None


# --------------------------------------------------------------------------------------------------
# Custom ops: the launchers as PyTorch operators (course/ops.py), so torch.compile and CUDA graphs take them whole
# --------------------------------------------------------------------------------------------------


OPS = OpLibrary(__file__)  # float32_floats: every kernel here casts its float arguments to float32 first

def _attention_forward_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float, store_lse: bool) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    batch, n_heads_q, seqlen_q, _ = q.shape
    lse_shape = (batch, n_heads_q, seqlen_q) if store_lse else (0,)
    return torch.empty_like(q), q.new_empty(lse_shape, dtype=torch.float32)


@OPS.op("flash_attention_forward", "(Tensor q, Tensor k, Tensor v, bool causal, float scale, bool store_lse) -> (Tensor, Tensor)",
        _attention_forward_fake, float32_floats=True)  # fmt: skip
def attention_forward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float, store_lse: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """o and lse, or an empty lse when it is not stored (an op returns tensors, never None)."""
    o, lse = attention_forward(q, k, v, causal, scale, store_lse)
    return o, lse if lse is not None else q.new_empty(0, dtype=torch.float32)


def _attention_decode_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(q), q.new_empty(q.shape[:3], dtype=torch.float32)


@OPS.op("flash_attention_decode", "(Tensor q, Tensor k, Tensor v, float scale) -> (Tensor, Tensor)", _attention_decode_fake,
        float32_floats=True)  # fmt: skip
def attention_decode_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    return attention_decode(q, k, v, scale)


def _attention_backward_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor, do: torch.Tensor, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


@OPS.op("flash_attention_backward",
        "(Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, Tensor do, bool causal, float scale) -> (Tensor, Tensor, Tensor)",
        _attention_backward_fake, float32_floats=True)  # fmt: skip
def attention_backward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor, do: torch.Tensor, causal: bool, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return attention_backward(q, k, v, o, lse, do.contiguous(), causal, scale)


def _kv_quantize_int8_fake(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(x, dtype=torch.int8), x.new_empty(x.shape[:-1], dtype=torch.float32)


@OPS.op("kv_quantize_int8", "(Tensor x) -> (Tensor, Tensor)", _kv_quantize_int8_fake)
def kv_quantize_int8_op(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover - not graded (tests/test_wrappers.py)
    return kv_quantize_int8(x)


def _attention_decode_int8_fake(q: torch.Tensor, k_q: torch.Tensor, k_scale: torch.Tensor, v_q: torch.Tensor, v_scale: torch.Tensor, scale: float) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(q)


@OPS.op("flash_attention_decode_int8", "(Tensor q, Tensor k_q, Tensor k_scale, Tensor v_q, Tensor v_scale, float scale) -> Tensor",
        _attention_decode_int8_fake, float32_floats=True)  # fmt: skip
def attention_decode_int8_op(q: torch.Tensor, k_q: torch.Tensor, k_scale: torch.Tensor, v_q: torch.Tensor, v_scale: torch.Tensor, scale: float) -> torch.Tensor:
    return attention_decode_int8(q, k_q, k_scale, v_q, v_scale, scale)


def _attention_decode_int4_fake(q: torch.Tensor, k_packed: torch.Tensor, k_scale: torch.Tensor, k_zero: torch.Tensor, v_packed: torch.Tensor, v_scale: torch.Tensor, v_zero: torch.Tensor, group_size: int, scale: float) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(q)


@OPS.op("flash_attention_decode_int4",
        "(Tensor q, Tensor k_packed, Tensor k_scale, Tensor k_zero, Tensor v_packed, Tensor v_scale, Tensor v_zero, int group_size, float scale) -> Tensor",
        _attention_decode_int4_fake, float32_floats=True)  # fmt: skip
def attention_decode_int4_op(q: torch.Tensor, k_packed: torch.Tensor, k_scale: torch.Tensor, k_zero: torch.Tensor, v_packed: torch.Tensor, v_scale: torch.Tensor, v_zero: torch.Tensor, group_size: int, scale: float) -> torch.Tensor:
    return attention_decode_int4(q, k_packed, k_scale, k_zero, v_packed, v_scale, v_zero, group_size, scale)


# --------------------------------------------------------------------------------------------------
# Module: the public API
# --------------------------------------------------------------------------------------------------


def _check_scale(fn: str, scale: float | None) -> None:
    """None (1 / sqrt(D)) or a positive finite number."""
    if scale is not None and (not isinstance(scale, (int, float)) or not scale > 0 or not math.isfinite(scale)):
        raise ValueError(f"{fn}: `scale` must be a positive number, got {scale!r}.")


def _check_flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float | None
) -> None:
    """The checks of `flash_attention`: a TypeError or ValueError that says what to pass instead."""
    fn = "flash_attention"
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(fn, name, t, ndim=4)
    check_same(fn, "dtype", q=q, k=k, v=v)
    check_same(fn, "device", q=q, k=k, v=v)
    if k.shape != v.shape:
        raise ValueError(f"{fn}: `k` and `v` must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}.")
    batch, n_heads_q, seqlen_q, head_dim = q.shape
    if k.shape[0] != batch or k.shape[3] != head_dim:
        raise ValueError(
            f"{fn}: `k` must be (B, Hkv, Sk, D) with q's B = {batch} and D = {head_dim}, got {tuple(k.shape)}."
        )
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"{fn}: the head dimension must be one of {HEAD_DIMS}, got D = {head_dim}.")
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    if n_heads_kv == 0 or n_heads_q % n_heads_kv != 0:
        raise ValueError(
            f"{fn}: q's {n_heads_q} heads must be a multiple of k's {n_heads_kv} heads (grouped-query attention)."
        )
    if seqlen_k == 0:
        raise ValueError(f"{fn}: `k` and `v` hold no keys (Sk = 0): every query needs at least one key.")
    if causal and seqlen_q != seqlen_k:
        raise ValueError(
            f"{fn}: causal=True needs as many queries as keys, got Sq = {seqlen_q} and Sk = {seqlen_k}; "
            "for decoding one new token (Sq = 1) pass causal=False."
        )
    _check_scale(fn, scale)


_CHECKED_FLASH_ATTENTION = CheckedOnce(_check_flash_attention)


def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, scale: float | None = None
) -> torch.Tensor:
    """softmax(scale * q @ k^T [causal mask]) @ v, per head, without materialising the scores.

    q: (B, Hq, Sq, D); k, v: (B, Hkv, Sk, D) with Hq a multiple of Hkv (grouped-query attention: query
    head h reads KV head h // (Hq // Hkv)); D in {16, 32, 64, 128}; float32, float16 or bfloat16, one
    dtype and device, contiguous. causal=True masks key j for query i when j > i and needs Sq == Sk.
    scale defaults to 1 / sqrt(D). Returns (B, Hq, Sq, D) in q's dtype; differentiable in q, k and v.
    """
    _CHECKED_FLASH_ATTENTION(q, k, v, causal, scale)  # the checks, once per signature (CheckedOnce)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[3])
    if not needs_autograd(q, k, v):  # inference: no graph to record, so no autograd Function to pay for
        return _attention(q, k, v, bool(causal), float(scale), False)[0]
    return FlashAttentionFunction.apply(q, k, v, bool(causal), float(scale))


def quantize_kv(k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # pragma: no cover - not graded (tests/test_wrappers.py)
    """An INT8 KV cache from k, v (B, Hkv, Sk, D): (k_q, k_scale, v_q, v_scale), codes int8 shaped like k and
    float32 scales (B, Hkv, Sk), symmetric per token: k ~ k_q * k_scale[..., None]. Given code, not graded."""
    fn = "quantize_kv"
    for name, t in (("k", k), ("v", v)):
        check_tensor(fn, name, t, ndim=4)
    check_same(fn, "dtype", k=k, v=v)
    check_same(fn, "device", k=k, v=v)
    if k.shape != v.shape or k.shape[-1] not in HEAD_DIMS:
        raise ValueError(f"{fn}: `k` and `v` must share one shape (B, Hkv, Sk, D), D in {HEAD_DIMS}; got "
                         f"{tuple(k.shape)} and {tuple(v.shape)}.")  # fmt: skip
    return (*kv_quantize_int8_op(k), *kv_quantize_int8_op(v))


def _check_flash_decode_int8(
    q: torch.Tensor,
    k_q: torch.Tensor,
    k_scale: torch.Tensor,
    v_q: torch.Tensor,
    v_scale: torch.Tensor,
    scale: float | None,
) -> None:
    """The checks of `flash_decode_int8`: a TypeError or ValueError that says what to pass instead."""
    fn = "flash_decode_int8"
    check_tensor(fn, "q", q, ndim=4)
    for name, t in (("k_q", k_q), ("v_q", v_q)):
        check_tensor(fn, name, t, ndim=4, dtypes=(torch.int8,))
    for name, t in (("k_scale", k_scale), ("v_scale", v_scale)):
        check_tensor(fn, name, t, ndim=3, dtypes=(torch.float32,))
    check_same(fn, "device", q=q, k_q=k_q, k_scale=k_scale, v_q=v_q, v_scale=v_scale)
    batch, n_heads_q, seqlen_q, head_dim = q.shape
    if k_q.shape != v_q.shape or k_scale.shape != v_scale.shape or tuple(k_scale.shape) != tuple(k_q.shape[:3]):
        raise ValueError(f"{fn}: k_q and v_q must be (B, Hkv, Sk, D) and their scales (B, Hkv, Sk); got "
                         + ", ".join(str(tuple(t.shape)) for t in (k_q, v_q, k_scale, v_scale)) + ".")
    if seqlen_q != 1 or k_q.shape[0] != batch or k_q.shape[3] != head_dim or head_dim not in HEAD_DIMS:
        raise ValueError(f"{fn}: q must be (B, Hq, 1, D) with k_q's B and D, D in {HEAD_DIMS}; got q "
                         f"{tuple(q.shape)} and k_q {tuple(k_q.shape)}.")  # fmt: skip
    n_heads_kv = k_q.shape[1]
    if n_heads_kv == 0 or n_heads_q % n_heads_kv != 0 or k_q.shape[2] == 0:
        raise ValueError(f"{fn}: q's {n_heads_q} heads must be a multiple of the cache's {n_heads_kv}, "
                         f"and the cache must hold at least one key (Sk = {k_q.shape[2]}).")  # fmt: skip
    _check_scale(fn, scale)


_CHECKED_FLASH_DECODE_INT8 = CheckedOnce(_check_flash_decode_int8)


def flash_decode_int8(
    q: torch.Tensor,
    k_q: torch.Tensor,
    k_scale: torch.Tensor,
    v_q: torch.Tensor,
    v_scale: torch.Tensor,
    scale: float | None = None,
) -> torch.Tensor:
    """Decode attention (one query row) over an INT8 KV cache, dequantized inside the split-K kernel.

    q: (B, Hq, 1, D) float32, float16 or bfloat16; k_q, v_q: (B, Hkv, Sk, D) int8; k_scale, v_scale:
    (B, Hkv, Sk) float32, so that K = k_q * k_scale[..., None] (as quantize_kv makes them). Hq a multiple of
    Hkv (GQA), D in {16, 32, 64, 128}, all contiguous on one device. Returns (B, Hq, 1, D) in q's dtype.
    """
    _CHECKED_FLASH_DECODE_INT8(q, k_q, k_scale, v_q, v_scale, scale)  # the checks, once per signature (CheckedOnce)
    scale = 1.0 / math.sqrt(q.shape[3]) if scale is None else scale
    return attention_decode_int8_op(q, k_q, k_scale, v_q, v_scale, float(scale))


def quantize_kv_int4(
    k: torch.Tensor, v: torch.Tensor, group_size: int = 32
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # pragma: no cover - not graded (tests/test_wrappers.py)
    """The KIVI INT4 cache from k, v (B, Hkv, Sk, D): (k_packed, k_scale, k_zero, v_packed, v_scale, v_zero),
    keys per channel over groups of group_size tokens, values per token (course/kivi.py has the format).
    Given code (PyTorch ops, which torch.compile traces as they are), not graded."""
    fn = "quantize_kv_int4"
    for name, t in (("k", k), ("v", v)):
        check_tensor(fn, name, t, ndim=4)
    check_same(fn, "dtype", k=k, v=v)
    check_same(fn, "device", k=k, v=v)
    if k.shape != v.shape or k.shape[-1] not in HEAD_DIMS:
        raise ValueError(f"{fn}: `k` and `v` must share one shape (B, Hkv, Sk, D), D in {HEAD_DIMS}; got "
                         f"{tuple(k.shape)} and {tuple(v.shape)}.")  # fmt: skip
    c = quantize_kivi(k, v, group_size)
    return c["k_packed"], c["k_scale"], c["k_zero"], c["v_packed"], c["v_scale"], c["v_zero"]


def _check_flash_decode_int4(
    q: torch.Tensor,
    k_packed: torch.Tensor,
    k_scale: torch.Tensor,
    k_zero: torch.Tensor,
    v_packed: torch.Tensor,
    v_scale: torch.Tensor,
    v_zero: torch.Tensor,
    group_size: int,
    scale: float | None,
) -> None:
    """The checks of `flash_decode_int4`: a TypeError or ValueError that says what to pass instead."""
    fn = "flash_decode_int4"
    check_tensor(fn, "q", q, ndim=4)
    for name, t in (("k_packed", k_packed), ("v_packed", v_packed)):
        check_tensor(fn, name, t, ndim=4, dtypes=(torch.uint8,))
    for name, t in (("k_scale", k_scale), ("k_zero", k_zero)):
        check_tensor(fn, name, t, ndim=4, dtypes=(torch.float32,))
    for name, t in (("v_scale", v_scale), ("v_zero", v_zero)):
        check_tensor(fn, name, t, ndim=3, dtypes=(torch.float32,))
    check_same(fn, "device", q=q, k_packed=k_packed, k_scale=k_scale, k_zero=k_zero, v_packed=v_packed,
               v_scale=v_scale, v_zero=v_zero)  # fmt: skip
    if group_size not in KIVI_GROUP_SIZES:
        raise ValueError(f"{fn}: group_size must be one of {KIVI_GROUP_SIZES}, got {group_size!r}.")
    batch, n_heads_q, seqlen_q, head_dim = q.shape
    b, n_heads_kv, seqlen_k, half = k_packed.shape
    groups = (b, n_heads_kv, -(-seqlen_k // group_size), head_dim)
    if (v_packed.shape != k_packed.shape or tuple(k_scale.shape) != groups or tuple(k_zero.shape) != groups
            or tuple(v_scale.shape) != (b, n_heads_kv, seqlen_k) or v_zero.shape != v_scale.shape):
        raise ValueError(f"{fn}: expected k_packed and v_packed (B, Hkv, Sk, D // 2), k_scale and k_zero "
                         f"(B, Hkv, ceil(Sk / {group_size}), D), v_scale and v_zero (B, Hkv, Sk); got "
                         + ", ".join(str(tuple(t.shape)) for t in (k_packed, v_packed, k_scale, k_zero, v_scale, v_zero)) + ".")
    if seqlen_q != 1 or b != batch or 2 * half != head_dim or head_dim not in HEAD_DIMS:
        raise ValueError(f"{fn}: q must be (B, Hq, 1, D) with the cache's B and D = 2 * k_packed.shape[-1], "
                         f"D in {HEAD_DIMS}; got q {tuple(q.shape)} and k_packed {tuple(k_packed.shape)}.")  # fmt: skip
    if n_heads_kv == 0 or n_heads_q % n_heads_kv != 0 or seqlen_k == 0:
        raise ValueError(f"{fn}: q's {n_heads_q} heads must be a multiple of the cache's {n_heads_kv}, "
                         f"and the cache must hold at least one key (Sk = {seqlen_k}).")  # fmt: skip
    _check_scale(fn, scale)


_CHECKED_FLASH_DECODE_INT4 = CheckedOnce(_check_flash_decode_int4)


def flash_decode_int4(
    q: torch.Tensor,
    k_packed: torch.Tensor,
    k_scale: torch.Tensor,
    k_zero: torch.Tensor,
    v_packed: torch.Tensor,
    v_scale: torch.Tensor,
    v_zero: torch.Tensor,
    group_size: int = 32,
    scale: float | None = None,
) -> torch.Tensor:
    """Decode attention (one query row) over the KIVI INT4 KV cache, dequantized inside the split-K kernel.

    q: (B, Hq, 1, D) float32, float16 or bfloat16; k_packed, v_packed: (B, Hkv, Sk, D // 2) uint8, two 4-bit
    codes a byte (channel 2j in the low nibble); k_scale, k_zero: (B, Hkv, ceil(Sk / group_size), D) float32,
    so that K[t, d] = code * k_scale[t // group_size, d] + k_zero[t // group_size, d]; v_scale, v_zero:
    (B, Hkv, Sk) float32, V[t, d] = code * v_scale[t] + v_zero[t] (as quantize_kv_int4 makes them).
    group_size in {16, 32, 64, 128}; Hq a multiple of Hkv (GQA), D in {16, 32, 64, 128}, all contiguous on
    one device. Returns (B, Hq, 1, D) in q's dtype.
    """
    # the checks, once per signature (CheckedOnce)
    _CHECKED_FLASH_DECODE_INT4(q, k_packed, k_scale, k_zero, v_packed, v_scale, v_zero, group_size, scale)
    scale = 1.0 / math.sqrt(q.shape[3]) if scale is None else scale
    return attention_decode_int4_op(q, k_packed, k_scale, k_zero, v_packed, v_scale, v_zero, int(group_size), float(scale))
