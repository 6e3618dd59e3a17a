"""Honest, with the keys split over programs as finely as the write budget allows: each program takes one query block
of one head and one split of max(64, 2 x D) keys, keeps its scores in registers, and stores its normalised float32
partial output with the split's log-sum-exp; a second kernel merges the splits of each query row. FlashAttention-2
splits the keys this way when batch x heads x query blocks leave SMs idle. It must pass every forward case.
"""

import math

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _split_kernel(q_ptr, k_ptr, v_ptr, o_part_ptr, lse_part_ptr, seqlen_q, seqlen_k, n_heads_q, group, scale,
                  keys_per_split, n_splits,
                  CAUSAL: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m, bh, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    bkv = (bh // n_heads_q) * (n_heads_q // group) + (bh % n_heads_q) // group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + bh.to(tl.int64) * seqlen_q * D + offs_m[:, None] * D + offs_d[None, :],
                mask=offs_m[:, None] < seqlen_q, other=0.0)
    kv_off = bkv.to(tl.int64) * seqlen_k * D
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    lo = split * keys_per_split
    hi = tl.minimum(lo + keys_per_split, seqlen_k)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < hi
        k = tl.load(k_ptr + kv_off + offs_n[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + kv_off + offs_n[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
        keep = offs_n[None, :] < hi
        if CAUSAL:
            keep = keep & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row that sees no key of this split yet
        p = tl.exp(s - m_safe[:, None])
        corr = tl.exp(m - m_safe)
        l = l * corr + tl.sum(p, 1)
        acc = acc * corr[:, None] + tl.dot(p, v, input_precision="ieee")
        m = m_new
    lse = tl.where(l > 0, m + tl.log(l), float("-inf"))  # -inf: no key of this split is seen by the row
    out = acc / tl.where(l > 0, l, 1.0)[:, None]
    row = (bh * n_splits + split).to(tl.int64) * seqlen_q + offs_m  # (B*Hq, n_splits, Sq) rows
    tl.store(o_part_ptr + row[:, None] * D + offs_d[None, :], out, mask=offs_m[:, None] < seqlen_q)
    tl.store(lse_part_ptr + row, lse, mask=offs_m < seqlen_q)


@triton.jit
def _combine_kernel(o_part_ptr, lse_part_ptr, o_ptr, seqlen_q, n_splits, D: tl.constexpr, BLOCK_S: tl.constexpr):
    q_row, bh = tl.program_id(0), tl.program_id(1)
    splits = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, D)
    rows = (bh * n_splits + splits).to(tl.int64) * seqlen_q + q_row  # this query row in every split
    lse = tl.load(lse_part_ptr + rows, mask=splits < n_splits, other=float("-inf"))
    weight = tl.exp(lse - tl.max(lse, 0))
    parts = tl.load(o_part_ptr + rows[:, None] * D + offs_d[None, :], mask=(splits < n_splits)[:, None], other=0.0)
    out = tl.sum(parts * weight[:, None], 0) / tl.sum(weight, 0)
    tl.store(o_ptr + (bh.to(tl.int64) * seqlen_q + q_row) * D + offs_d, out.to(o_ptr.dtype.element_ty))


def flash_attention(q, k, v, causal=False, scale=None):
    B, Hq, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    scale = scale if scale is not None else 1.0 / math.sqrt(D)
    keys_per_split = max(64, 2 * D)
    n_splits = triton.cdiv(Sk, keys_per_split)
    o_part = torch.empty((B * Hq, n_splits, Sq, D), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((B * Hq, n_splits, Sq), dtype=torch.float32, device=q.device)
    _split_kernel[(triton.cdiv(Sq, 32), B * Hq, n_splits)](
        q, k, v, o_part, lse_part, Sq, Sk, Hq, Hq // Hkv, scale, keys_per_split, n_splits,
        CAUSAL=causal, D=D, BLOCK_M=32, BLOCK_N=32)
    o = torch.empty_like(q)
    _combine_kernel[(Sq, B * Hq)](o_part, lse_part, o, Sq, n_splits, D=D, BLOCK_S=triton.next_power_of_2(n_splits))
    return o
