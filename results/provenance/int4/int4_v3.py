"""A second INT4 KIVI decode split kernel: even/odd channel tiles (no join), codes made from their bits,
and the query rows padded for tl.dot reused as sub-splits of the keys (row j * GQP + g sees chunk j of each tile)."""
import sys
sys.path.insert(0, ".")
import course.env  # noqa
import torch, triton, triton.language as tl
from course.loader import load_kernels

K = load_kernels("flash_attention", "solutions")
mod = sys.modules[K.flash_decode_int4.__module__]


@triton.jit
def _codes(b, DT: tl.constexpr, MAGIC: tl.constexpr):
    """uint8 codes 0..15 -> DT exactly. MAGIC: the 16-bit float whose low mantissa bits are the code (128 + c in
    bfloat16, 1024 + c in float16), minus the bias: two packed integer ops and a packed add, no conversion."""
    if MAGIC and DT == tl.bfloat16:
        return (b.to(tl.uint16) | 0x4300).to(tl.bfloat16, bitcast=True) - 128.0
    elif MAGIC and DT == tl.float16:
        return (b.to(tl.uint16) | 0x6400).to(tl.float16, bitcast=True) - 1024.0
    else:
        return b.to(DT)


@triton.jit
def int4_split_v3(
    q_ptr, kp_ptr, ks_ptr, kz_ptr, vp_ptr, vs_ptr, vz_ptr, o_part_ptr, lse_part_ptr,
    seqlen_k, n_k_groups, group, keys_per_split, qk_scale,
    GROUP_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_G: tl.constexpr,
    GQP: tl.constexpr, DOT_PRECISION: tl.constexpr, MAGIC: tl.constexpr, HALF_P: tl.constexpr,
):
    HALF: tl.constexpr = HEAD_DIM // 2
    NSUB: tl.constexpr = BLOCK_G // GQP
    CHUNK: tl.constexpr = BLOCK_N // NSUB
    split = tl.program_id(0)
    pid_bkv = tl.program_id(1)
    n_splits = tl.num_programs(0)
    offs_r = tl.arange(0, BLOCK_G)
    head = offs_r % GQP
    sub = offs_r // GQP
    row_mask = head < group
    rows = pid_bkv * group + head
    offs_j = tl.arange(0, HALF_P)
    ch_mask = offs_j < HALF
    qm = row_mask[:, None] & ch_mask[None, :]
    offs_d = tl.arange(0, 2 * HALF_P)
    qv = tl.load(q_ptr + rows[:, None] * HEAD_DIM + offs_d[None, :], mask=row_mask[:, None] & (offs_d < HEAD_DIM)[None, :], other=0.0)
    DT = qv.dtype
    qf = qv.to(tl.float32)
    kv_head = pid_bkv.to(tl.int64) * seqlen_k
    k_groups = pid_bkv.to(tl.int64) * n_k_groups
    start = split * keys_per_split
    end = tl.minimum(start + keys_per_split, seqlen_k)
    offs_n0 = tl.arange(0, BLOCK_N)
    mine0 = (offs_n0[None, :] // CHUNK) == sub[:, None]  # (BLOCK_G, BLOCK_N): row j*GQP+g owns chunk j

    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, 2 * HALF_P], dtype=tl.float32)
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + offs_n0
        key_mask = offs_n < end
        byte_offs = (kv_head + offs_n)[:, None] * HALF + offs_j[None, :]
        bm = key_mask[:, None] & ch_mask[None, :]
        kb = tl.load(kp_ptr + byte_offs, mask=bm, other=0)
        vb = tl.load(vp_ptr + byte_offs, mask=bm, other=0)
        k = _codes(tl.reshape(tl.join(kb & 0xF, kb >> 4), (BLOCK_N, 2 * HALF_P)), DT, MAGIC)
        v = _codes(tl.reshape(tl.join(vb & 0xF, vb >> 4), (BLOCK_N, 2 * HALF_P)), DT, MAGIC)
        chunk0 = start_n + sub * CHUNK  # (BLOCK_G,): first key of each row's chunk
        grp = k_groups + chunk0 // GROUP_SIZE
        gm = (chunk0 < end)[:, None] & (offs_d < HEAD_DIM)[None, :]
        g_offs = grp[:, None] * HEAD_DIM + offs_d[None, :]
        ks_ = tl.load(ks_ptr + g_offs, mask=gm, other=0.0)
        kz_ = tl.load(kz_ptr + g_offs, mask=gm, other=0.0)
        x = qf * ks_
        hi = x.to(DT)
        lo = (x - hi.to(tl.float32)).to(DT)
        s = tl.dot(hi, tl.trans(k), input_precision=DOT_PRECISION)
        s = tl.dot(lo, tl.trans(k), s, input_precision=DOT_PRECISION)
        s += tl.sum(qf * kz_, 1)[:, None]
        s = tl.where(mine0 & key_mask[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row whose chunks were all past the end
        p = tl.math.exp2(s - m_safe[:, None])
        alpha = tl.math.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        v_scale = tl.load(vs_ptr + kv_head + offs_n, mask=key_mask, other=0.0)
        v_zero = tl.load(vz_ptr + kv_head + offs_n, mask=key_mask, other=0.0)
        pv = (p * v_scale[None, :]).to(DT)
        z = tl.sum(p * v_zero[None, :], 1)[:, None]
        acc = tl.dot(pv, v, acc * alpha[:, None], input_precision=DOT_PRECISION) + z
        m_i = m_new

    # merge the NSUB sub-splits of each query head: they saw disjoint keys
    m3 = tl.reshape(m_i, (NSUB, GQP))
    m_h = tl.max(m3, 0)  # (GQP,)
    w = tl.math.exp2(m3 - m_h[None, :])
    l_h = tl.sum(tl.reshape(l_i, (NSUB, GQP)) * w, 0)
    o = tl.sum(tl.reshape(acc, (NSUB, GQP, 2 * HALF_P)) * w[:, :, None], 0) / l_h[:, None]
    offs_h = tl.arange(0, GQP)
    hm = offs_h < group
    part = (pid_bkv * group + offs_h).to(tl.int64) * n_splits + split
    tl.store(o_part_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], o, mask=hm[:, None] & (offs_d < HEAD_DIM)[None, :])
    tl.store(lse_part_ptr + part, m_h + tl.math.log2(l_h), mask=hm)


def decode_v3(q, cache, g, bn=128, nw=4, ns=3, kps=None, magic=True, block_g=None):
    B, Hq, _, D = q.shape
    hkv, sk = cache[0].shape[1], cache[0].shape[2]
    group = Hq // hkv
    gqp = triton.next_power_of_2(group)
    block_g = block_g or max(16, gqp)
    nsub = block_g // gqp
    chunk = min(g, bn // nsub)
    bn = chunk * nsub
    if kps is None:
        cfg, _ = mod.decode_int4_config(mod.device_of(q), q.dtype, sk, B * hkv, g)
        kps = cfg.keys_per_split
    kps = triton.cdiv(kps, bn) * bn
    n_splits = triton.cdiv(sk, kps)
    dev = q.device
    o = torch.empty_like(q); lse = torch.empty((B, Hq, 1), dtype=torch.float32, device=dev)
    op = torch.empty((B * Hq, n_splits, D), dtype=torch.float32, device=dev)
    lp = torch.empty((B * Hq, n_splits), dtype=torch.float32, device=dev)
    int4_split_v3[(n_splits, B * hkv)](q, *cache, op, lp, sk, cache[1].shape[2], group, kps, (D ** -0.5) * mod.LOG2E,
        GROUP_SIZE=g, HEAD_DIM=D, BLOCK_N=bn, BLOCK_G=block_g, GQP=gqp,
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32", MAGIC=magic, HALF_P=max(16, D // 2),
        num_warps=nw, num_stages=ns)
    mod._attn_decode_combine_kernel[(B * Hq,)](op, lp, o, lse, n_splits, HEAD_DIM=D, BLOCK_S=triton.next_power_of_2(n_splits), num_warps=1)
    return o
