"""A flash attention forward for Hopper's warp specialisation (issue 22), kept apart from the probe so that it
compiles without torch (`flash_ws_probe.py --ptx` under each Triton version).

The solution's forward with two changes: every tile moves through a descriptor made on the device
(`tl.make_tensor_descriptor`: Triton's Hopper warp specialisation partitions loads that go through one, not a
host-made `TensorDescriptor`), and the key loop is `tl.range(..., warp_specialize=WS)`, which lets the
compiler give the TMA loads to a producer warp and split the query rows over consumer warp groups. The lengths
are multiples of BLOCK_M (the probe's shapes), so no key or query mask is needed outside the causal diagonal."""
import triton
import triton.language as tl


@triton.jit
def _ws_inner(acc, l_i, m_i, q, k_desc, v_desc, kv_row0, lo, hi, offs_m, qk_scale, BLOCK_N: tl.constexpr,
              MASK_CAUSAL: tl.constexpr, WS: tl.constexpr, diag=0):
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        k = k_desc.load([kv_row0 + start_n, 0])
        v = v_desc.load([kv_row0 + start_n, 0])
        s = tl.dot(q, k.T)
        if MASK_CAUSAL == 3:  # one loop for the whole causal range, the mask applied from the diagonal on
            if start_n >= diag:
                s = tl.where(offs_m[:, None] >= (start_n + offs_n0)[None, :], s * qk_scale, -1.0e6)
            else:
                s = s * qk_scale
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
        elif MASK_CAUSAL == 2:  # one loop for the whole causal range: every block masked, the diagonal's really
            keep = offs_m[:, None] >= (start_n + offs_n0)[None, :]
            s = tl.where(keep, s * qk_scale, -1.0e6)
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
        elif MASK_CAUSAL:
            keep = offs_m[:, None] >= (start_n + offs_n0)[None, :]
            s = tl.where(keep, s * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            p = tl.math.exp2(s - m_new[:, None])
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def ws_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seqlen, n_heads_q, group, rows_q, rows_kv, qk_scale,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                  WS: tl.constexpr, ONE_LOOP: tl.constexpr = False, HOST_DESC: tl.constexpr = False,
                  QO_POINTERS: tl.constexpr = False):
    """Program (i, b * Hq + h): queries i*BLOCK_M ... of head h. q, o (B*Hq*S, D); k, v (B*Hkv*S, D)."""
    qk_scale = tl.cast(qk_scale, tl.float32)
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m  # the longest rows first
    pid_bh = tl.program_id(1)
    n_heads_kv = n_heads_q // group
    pid_bkv = (pid_bh // n_heads_q) * n_heads_kv + (pid_bh % n_heads_q) // group
    if HOST_DESC:  # the four arguments are host-made TensorDescriptors
        q_desc = q_ptr
        o_desc = o_ptr
        k_desc = k_ptr
        v_desc = v_ptr
    elif QO_POINTERS:
        k_desc = tl.make_tensor_descriptor(k_ptr, shape=[rows_kv, HEAD_DIM], strides=[HEAD_DIM, 1],
                                           block_shape=[BLOCK_N, HEAD_DIM])
        v_desc = tl.make_tensor_descriptor(v_ptr, shape=[rows_kv, HEAD_DIM], strides=[HEAD_DIM, 1],
                                           block_shape=[BLOCK_N, HEAD_DIM])
    else:
        q_desc = tl.make_tensor_descriptor(q_ptr, shape=[rows_q, HEAD_DIM], strides=[HEAD_DIM, 1],
                                           block_shape=[BLOCK_M, HEAD_DIM])
        o_desc = tl.make_tensor_descriptor(o_ptr, shape=[rows_q, HEAD_DIM], strides=[HEAD_DIM, 1],
                                           block_shape=[BLOCK_M, HEAD_DIM])
        k_desc = tl.make_tensor_descriptor(k_ptr, shape=[rows_kv, HEAD_DIM], strides=[HEAD_DIM, 1],
                                           block_shape=[BLOCK_N, HEAD_DIM])
        v_desc = tl.make_tensor_descriptor(v_ptr, shape=[rows_kv, HEAD_DIM], strides=[HEAD_DIM, 1],
                                           block_shape=[BLOCK_N, HEAD_DIM])
    q_row = pid_bh * seqlen + pid_m * BLOCK_M
    kv_row0 = pid_bkv * seqlen
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    qo_offs = (q_row + tl.arange(0, BLOCK_M)).to(tl.int64)[:, None] * HEAD_DIM + offs_d[None, :]
    if QO_POINTERS:  # Q and O as the solution moves them (pointers); only K and V through descriptors
        q = tl.load(q_ptr + qo_offs)
    else:
        q = q_desc.load([q_row, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL and ONE_LOOP:  # Triton 3.6's Hopper warp specialisation fails on two loops in a row
        # ONE_LOOP 1: every block masked; 2: a branch masks the blocks from the diagonal on
        acc, l_i, m_i = _ws_inner(acc, l_i, m_i, q, k_desc, v_desc, kv_row0, 0, (pid_m + 1) * BLOCK_M, offs_m,
                                  qk_scale, BLOCK_N, 1 + ONE_LOOP, WS, pid_m * BLOCK_M)
    elif CAUSAL:
        diag = pid_m * BLOCK_M
        acc, l_i, m_i = _ws_inner(acc, l_i, m_i, q, k_desc, v_desc, kv_row0, 0, diag, offs_m, qk_scale, BLOCK_N,
                                  False, WS)
        # the diagonal block is not warp specialised: two such loops in a row fail to compile in Triton 3.6
        acc, l_i, m_i = _ws_inner(acc, l_i, m_i, q, k_desc, v_desc, kv_row0, diag, diag + BLOCK_M, offs_m, qk_scale,
                                  BLOCK_N, True, False)
    else:
        acc, l_i, m_i = _ws_inner(acc, l_i, m_i, q, k_desc, v_desc, kv_row0, 0, seqlen, offs_m, qk_scale, BLOCK_N,
                                  False, WS)
    if QO_POINTERS:
        tl.store(o_ptr + qo_offs, (acc / l_i[:, None]).to(q.dtype))
    else:
        o_desc.store([q_row, 0], (acc / l_i[:, None]).to(q.dtype))
