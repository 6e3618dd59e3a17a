"""Probe: W4A16 dot kernel with one tensor-core product per nibble plane (no re-interleave)."""
import triton
import triton.language as tl

MAGIC = tl.constexpr(0x4B000000)
TWO_23 = tl.constexpr(8388608.0)


@triton.jit
def _plane(words, i: tl.constexpr, DT: tl.constexpr):
    """Nibble i of each word minus 8, exactly, in DT: (word | MAGIC) & (MAGIC | 0xF << b) is the float
    2**23 + q * 2**b; times 2**-b and minus 2**(23 - b) + 8 in one FMA."""
    if i < 5:
        wm = words | MAGIC
        b: tl.constexpr = 4 * i
    else:
        wm = (words >> 12) | MAGIC
        b: tl.constexpr = 4 * i - 12
    f = (wm & (MAGIC | (0xF << b))).to(tl.float32, bitcast=True)
    return (f * (1.0 / (1 << b)) - (TWO_23 / (1 << b) + 8.0)).to(DT)


@triton.jit
def planes_dot_kernel(
    x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
    k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_W: tl.constexpr,
    EVEN_K: tl.constexpr, SPLIT: tl.constexpr, SCALE_AFTER: tl.constexpr, XSPLIT: tl.constexpr = False, XPERM: tl.constexpr = False,
):
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    DT: tl.constexpr = x_ptr.dtype.element_ty
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n_mask = offs_n < N
    m_mask = offs_m < M
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_cols = x_ptr + tl.minimum(offs_m, M - 1).to(tl.int64)[None, :] * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        offs_w = k0 // 8 + tl.arange(0, BLOCK_W)
        if EVEN_K:
            words = tl.load(w_rows + offs_w[None, :])
        else:
            words = tl.load(w_rows + offs_w[None, :], mask=(8 * offs_w < k_end)[None, :], other=0)
        if SCALE_AFTER:
            step = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
        else:
            s = tl.load(s_rows[:, None] + ((8 * offs_w) // GROUP_SIZE)[None, :]).to(tl.float32)
        if XSPLIT:
            kk = k0 + tl.arange(0, BLOCK_K)
            if EVEN_K:
                xall = tl.load(x_cols + kk[:, None])  # (BLOCK_K, BLOCK_M)
            else:
                xall = tl.load(x_cols + kk[:, None], mask=(kk < k_end)[:, None], other=0.0)
            x5 = tl.permute(tl.reshape(xall, (BLOCK_W, 2, 2, 2, BLOCK_M)), (0, 4, 1, 2, 3))  # [j, m, a, b, c]
            xa0, xa1 = tl.split(x5)
            xb00, xb01 = tl.split(xa0)
            xb10, xb11 = tl.split(xa1)
            x0, x1 = tl.split(xb00)
            x2, x3 = tl.split(xb01)
            x4, x5_ = tl.split(xb10)
            x6, x7 = tl.split(xb11)
        for i in tl.static_range(8):
            k = 8 * offs_w + i
            if XSPLIT:
                # plane 4a + 2b + c
                xt = (x0 if i == 0 else x4 if i == 1 else x2 if i == 2 else x6 if i == 3 else x1 if i == 4 else x5_ if i == 5 else x3 if i == 6 else x7)
            elif XPERM:  # x permuted by the launcher: plane i of this step is x[k0 + i * BLOCK_W + j]
                kp = k0 + i * BLOCK_W + tl.arange(0, BLOCK_W)
                xt = tl.load(x_cols + kp[:, None])
            elif EVEN_K:
                xt = tl.load(x_cols + k[:, None])  # (BLOCK_W, BLOCK_M)
            else:
                xt = tl.load(x_cols + k[:, None], mask=(k < k_end)[:, None], other=0.0)
            if SCALE_AFTER:
                step = tl.dot(_plane(words, i, DT), xt, step)
            else:
                acc = tl.dot((_plane(words, i, tl.float32) * s).to(DT), xt, acc)
        if SCALE_AFTER:
            acc += step * tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)[:, None]
    mn_mask = n_mask[:, None] & m_mask[None, :]
    y_ptrs = y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None]
    part_ptrs = part_ptr + offs_m[None, :] * N + offs_n[:, None]
    lock = lock_ptr + pid_m * tl.num_programs(0) + pid_n
    if not SPLIT:
        tl.store(y_ptrs, acc.to(y_ptrs.dtype.element_ty), mask=mn_mask)
    else:
        n_splits = tl.num_programs(1)
        tl.store(part_ptrs + tl.program_id(1) * M * N, acc, mask=mn_mask)
        tl.debug_barrier()
        arrived = tl.atomic_add(lock, 1, sem="acq_rel")
        if arrived == n_splits - 1:
            total = tl.zeros_like(acc)
            for p in range(0, n_splits):
                total += tl.load(part_ptrs + p * M * N, mask=mn_mask, other=0.0, cache_modifier=".cg")
            tl.store(y_ptrs, total.to(y_ptrs.dtype.element_ty), mask=mn_mask)
            tl.atomic_xchg(lock, 0)
