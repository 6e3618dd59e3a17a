"""Wrong: each key block's softmax is normalised on its own and the block results averaged, instead of
one softmax over all keys. Right only when all keys fit in one block.
"""

import math

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seqlen_q, seqlen_k, n_heads_q, group, scale,
                 CAUSAL: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    bkv = (bh // n_heads_q) * (n_heads_q // group) + (bh % n_heads_q) // group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q_base = q_ptr + bh.to(tl.int64) * seqlen_q * D
    kv_off = bkv.to(tl.int64) * seqlen_k * D
    q = tl.load(q_base + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < seqlen_q, other=0.0)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for start in range(0, seqlen_k, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < seqlen_k
        k = tl.load(k_ptr + kv_off + offs_n[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + kv_off + offs_n[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
        keep = offs_n[None, :] < seqlen_k
        if CAUSAL:
            keep = keep & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, float("-inf"))
        p = tl.exp(s - tl.max(s, 1)[:, None])
        p = p / tl.sum(p, 1)[:, None]  # BUG: normalised within this block only
        acc = acc + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        l = l + 1.0  # the number of blocks: the block results are averaged
    out = acc / l[:, None]
    tl.store(o_ptr + bh.to(tl.int64) * seqlen_q * D + offs_m[:, None] * D + offs_d[None, :],
             out.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < seqlen_q)


def flash_attention(q, k, v, causal=False, scale=None):
    B, Hq, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    scale = scale if scale is not None else 1.0 / math.sqrt(D)
    o = torch.empty_like(q)
    grid = (triton.cdiv(Sq, 64), B * Hq)
    _attn_kernel[grid](q, k, v, o, Sq, Sk, Hq, Hq // Hkv, scale, CAUSAL=causal, D=D, BLOCK_M=64, BLOCK_N=64)
    return o
