"""Wrong technique, right answer: textbook attention in Triton. One kernel stores the score matrix
S = scale * Q K^T (Sq x Sk floats a head) to memory, under the causal mask only its lower triangle (red team 23);
a second reads it back, twice (the row maxima and sums, then the probabilities times V). Every output is right;
the flash attention parts ask for a forward that never stores the scores, and the grader counts what the kernels
store: where the keys are few (up to about twice the head dim) the scores weigh no more than a split forward's
partials, elsewhere they weigh more and the case is refused with the sentence that says so, and one refused case
costs its part every case.
"""

import math

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _scores_kernel(q_ptr, k_ptr, s_ptr, seqlen_q, seqlen_k, n_heads_q, group, scale,
                   CAUSAL: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m, bh, pid_n = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    bkv = (bh // n_heads_q) * (n_heads_q // group) + (bh % n_heads_q) // group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + bh.to(tl.int64) * seqlen_q * D + offs_m[:, None] * D + offs_d[None, :],
                mask=offs_m[:, None] < seqlen_q, other=0.0)
    k = tl.load(k_ptr + bkv.to(tl.int64) * seqlen_k * D + offs_n[:, None] * D + offs_d[None, :],
                mask=offs_n[:, None] < seqlen_k, other=0.0)
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
    if CAUSAL:
        s = tl.where(offs_n[None, :] <= offs_m[:, None], s, float("-inf"))
    mask = (offs_m[:, None] < seqlen_q) & (offs_n[None, :] < seqlen_k)
    if CAUSAL:  # scores above the diagonal are never read: store only the triangle
        mask = mask & (offs_n[None, :] <= offs_m[:, None])
    tl.store(s_ptr + bh.to(tl.int64) * seqlen_q * seqlen_k + offs_m[:, None] * seqlen_k + offs_n[None, :], s, mask=mask)


@triton.jit
def _softmax_pv_kernel(s_ptr, v_ptr, o_ptr, seqlen_q, seqlen_k, n_heads_q, group,
                       CAUSAL: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m, bh = tl.program_id(0), tl.program_id(1)
    bkv = (bh // n_heads_q) * (n_heads_q // group) + (bh % n_heads_q) // group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    s_base = s_ptr + bh.to(tl.int64) * seqlen_q * seqlen_k
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    for start in range(0, seqlen_k, BLOCK_N):  # the row maxima, from the stored scores
        offs_n = start + tl.arange(0, BLOCK_N)
        stored = (offs_m[:, None] < seqlen_q) & (offs_n[None, :] < seqlen_k)
        if CAUSAL:
            stored = stored & (offs_n[None, :] <= offs_m[:, None])
        s = tl.load(s_base + offs_m[:, None] * seqlen_k + offs_n[None, :], mask=stored, other=float("-inf"))
        m = tl.maximum(m, tl.max(s, 1))
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for start in range(0, seqlen_k, BLOCK_N):  # read back again: the probabilities times V
        offs_n = start + tl.arange(0, BLOCK_N)
        stored = (offs_m[:, None] < seqlen_q) & (offs_n[None, :] < seqlen_k)
        if CAUSAL:
            stored = stored & (offs_n[None, :] <= offs_m[:, None])
        s = tl.load(s_base + offs_m[:, None] * seqlen_k + offs_n[None, :], mask=stored, other=float("-inf"))
        p = tl.exp(s - m[:, None])
        l += tl.sum(p, 1)
        v = tl.load(v_ptr + bkv.to(tl.int64) * seqlen_k * D + offs_n[:, None] * D + offs_d[None, :],
                    mask=offs_n[:, None] < seqlen_k, other=0.0)
        acc += tl.dot(p, v, input_precision="ieee")
    tl.store(o_ptr + bh.to(tl.int64) * seqlen_q * D + offs_m[:, None] * D + offs_d[None, :],
             (acc / l[:, None]).to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < seqlen_q)


def flash_attention(q, k, v, causal=False, scale=None):
    B, Hq, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    scale = scale if scale is not None else 1.0 / math.sqrt(D)
    s = torch.empty((B * Hq, Sq, Sk), dtype=torch.float32, device=q.device)  # (B*Hq, Sq, Sk): the scores
    o = torch.empty_like(q)
    _scores_kernel[(triton.cdiv(Sq, 32), B * Hq, triton.cdiv(Sk, 32))](
        q, k, s, Sq, Sk, Hq, Hq // Hkv, scale, CAUSAL=causal, D=D, BLOCK_M=32, BLOCK_N=32)
    _softmax_pv_kernel[(triton.cdiv(Sq, 32), B * Hq)](s, v, o, Sq, Sk, Hq, Hq // Hkv, CAUSAL=causal, D=D,
                                                      BLOCK_M=32, BLOCK_N=32)
    return o
