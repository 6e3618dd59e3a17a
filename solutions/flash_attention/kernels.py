"""Assignment 08, flash attention: a fused Triton forward (causal, grouped-query, any length), and as
bonuses a Triton backward and a split-K decode kernel.

    O = softmax(scale * Q K^T  [+ causal mask]) V        one (Sq, Sk) score matrix per head, never stored

The handout is README.md beside this file. Fill in every region marked TODO; keep the signatures, the
launch wrappers and the autograd Function as they are: the grader calls
`flash_attention(q, k, v, causal=False, scale=None)`. Grade yourself with `make grade` (or
`python -m autograder grade flash_attention`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.env import interpreter_requested
from course.validate import check_same, check_tensor

try:  # Hopper's bulk tensor copy engine (TMA), reached through host-side descriptors (triton >= 3.3)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - triton < 3.3: no TMA
    TensorDescriptor = None

LOG2E = 1.4426950408889634  # exp(x) = exp2(x * LOG2E): the hardware has a fast exp2, not a fast exp
LN2 = 0.6931471805599453
HEAD_DIMS = (16, 32, 64, 128)


# --------------------------------------------------------------------------------------------------
# Forward
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
    ### BEGIN SOLUTION flash_attention.forward
    #> For each block of BLOCK_N keys starting at start_n (range(lo, hi, BLOCK_N)):
    #>   1. load K and V for those keys, (BLOCK_N, HEAD_DIM) each, from k_head_ptr / v_head_ptr
    #>      (row n at offset n * HEAD_DIM); mask the rows past seqlen_k when MASK_KEYS (other=0).
    #>   2. s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION): raw scores (BLOCK_M, BLOCK_N), float32.
    #>   3. scale into log2 units (s * qk_scale); where MASK_KEYS / MASK_CAUSAL, set the masked scores to -inf
    #>      (key n is masked when n >= seqlen_k, or, causal, when n > the query's index offs_m).
    #>   4. m_new = max(m_i, row max of s); p = exp2(s - m_new); alpha = exp2(m_i - m_new)
    #>      l_i = l_i * alpha + row sum of p;  acc = acc * alpha + p @ v  (tl.dot(p.to(v.dtype), v, acc, ...))
    #>      m_i = m_new
    #> You may ignore k_desc / v_desc / USE_TMA: they are the fast path on Hopper GPUs (see the README).
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + offs_n0
        if USE_TMA:
            # One bulk copy per tile, issued by the copy engine; rows past the end read as zeros and
            # rows of the next head are masked below, so no per-element mask is needed.
            k = k_desc.load([kv_row0 + start_n, 0])  # pragma: no cover - GPU only: TMA
            v = v_desc.load([kv_row0 + start_n, 0])  # pragma: no cover - GPU only: TMA
        else:
            kv_offs = offs_n[:, None] * HEAD_DIM + offs_d[None, :]
            if MASK_KEYS:
                k = tl.load(k_head_ptr + kv_offs, mask=offs_n[:, None] < seqlen_k, other=0.0)
                v = tl.load(v_head_ptr + kv_offs, mask=offs_n[:, None] < seqlen_k, other=0.0)
            else:
                k = tl.load(k_head_ptr + kv_offs)
                v = tl.load(v_head_ptr + kv_offs)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N) float32
        if MASK_KEYS or MASK_CAUSAL:
            keep = offs_n[None, :] < seqlen_k
            if MASK_CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            s = tl.where(keep, s * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
        else:
            # The scale is positive, so max(s) * scale = max(s * scale); the multiply and the
            # subtraction below then fuse into one FMA per score.
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)  # how much the old running sums shrink under the new max
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
        m_i = m_new
    ### END SOLUTION
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
    ### BEGIN SOLUTION flash_attention.forward
    #> 1. Which tile: pid_m = program_id(0) (a block of BLOCK_M queries), pid_bh = program_id(1) = b * Hq + h.
    #>    The KV head is h // group, so its (b, kv head) index is b * (Hq // group) + h // group.
    #>    Offsets of a head's first element: head_index * seq_len * HEAD_DIM (use int64: they pass 2**31).
    #> 2. Load the (BLOCK_M, HEAD_DIM) query tile once (mask rows >= seqlen_q), start m_i = -inf,
    #>    l_i = 0, acc = 0 (float32).
    #> 3. Non-causal: call _attn_fwd_inner over the full key blocks [0, seqlen_k rounded down to BLOCK_N)
    #>    with no masks, then over the rest [that, seqlen_k) with MASK_KEYS.
    #>    Causal (seqlen_q == seqlen_k): keys [0, pid_m * BLOCK_M) lie below the diagonal for every row,
    #>    no mask; then [pid_m * BLOCK_M, min(pid_m * BLOCK_M + BLOCK_M, seqlen_k)) with both masks.
    #>    Keys after that are masked for every row of the tile: skip them.
    #> 4. Store acc / l_i in o's dtype (mask rows >= seqlen_q). When STORE_LSE, store the logsumexp
    #>    (m_i + log2(l_i)) * ln(2) into lse_ptr at pid_bh * seqlen_q + row.
    pid_m = tl.program_id(0)
    if CAUSAL:
        # Later query blocks see more keys: launch them first, so the last wave holds the short ones.
        pid_m = tl.num_programs(0) - 1 - pid_m
    pid_bh = tl.program_id(1)
    n_heads_kv = n_heads_q // group
    pid_bkv = (pid_bh // n_heads_q) * n_heads_kv + (pid_bh % n_heads_q) // group  # K/V are never repeated
    q_head = pid_bh.to(tl.int64) * seqlen_q * HEAD_DIM
    kv_head = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM
    kv_row0 = pid_bkv * seqlen_k

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_mask = offs_m < seqlen_q
    q_offs = offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(q_ptr + q_head + q_offs, mask=row_mask[:, None], other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        diag = pid_m * BLOCK_M
        acc, l_i, m_i = _attn_fwd_inner(
            acc, l_i, m_i, q, k_ptr + kv_head, v_ptr + kv_head, k_desc, v_desc, kv_row0, 0, diag, offs_m,
            seqlen_k, qk_scale, BLOCK_N, HEAD_DIM, False, False, USE_TMA, DOT_PRECISION,
        )  # fmt: skip
        acc, l_i, m_i = _attn_fwd_inner(
            acc, l_i, m_i, q, k_ptr + kv_head, v_ptr + kv_head, k_desc, v_desc, kv_row0, diag,
            tl.minimum(diag + BLOCK_M, seqlen_k), offs_m, seqlen_k, qk_scale, BLOCK_N, HEAD_DIM, True, True,
            USE_TMA, DOT_PRECISION,
        )  # fmt: skip
    else:
        full = seqlen_k - seqlen_k % BLOCK_N
        acc, l_i, m_i = _attn_fwd_inner(
            acc, l_i, m_i, q, k_ptr + kv_head, v_ptr + kv_head, k_desc, v_desc, kv_row0, 0, full, offs_m,
            seqlen_k, qk_scale, BLOCK_N, HEAD_DIM, False, False, USE_TMA, DOT_PRECISION,
        )  # fmt: skip
        acc, l_i, m_i = _attn_fwd_inner(
            acc, l_i, m_i, q, k_ptr + kv_head, v_ptr + kv_head, k_desc, v_desc, kv_row0, full, seqlen_k,
            offs_m, seqlen_k, qk_scale, BLOCK_N, HEAD_DIM, True, False, USE_TMA, DOT_PRECISION,
        )  # fmt: skip

    out = acc / l_i[:, None]  # one division per element, at the very end
    tl.store(o_ptr + q_head + q_offs, out.to(o_ptr.dtype.element_ty), mask=row_mask[:, None])
    if STORE_LSE:
        lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # back to natural-log units
        tl.store(lse_ptr + pid_bh.to(tl.int64) * seqlen_q + offs_m, lse, mask=row_mask)
    ### END SOLUTION


@dataclass(frozen=True)
class FwdConfig:
    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


def _fwd_config(  # pragma: no cover - GPU only: launch settings
    head_dim: int, dtype: torch.dtype, causal: bool
) -> FwdConfig:
    """Tile shape, warps and pipeline depth for the forward.

    Chosen from a sweep on an H200 (scripts/tune_flash_attention.py, results/h200/tune_flash_attention.txt).
    The interpreter gets tiles with BLOCK_M = 2 * BLOCK_N, so the diagonal of a causal tile spans two key
    blocks and the small test shapes still cross several of them.
    """
    if interpreter_requested():
        return FwdConfig(64, 32, 4, 1)
    if dtype == torch.float32:
        return FwdConfig(32, 32, 4, 2)  # exact float32 dots run on the FMA units: small tiles
    if head_dim == 128:
        # 597 TFLOP/s non-causal, 524 causal at 4x32x4096 bf16; (128, 64, 8, 3) gave 534 and 487.
        # Shared memory: Q 32 KB + 3 stages of K and V tiles (64 KB each) = 224 KB of the 227 KB.
        return FwdConfig(128, 128, 8, 3)
    if causal:
        return FwdConfig(64, 64, 4, 3)  # D = 64: 412 TFLOP/s causal, against 401 for (128, 64, 8, 3)
    return FwdConfig(128, 64, 8, 3)  # D = 64: 460 TFLOP/s non-causal


def _use_tma(q: torch.Tensor) -> bool:  # pragma: no cover - GPU only: TMA
    """TMA descriptors on Hopper and newer, for 16-bit inputs; plain loads elsewhere (and in the interpreter)."""
    if TensorDescriptor is None or interpreter_requested() or q.device.type != "cuda":
        return False
    return q.dtype in (torch.float16, torch.bfloat16) and torch.cuda.get_device_capability(q.device)[0] >= 9


def attention_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    scale: float,
    store_lse: bool,
    config: FwdConfig | None = None,
    use_tma: bool | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Launch the forward kernel. Returns o (B, Hq, Sq, D) and, when store_lse, lse (B, Hq, Sq) float32.

    `config` and `use_tma` override the defaults (the tuning script uses them).
    """
    batch, n_heads_q, seqlen_q, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, seqlen_q), dtype=torch.float32, device=q.device) if store_lse else None
    if o.numel() == 0:  # pragma: no cover - empty input, no launch
        return o, lse
    cfg = config or _fwd_config(head_dim, q.dtype, causal)
    tma = _use_tma(q) if use_tma is None else use_tma
    if tma:  # pragma: no cover - GPU only: TMA
        # K and V as one (B*Hkv*Sk, D) matrix each: a tile that runs past its head reads the next head's
        # rows (masked in the kernel) or, at the very end, zeros.
        k_desc = TensorDescriptor(k, shape=[k.numel() // head_dim, head_dim], strides=[head_dim, 1],
                                  block_shape=[cfg.block_n, head_dim])
        v_desc = TensorDescriptor(v, shape=[v.numel() // head_dim, head_dim], strides=[head_dim, 1],
                                  block_shape=[cfg.block_n, head_dim])
    else:
        k_desc, v_desc = k, v  # stand-ins: the kernel does not touch them
    grid = (triton.cdiv(seqlen_q, cfg.block_m), batch * n_heads_q)
    _attn_fwd_kernel[grid](
        q, k, v, o, lse if store_lse else o, k_desc, v_desc,
        seqlen_q, seqlen_k, n_heads_q, n_heads_q // n_heads_kv, scale * LOG2E,
        HEAD_DIM=head_dim, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, CAUSAL=causal, STORE_LSE=store_lse,
        USE_TMA=tma, DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    return o, lse


# --------------------------------------------------------------------------------------------------
# Decode (bonus): one query row per head, the keys split across programs, then combined
# --------------------------------------------------------------------------------------------------


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
    ### BEGIN SOLUTION flash_attention.decode
    #> The query heads h = j * group + g (g < group) of one KV head j all read the same K and V: load
    #> their `group` query rows together as a (BLOCK_G, HEAD_DIM) tile (rows >= group masked to 0), so
    #> each K/V tile is read from memory once for the whole group. Their rows in q (and in the outputs)
    #> are (b * Hkv + j) * group + g.
    #> Run the online softmax of the forward over keys [s * keys_per_split, min(... + keys_per_split,
    #> seqlen_k)), masking keys past that end. Then store, per query row, acc / l_i into o_part at
    #> (row, s) and m_i + log2(l_i) into lse_part at (row, s). The combine kernel merges the splits.
    split = tl.program_id(0)
    pid_bkv = tl.program_id(1)
    n_splits = tl.num_programs(0)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n0 = tl.arange(0, BLOCK_N)
    rows = pid_bkv * group + offs_g  # (BLOCK_G,) = b * Hq + h for the group's query heads
    row_mask = offs_g < group
    q = tl.load(q_ptr + rows[:, None] * HEAD_DIM + offs_d[None, :], mask=row_mask[:, None], other=0.0)
    kv_head = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM
    start = split * keys_per_split
    end = tl.minimum(start + keys_per_split, seqlen_k)

    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_DIM], dtype=tl.float32)
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + offs_n0
        key_mask = offs_n < end
        kv_offs = kv_head + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
        v = tl.load(v_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # (BLOCK_G, BLOCK_N)
        s = tl.where(key_mask[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=DOT_PRECISION)
        m_i = m_new

    part = rows.to(tl.int64) * n_splits + split  # (BLOCK_G,)
    tl.store(o_part_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], acc / l_i[:, None], mask=row_mask[:, None])
    tl.store(lse_part_ptr + part, m_i + tl.math.log2(l_i), mask=row_mask)
    ### END SOLUTION


@triton.jit
def _attn_decode_combine_kernel(
    o_part_ptr,  # (B * Hq, n_splits, HEAD_DIM) float32
    lse_part_ptr,  # (B * Hq, n_splits) float32, log2 units
    o_ptr,  # (B, Hq, 1, HEAD_DIM) output, q's dtype: row b * Hq + h
    lse_ptr,  # (B, Hq, 1) float32: natural-log logsumexp over all keys
    n_splits,
    HEAD_DIM: tl.constexpr,
    BLOCK_S: tl.constexpr,  # power of two >= n_splits
):
    """Program r merges the n_splits partial results of query row r."""
    ### BEGIN SOLUTION flash_attention.decode
    #> Split s holds o_s (normalised over its keys) and L_s = log2 of its sum of exp2(scores).
    #> With M = max_s L_s and w_s = exp2(L_s - M): o = sum_s w_s * o_s / sum_s w_s, and the row's
    #> logsumexp is (M + log2(sum_s w_s)) * ln(2). Mask the splits >= n_splits (L = -inf, o = 0).
    row = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    split_mask = offs_s < n_splits
    lse_s = tl.load(lse_part_ptr + row * n_splits + offs_s, mask=split_mask, other=float("-inf"))
    o_s = tl.load(o_part_ptr + (row * n_splits + offs_s)[:, None] * HEAD_DIM + offs_d[None, :],
                  mask=split_mask[:, None], other=0.0)  # fmt: skip
    m = tl.max(lse_s, 0)
    w = tl.math.exp2(lse_s - m)  # each split's share of the row's softmax mass
    total = tl.sum(w, 0)
    out = tl.sum(o_s * w[:, None], 0) / total
    tl.store(o_ptr + row * HEAD_DIM + offs_d, out.to(o_ptr.dtype.element_ty))
    tl.store(lse_ptr + row, (m + tl.math.log2(total)) * 0.6931471805599453)
    ### END SOLUTION


@dataclass(frozen=True)
class DecodeConfig:
    keys_per_split: int
    block_n: int
    num_warps: int
    num_stages: int


def _decode_config(  # pragma: no cover - GPU only: launch settings
    head_dim: int, dtype: torch.dtype, seqlen_k: int, n_groups: int, n_sms: int
) -> DecodeConfig:
    """Split size and tile for decode, from a sweep on an H200 (scripts/tune_flash_attention.py).

    Decode only streams K and V, so what matters is that every SM streams from the first microsecond
    to the last. One program holds 3 stages of 64-key K and V tiles (96 KB of shared memory), so two
    fit on an SM: split the keys so that the B * Hkv * n_splits programs fill those 2 * n_sms slots
    once, with no second, partial wave. At B8 Hkv8 Sk4096 that is 4 splits of 1024 keys: 47.2 us,
    against 48.6 us for 16 splits of 256 and 51.1 us for 32 of 128.
    """
    if interpreter_requested():
        return DecodeConfig(32, 16, 4, 1)
    if dtype == torch.float32:
        return DecodeConfig(256, 32, 4, 2)
    block_n = 64
    splits = max(1, min(triton.cdiv(seqlen_k, 2 * block_n), (2 * n_sms) // n_groups))
    keys = triton.cdiv(triton.cdiv(seqlen_k, splits), block_n) * block_n
    return DecodeConfig(keys, block_n, 4, 3)


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":  # pragma: no cover - GPU only: SM count
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


def attention_decode(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, config: DecodeConfig | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sq == 1: split the keys over programs, then combine. Returns o (B, Hq, 1, D) and lse (B, Hq, 1)."""
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    cfg = config or _decode_config(head_dim, q.dtype, seqlen_k, batch * n_heads_kv, _num_sms(q.device))
    n_splits = triton.cdiv(seqlen_k, cfg.keys_per_split)
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    _attn_decode_split_kernel[(n_splits, batch * n_heads_kv)](
        q, k, v, o_part, lse_part, seqlen_k, group, cfg.keys_per_split, scale * LOG2E,
        HEAD_DIM=head_dim, BLOCK_N=cfg.block_n, BLOCK_G=max(16, triton.next_power_of_2(group)),
        DOT_PRECISION=precision, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    _attn_decode_combine_kernel[(batch * n_heads_q,)](
        o_part, lse_part, o, lse, n_splits, HEAD_DIM=head_dim, BLOCK_S=triton.next_power_of_2(n_splits),
        num_warps=4 if head_dim * n_splits >= 4096 else 1,
    )  # fmt: skip
    return o, lse


# --------------------------------------------------------------------------------------------------
# Backward (bonus)
# --------------------------------------------------------------------------------------------------


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
    ### BEGIN SOLUTION flash_attention.backward
    #> Rows program_id * BLOCK_R ... (mask rows >= n_rows): load O and dO as float32, store the row sums of O * dO.
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    mask = rows < n_rows
    offs = rows.to(tl.int64)[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    o = tl.load(o_ptr + offs, mask=mask[:, None], other=0.0).to(tl.float32)
    do = tl.load(do_ptr + offs, mask=mask[:, None], other=0.0).to(tl.float32)
    tl.store(delta_ptr + rows, tl.sum(o * do, 1), mask=mask)
    ### END SOLUTION


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
    ### BEGIN SOLUTION flash_attention.backward
    #> Work with transposed tiles so the keys stay on the rows: for each block of queries,
    #>   sT = k @ q^T (BLOCK_N, BLOCK_M);  pT = exp2(sT * qk_scale - lse * log2(e))  (P recomputed, not stored)
    #>   (causal: pT = 0 where the query index < the key index; queries past seqlen_q must give pT = 0:
    #>    loading their lse as +inf does it)
    #>   dv += pT @ dO;  dpT = v @ dO^T;  dsT = pT * (dpT - delta);  dk += dsT @ q
    #> Cast pT and dsT to the input dtype before their dots, as the forward does with P.
    offs_d = tl.arange(0, HEAD_DIM)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        offs = offs_m[:, None] * HEAD_DIM + offs_d[None, :]
        if MASK_Q:
            q_mask = offs_m < seqlen_q
            q = tl.load(q_head_ptr + offs, mask=q_mask[:, None], other=0.0)
            do = tl.load(do_head_ptr + offs, mask=q_mask[:, None], other=0.0)
            lse = tl.load(lse_head_ptr + offs_m, mask=q_mask, other=float("inf"))  # P = 0 past the end
            delta = tl.load(delta_head_ptr + offs_m, mask=q_mask, other=0.0)
        else:
            q = tl.load(q_head_ptr + offs)
            do = tl.load(do_head_ptr + offs)
            lse = tl.load(lse_head_ptr + offs_m)
            delta = tl.load(delta_head_ptr + offs_m)
        s_t = tl.dot(k, tl.trans(q), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)
        p_t = tl.math.exp2(s_t * qk_scale - (lse * 1.4426950408889634)[None, :])
        if MASK_CAUSAL:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=DOT_PRECISION)
        dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk, input_precision=DOT_PRECISION)
    ### END SOLUTION
    return dk, dv


@triton.jit
def _attn_bwd_dkdv_kernel(
    q_ptr,  # (B, Hq, Sq, HEAD_DIM)
    k_ptr,  # (B, Hkv, Sk, HEAD_DIM)
    v_ptr,
    do_ptr,  # (B, Hq, Sq, HEAD_DIM)
    lse_ptr,  # (B, Hq, Sq) float32, natural log
    delta_ptr,  # (B, Hq, Sq) float32
    dk_ptr,  # (B, Hkv, Sk, HEAD_DIM) (written)
    dv_ptr,
    seqlen_q,
    seqlen_k,
    group,
    qk_scale,  # scale * log2(e)
    sm_scale,  # scale
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,  # queries per step
    BLOCK_N: tl.constexpr,  # keys per program, a multiple of BLOCK_M
    CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """Program (j, b * Hkv + kv): dK and dV of keys j*BLOCK_N ... summed over the group's query heads."""
    ### BEGIN SOLUTION flash_attention.backward
    #> Load this program's K and V tile (mask keys >= seqlen_k), then for every query head of the group
    #> (rows (b * Hkv + kv) * group + g of the (B * Hq) heads) accumulate with _attn_bwd_dkdv_inner:
    #>   causal: [start_n, min(start_n + BLOCK_N, seqlen_q)) with the causal mask (queries before start_n
    #>   see none of these keys), then [start_n + BLOCK_N, ...) without;
    #>   both: the full query blocks unmasked, the last partial one with MASK_Q.
    #> Store dk * sm_scale and dv in the input dtype (mask keys >= seqlen_k).
    pid_n = tl.program_id(0)
    pid_bkv = tl.program_id(1)
    start_n = pid_n * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_mask = offs_n < seqlen_k
    kv_offs = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    k = tl.load(k_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
    v = tl.load(v_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    full = seqlen_q - seqlen_q % BLOCK_M  # queries in whole blocks
    for g in range(0, group):
        bh = (pid_bkv * group + g).to(tl.int64)  # b * Hq + h
        q_head = q_ptr + bh * seqlen_q * HEAD_DIM
        do_head = do_ptr + bh * seqlen_q * HEAD_DIM
        lse_head = lse_ptr + bh * seqlen_q
        delta_head = delta_ptr + bh * seqlen_q
        if CAUSAL:
            dk, dv = _attn_bwd_dkdv_inner(
                dk, dv, k, v, q_head, do_head, lse_head, delta_head, start_n,
                tl.minimum(start_n + BLOCK_N, seqlen_q), offs_n, seqlen_q, qk_scale,
                BLOCK_M, HEAD_DIM, True, True, DOT_PRECISION,
            )  # fmt: skip
            lo = start_n + BLOCK_N
        else:
            lo = 0
        dk, dv = _attn_bwd_dkdv_inner(
            dk, dv, k, v, q_head, do_head, lse_head, delta_head, lo, full, offs_n, seqlen_q, qk_scale,
            BLOCK_M, HEAD_DIM, False, False, DOT_PRECISION,
        )  # fmt: skip
        dk, dv = _attn_bwd_dkdv_inner(
            dk, dv, k, v, q_head, do_head, lse_head, delta_head, tl.maximum(lo, full), seqlen_q, offs_n,
            seqlen_q, qk_scale, BLOCK_M, HEAD_DIM, True, False, DOT_PRECISION,
        )  # fmt: skip
    tl.store(dk_ptr + kv_offs, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=key_mask[:, None])
    tl.store(dv_ptr + kv_offs, dv.to(dv_ptr.dtype.element_ty), mask=key_mask[:, None])
    ### END SOLUTION


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
    ### BEGIN SOLUTION flash_attention.backward
    #> For each block of keys: s = q @ k^T; p = exp2(s * qk_scale - lse2) (0 where masked);
    #> dp = dO @ v^T; ds = p * (dp - delta); dq += ds @ k (ds cast to the input dtype).
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        offs = offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        if MASK_KEYS:
            k = tl.load(k_head_ptr + offs, mask=offs_n[:, None] < seqlen_k, other=0.0)
            v = tl.load(v_head_ptr + offs, mask=offs_n[:, None] < seqlen_k, other=0.0)
        else:
            k = tl.load(k_head_ptr + offs)
            v = tl.load(v_head_ptr + offs)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N)
        p = tl.math.exp2(s * qk_scale - lse2[:, None])
        if MASK_KEYS or MASK_CAUSAL:
            keep = offs_n[None, :] < seqlen_k
            if MASK_CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=DOT_PRECISION)
    ### END SOLUTION
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
    ### BEGIN SOLUTION flash_attention.backward
    #> Load q, dO (mask rows >= seqlen_q), lse (as log2 units: lse * log2(e); +inf past the end) and
    #> delta; walk the keys as the forward does (causal: [0, start_m) unmasked, then the diagonal
    #> block masked; else full blocks, then the tail masked); store dq * sm_scale.
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    n_heads_kv = n_heads_q // group
    pid_bkv = (pid_bh // n_heads_q) * n_heads_kv + (pid_bh % n_heads_q) // group
    q_head = pid_bh.to(tl.int64) * seqlen_q * HEAD_DIM
    kv_head = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_mask = offs_m < seqlen_q
    offs = offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(q_ptr + q_head + offs, mask=row_mask[:, None], other=0.0)
    do = tl.load(do_ptr + q_head + offs, mask=row_mask[:, None], other=0.0)
    row = pid_bh.to(tl.int64) * seqlen_q + offs_m
    lse2 = tl.load(lse_ptr + row, mask=row_mask, other=float("inf")) * 1.4426950408889634
    delta = tl.load(delta_ptr + row, mask=row_mask, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        dq = _attn_bwd_dq_inner(
            dq, q, do, lse2, delta, k_ptr + kv_head, v_ptr + kv_head, 0, start_m, offs_m, seqlen_k, qk_scale,
            BLOCK_N, HEAD_DIM, False, False, DOT_PRECISION,
        )  # fmt: skip
        dq = _attn_bwd_dq_inner(
            dq, q, do, lse2, delta, k_ptr + kv_head, v_ptr + kv_head, start_m,
            tl.minimum(start_m + BLOCK_M, seqlen_k), offs_m, seqlen_k, qk_scale,
            BLOCK_N, HEAD_DIM, True, True, DOT_PRECISION,
        )  # fmt: skip
    else:
        full = seqlen_k - seqlen_k % BLOCK_N
        dq = _attn_bwd_dq_inner(
            dq, q, do, lse2, delta, k_ptr + kv_head, v_ptr + kv_head, 0, full, offs_m, seqlen_k, qk_scale,
            BLOCK_N, HEAD_DIM, False, False, DOT_PRECISION,
        )  # fmt: skip
        dq = _attn_bwd_dq_inner(
            dq, q, do, lse2, delta, k_ptr + kv_head, v_ptr + kv_head, full, seqlen_k, offs_m, seqlen_k,
            qk_scale, BLOCK_N, HEAD_DIM, True, False, DOT_PRECISION,
        )  # fmt: skip
    tl.store(dq_ptr + q_head + offs, (dq * sm_scale).to(dq_ptr.dtype.element_ty), mask=row_mask[:, None])
    ### END SOLUTION


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


def _bwd_config(head_dim: int, dtype: torch.dtype) -> BwdConfig:  # pragma: no cover - GPU only: launch settings
    """Tiles for the two backward kernels (chosen on an H200 by scripts/tune_flash_attention.py)."""
    if interpreter_requested():
        return BwdConfig(32, 64, 4, 1, 64, 32, 4, 1)
    if dtype == torch.float32:
        return BwdConfig(32, 32, 4, 1, 32, 32, 4, 1)
    # At 4x32x4096x128 bf16 the dK/dV kernel ran 554 TFLOP/s of its own work with (64, 128, 8, 3) and the
    # dQ kernel 596 with (128, 64, 8, 3); two stages instead of three cost 10%.
    return BwdConfig(64, 128, 8, 3, 128, 64, 8, 3)


def attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    do: torch.Tensor,
    causal: bool,
    scale: float,
    config: BwdConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Launch the three backward kernels. Returns dq (shaped like q), dk and dv (shaped like k)."""
    batch, n_heads_q, seqlen_q, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    cfg = config or _bwd_config(head_dim, q.dtype)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    delta = torch.empty_like(lse)  # (B, Hq, Sq) float32
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    n_rows = batch * n_heads_q * seqlen_q
    block_r = 64 if not interpreter_requested() else 32
    _attn_bwd_preprocess_kernel[(triton.cdiv(n_rows, block_r),)](
        o, do, delta, n_rows, HEAD_DIM=head_dim, BLOCK_R=block_r
    )
    _attn_bwd_dkdv_kernel[(triton.cdiv(seqlen_k, cfg.dkdv_block_n), batch * n_heads_kv)](
        q, k, v, do, lse, delta, dk, dv, seqlen_q, seqlen_k, group, scale * LOG2E, scale,
        HEAD_DIM=head_dim, BLOCK_M=cfg.dkdv_block_m, BLOCK_N=cfg.dkdv_block_n, CAUSAL=causal,
        DOT_PRECISION=precision, num_warps=cfg.dkdv_warps, num_stages=cfg.dkdv_stages,
    )  # fmt: skip
    _attn_bwd_dq_kernel[(triton.cdiv(seqlen_q, cfg.dq_block_m), batch * n_heads_q)](
        q, k, v, do, lse, delta, dq, seqlen_q, seqlen_k, n_heads_q, group, scale * LOG2E, scale,
        HEAD_DIM=head_dim, BLOCK_M=cfg.dq_block_m, BLOCK_N=cfg.dq_block_n, CAUSAL=causal,
        DOT_PRECISION=precision, num_warps=cfg.dq_warps, num_stages=cfg.dq_stages,
    )  # fmt: skip
    return dq, dk, dv


# --------------------------------------------------------------------------------------------------
# Autograd and the public API
# --------------------------------------------------------------------------------------------------


class FlashAttentionFunction(torch.autograd.Function):
    """Forward through the Triton kernels, saving only O and the logsumexp (B, Hq, Sq) besides the inputs."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float
    ) -> torch.Tensor:
        needs_grad = any(ctx.needs_input_grad[:3])
        if q.shape[2] == 1:
            o, lse = attention_decode(q, k, v, scale)  # one query row: causal or not is the same
        else:
            o, lse = attention_forward(q, k, v, causal, scale, store_lse=needs_grad)
        if needs_grad:
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.causal, ctx.scale = causal, scale
        return o

    @staticmethod
    def backward(  # type: ignore[override]
        ctx, do: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None, None]:
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = attention_backward(q, k, v, o, lse, do.contiguous(), ctx.causal, ctx.scale)
        return dq, dk, dv, None, None


def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, scale: float | None = None
) -> torch.Tensor:
    """softmax(scale * q @ k^T [causal mask]) @ v, per head, without materialising the scores.

    q: (B, Hq, Sq, D); k, v: (B, Hkv, Sk, D) with Hq a multiple of Hkv (grouped-query attention: query
    head h reads KV head h // (Hq // Hkv)); D in {16, 32, 64, 128}; float32, float16 or bfloat16, one
    dtype and device, contiguous. causal=True masks key j for query i when j > i and needs Sq == Sk.
    scale defaults to 1 / sqrt(D). Returns (B, Hq, Sq, D) in q's dtype; differentiable in q, k and v.
    """
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
    if scale is None:
        scale = 1.0 / math.sqrt(head_dim)
    if not isinstance(scale, (int, float)) or not scale > 0 or not math.isfinite(scale):
        raise ValueError(f"{fn}: `scale` must be a positive number, got {scale!r}.")
    return FlashAttentionFunction.apply(q, k, v, bool(causal), float(scale))
