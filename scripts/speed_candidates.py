"""Candidate kernels for issue 22 (W4A16 GEMV and decode attention nearer the memory roofline), kept beside
the solutions until a GPU run (.diag/speed/bench_variants.py) says which, if any, replaces them.

Each candidate computes exactly what its solution computes, from the same inputs, with every launch setting
an explicit argument, so a benchmark can sweep them. tests/test_speed_candidates.py checks them on the CPU
interpreter.

W4A16 GEMV, "planes" (w4_gemv_planes). The solution's GEMV decodes a (BLOCK_N, BLOCK_W) tile of words into
a (BLOCK_N, 8 * BLOCK_W) tile in k order (three levels of tl.join and a reshape) and reduces it across lanes
with tl.sum at every K step. Here the eight nibble planes of a word are never interleaved: plane i of word j
is weight k = 8j + i, so it meets the activation plane x[8j + i] where it sits, and the eight products of a
word add up inside one thread (one FMUL and seven FFMAs). The accumulator keeps the tile's shape,
(BLOCK_N, BLOCK_W), scaled once per group, and is reduced across lanes once, after the K loop. Per weight
that is one AND, one FSUB and one FFMA, plus a share of the per-word OR/shift and of the per-step
activation loads; no shuffles inside the loop. Loads go through tl.range's pipeliner (num_stages), so a
program keeps num_stages - 1 tiles of words in flight.

W4A16 for 16 to 64 rows, "planes dot" (w4_dot_planes). The solution's dot kernel interleaves the decoded
planes into k order (three levels of tl.join and a reshape) and multiplies each weight by its factor
2**-bit before rounding it to x's dtype. Here each plane is its own tl.dot (A = plane i of the words,
(BLOCK_N, BLOCK_W), decoded exactly to q - 8 with a shift, a mask and a float subtract; B = the activations
k = 8j + i): no interleave, no factor to undo, and the same wgmma instructions (eight of k = 16 per step
either way, A from registers in both, compiled for sm_90). Shared memory per program falls from 37 KB to
9 KB at BLOCK_N 64, BLOCK_M 16, so more programs fit an SM. Plane i of x is x[:, i::8]: strided loads, or
with x_planar one small rearrangement of x to (M, 8, K // 8) per call, after which the planes load as
contiguous asynchronous copies.

Decode, "fused combine" (decode_fused). The solution launches a split kernel and then a combine kernel.
Here the last split program of each (batch, KV head) to finish merges the group's partial results itself
(an arrival counter, as in quant_matmul's _finish_tile): one launch instead of two, which matters most at
short caches, where the whole call is a few microseconds.
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.device import device_of
from course.loader import load_kernels

QUANT = load_kernels("quant_matmul", "solutions")
ATTN = load_kernels("flash_attention", "solutions")

MAGIC = tl.constexpr(0x4B000000)  # the bits of the float 2**23 (see solutions/quant_matmul/kernels.py)
TWO_23 = tl.constexpr(8388608.0)


# --------------------------------------------------------------------------------------------------
# W4A16 GEMV over nibble planes
# --------------------------------------------------------------------------------------------------


@triton.jit
def _plane(word_magic, mask: tl.constexpr, bit: tl.constexpr):
    """(q - 8) * 2**bit, exactly, for the nibble q = word & mask at bit `bit`, given word | MAGIC."""
    return (word_magic & (MAGIC | mask)).to(tl.float32, bitcast=True) - (TWO_23 + 8.0 * (1 << bit))


@triton.jit
def _x_planes_strided(x_row, j, k_end, EVEN_K: tl.constexpr):
    """The activations x[8j + i], i = 0..7, as eight (BLOCK_W,) float32 planes, each times the factor
    2**-bit that undoes where _plane leaves nibble i (bits 0, 4, 8, 12, 16 of the low word, 8, 12, 16 of
    the word shifted by 12). Eight strided loads."""
    k = 8 * j
    in_k = (k < k_end) | EVEN_K  # with EVEN_K every step is whole: a mask that is all true folds away
    x0 = tl.load(x_row + k + 0, mask=in_k, other=0.0).to(tl.float32)
    x1 = tl.load(x_row + k + 1, mask=in_k, other=0.0).to(tl.float32) * (1.0 / 16)
    x2 = tl.load(x_row + k + 2, mask=in_k, other=0.0).to(tl.float32) * (1.0 / 256)
    x3 = tl.load(x_row + k + 3, mask=in_k, other=0.0).to(tl.float32) * (1.0 / 4096)
    x4 = tl.load(x_row + k + 4, mask=in_k, other=0.0).to(tl.float32) * (1.0 / 65536)
    x5 = tl.load(x_row + k + 5, mask=in_k, other=0.0).to(tl.float32) * (1.0 / 256)
    x6 = tl.load(x_row + k + 6, mask=in_k, other=0.0).to(tl.float32) * (1.0 / 4096)
    x7 = tl.load(x_row + k + 7, mask=in_k, other=0.0).to(tl.float32) * (1.0 / 65536)
    return x0, x1, x2, x3, x4, x5, x6, x7


@triton.jit
def _x_planes_tile(x_row, j, k_end, BLOCK_W: tl.constexpr):
    """The same eight planes from one (BLOCK_W, 8) load (16 contiguous bytes per word of 16-bit x),
    split apart with tl.split: plane 4a + 2b + c is element [., a, b, c] of the (BLOCK_W, 2, 2, 2) view."""
    k = 8 * j[:, None] + tl.arange(0, 8)[None, :]  # (BLOCK_W, 8)
    xt = tl.load(x_row + k, mask=k < k_end, other=0.0).to(tl.float32)
    xt = tl.reshape(xt, (BLOCK_W, 2, 2, 2))
    ab0, ab1 = tl.split(xt)  # c = 0, 1: (BLOCK_W, 2, 2)
    a00, a01 = tl.split(ab0)  # (b, c) = (0, 0), (1, 0)
    a10, a11 = tl.split(ab1)  # (0, 1), (1, 1)
    x0, x4 = tl.split(a00)  # plane 4a + 0 + 0
    x2, x6 = tl.split(a01)  # 4a + 2
    x1, x5 = tl.split(a10)  # 4a + 1
    x3, x7 = tl.split(a11)  # 4a + 3
    return (x0, x1 * (1.0 / 16), x2 * (1.0 / 256), x3 * (1.0 / 4096), x4 * (1.0 / 65536),
            x5 * (1.0 / 256), x6 * (1.0 / 4096), x7 * (1.0 / 65536))  # fmt: skip


@triton.jit
def _w4_gemv_planes_kernel(
    x_ptr,  # (M, K) activations
    w_ptr,  # (N, K // 8) int32 words
    s_ptr,  # (N, K // G) scales
    y_ptr,  # (M, N) output
    part_ptr,  # (n_splits, M, N) float32 partials (only with SPLIT)
    lock_ptr,  # (M * cdiv(N, BLOCK_N),) int32 arrival counters (only with SPLIT)
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_sn,
    stride_ym,
    k_per_split,  # a multiple of 8 * BLOCK_W
    GROUP_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_W: tl.constexpr,  # words per row per step (8 weights a word)
    EVEN_K: tl.constexpr,
    X_TILE: tl.constexpr,  # activations from one (BLOCK_W, 8) load and tl.split, else eight strided loads
    NUM_STAGES: tl.constexpr,
    SPLIT: tl.constexpr,
):
    """Grid (cdiv(N, BLOCK_N), n_splits, M), as the solution's GEMV."""
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    m = tl.program_id(2).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)  # rows past N re-read the last: no row masks on loads
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_row = x_ptr + m * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    acc = tl.zeros([BLOCK_N, BLOCK_W], dtype=tl.float32)
    for k0 in tl.range(k_start, k_end, BLOCK_K, num_stages=NUM_STAGES):
        j = k0 // 8 + tl.arange(0, BLOCK_W)  # (BLOCK_W,) word index along the row
        if EVEN_K:
            words = tl.load(w_rows + j[None, :])
        else:
            words = tl.load(w_rows + j[None, :], mask=(8 * j < k_end)[None, :], other=0)
        if X_TILE:
            x0, x1, x2, x3, x4, x5, x6, x7 = _x_planes_tile(x_row, j, k_end, BLOCK_W)
        else:
            x0, x1, x2, x3, x4, x5, x6, x7 = _x_planes_strided(x_row, j, k_end, EVEN_K)
        lo = words | MAGIC  # nibbles 0..4 in bits 0..19
        hi = (words >> 12) | MAGIC  # nibbles 5..7 in bits 8..19
        # the eight weights of a word against their activations, summed in the thread that holds the word
        p = _plane(lo, 0x0000F, 0) * x0[None, :]
        p += _plane(lo, 0x000F0, 4) * x1[None, :]
        p += _plane(lo, 0x00F00, 8) * x2[None, :]
        p += _plane(lo, 0x0F000, 12) * x3[None, :]
        p += _plane(lo, 0xF0000, 16) * x4[None, :]
        p += _plane(hi, 0x00F00, 8) * x5[None, :]
        p += _plane(hi, 0x0F000, 12) * x6[None, :]
        p += _plane(hi, 0xF0000, 16) * x7[None, :]  # (BLOCK_N, BLOCK_W)
        if GROUP_SIZE % BLOCK_K == 0:  # the whole step in one group: one scale per row
            s = tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)[:, None]
        else:  # a word never straddles groups (G is a multiple of 8): one scale per word
            s = tl.load(s_rows[:, None] + (8 * j // GROUP_SIZE)[None, :], mask=(8 * j < k_end)[None, :], other=0.0)
            s = s.to(tl.float32)
        acc += p * s
    out = tl.sum(acc, axis=1)  # the one cross-lane reduction
    tile_id = m * tl.num_programs(0) + pid_n
    QUANT._finish_tile(out, y_ptr + m * stride_ym + offs_n, part_ptr + m * N + offs_n, n_mask, lock_ptr + tile_id,
                       M * N, SPLIT)


def w4_gemv_planes(
    x: torch.Tensor,  # (M, K)
    w_packed: torch.Tensor,  # (N, K // 2) uint8
    scales: torch.Tensor,  # (N, K // G)
    group_size: int,
    *,
    block_n: int,
    block_w: int,
    num_warps: int,
    num_stages: int,
    programs_per_sm: int,
    x_tile: bool,
) -> torch.Tensor:
    """y (M, N) = x @ W.T as quant_matmul.w4a16_matmul, with the nibble-plane GEMV and these settings."""
    words = w_packed.view(torch.int32)  # (N, K // 8)
    (m, k), n = x.shape, words.shape[0]
    block_k = 8 * block_w
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    n_tiles = triton.cdiv(n, block_n)
    splits, k_split, part, locks = QUANT._split_k(n_tiles * m, k, block_k, programs_per_sm, x, m, n)
    _w4_gemv_planes_kernel[(n_tiles, splits, m)](
        x, words, scales, y, part, locks, m, n, k, x.stride(0), words.stride(0), scales.stride(0), y.stride(0),
        k_split, GROUP_SIZE=group_size, BLOCK_N=block_n, BLOCK_W=block_w, EVEN_K=k % block_k == 0,
        X_TILE=x_tile, NUM_STAGES=num_stages, SPLIT=splits > 1, num_warps=num_warps, num_stages=num_stages,
    )  # fmt: skip
    return y


# --------------------------------------------------------------------------------------------------
# W4A16 for a few rows: eight tensor-core dots per step, one per nibble plane
# --------------------------------------------------------------------------------------------------


@triton.jit
def _nibble(words, i: tl.constexpr):
    """q - 8 as float32, exactly, for nibble i of each word: shifted to bit 0, under the magic exponent."""
    return (((words >> (4 * i)) & 0xF) | MAGIC).to(tl.float32, bitcast=True) - (TWO_23 + 8.0)


@triton.jit
def _x_plane_t(x_cols, j, i: tl.constexpr, k_end, plane_stride, EVEN_K: tl.constexpr, X_PLANAR: tl.constexpr):
    """(BLOCK_W, BLOCK_M): x[m, 8j + i] for the tile's rows m, as the B operand of plane i's dot. With
    X_PLANAR, x_cols points into x rearranged as (M, 8, K // 8), where plane i is contiguous."""
    k = 8 * j + i
    offs = i * plane_stride + j if X_PLANAR else k
    if EVEN_K:
        xt = tl.load(x_cols + offs[:, None])
    else:
        xt = tl.load(x_cols + offs[:, None], mask=(k < k_end)[:, None], other=0.0)
    return xt


@triton.jit
def _w4_dot_planes_kernel(
    x_ptr,  # (M, K) activations, 16-bit
    w_ptr,  # (N, K // 8) int32 words
    s_ptr,  # (N, K // G) scales
    y_ptr,  # (M, N) output
    part_ptr,  # (n_splits, M, N) float32 partials (only with SPLIT)
    lock_ptr,  # (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N),) int32 counters (only with SPLIT)
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_sn,
    stride_ym,
    k_per_split,  # a multiple of 8 * BLOCK_W
    plane_stride,  # K // 8: elements between planes of x when X_PLANAR
    GROUP_SIZE: tl.constexpr,  # a multiple of 8 * BLOCK_W here: one scale per row per step
    BLOCK_N: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_W: tl.constexpr,  # words per row per step: the K of each plane's dot (16 or more)
    EVEN_K: tl.constexpr,
    X_PLANAR: tl.constexpr,  # x comes as (M, 8, K // 8): each plane's activations contiguous, loads vectorized
    NUM_STAGES: tl.constexpr,
    SPLIT: tl.constexpr,
):
    """Grid (cdiv(N, BLOCK_N), n_splits, cdiv(M, BLOCK_M)), as the solution's dot kernel. Plane i of the
    words tile, (BLOCK_N, BLOCK_W), holds the weights k = 8j + i: its dot with x's k = 8j + i rows gives
    that plane's share, and the eight shares add up to the step. Each plane is elementwise in the loaded
    words (shift, mask, float subtract, round to x's dtype): no interleaving of the planes in k order."""
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
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
    for k0 in tl.range(k_start, k_end, BLOCK_K, num_stages=NUM_STAGES):
        j = k0 // 8 + tl.arange(0, BLOCK_W)
        if EVEN_K:
            words = tl.load(w_rows + j[None, :])
        else:
            words = tl.load(w_rows + j[None, :], mask=(8 * j < k_end)[None, :], other=0)
        dt = x_ptr.dtype.element_ty
        step = tl.dot(_nibble(words, 0).to(dt), _x_plane_t(x_cols, j, 0, k_end, plane_stride, EVEN_K, X_PLANAR))
        step = tl.dot(_nibble(words, 1).to(dt), _x_plane_t(x_cols, j, 1, k_end, plane_stride, EVEN_K, X_PLANAR), step)
        step = tl.dot(_nibble(words, 2).to(dt), _x_plane_t(x_cols, j, 2, k_end, plane_stride, EVEN_K, X_PLANAR), step)
        step = tl.dot(_nibble(words, 3).to(dt), _x_plane_t(x_cols, j, 3, k_end, plane_stride, EVEN_K, X_PLANAR), step)
        step = tl.dot(_nibble(words, 4).to(dt), _x_plane_t(x_cols, j, 4, k_end, plane_stride, EVEN_K, X_PLANAR), step)
        step = tl.dot(_nibble(words, 5).to(dt), _x_plane_t(x_cols, j, 5, k_end, plane_stride, EVEN_K, X_PLANAR), step)
        step = tl.dot(_nibble(words, 6).to(dt), _x_plane_t(x_cols, j, 6, k_end, plane_stride, EVEN_K, X_PLANAR), step)
        step = tl.dot(_nibble(words, 7).to(dt), _x_plane_t(x_cols, j, 7, k_end, plane_stride, EVEN_K, X_PLANAR), step)
        acc += step * tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)[:, None]
    mn_mask = n_mask[:, None] & m_mask[None, :]
    tile_id = pid_m * tl.num_programs(0) + pid_n
    QUANT._finish_tile(acc, y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None],
                       part_ptr + offs_m[None, :] * N + offs_n[:, None], mn_mask, lock_ptr + tile_id, M * N, SPLIT)


def w4_dot_planes(
    x: torch.Tensor,  # (M, K), float16 or bfloat16 (the interpreter: float32 too)
    w_packed: torch.Tensor,  # (N, K // 2) uint8
    scales: torch.Tensor,  # (N, K // G)
    group_size: int,
    *,
    block_n: int,
    block_m: int,
    block_w: int,
    num_warps: int,
    num_stages: int,
    programs_per_sm: int,
    x_planar: bool = False,
) -> torch.Tensor:
    """y (M, N) = x @ W.T as quant_matmul.w4a16_matmul, with the eight-plane dot kernel; needs G a multiple
    of 8 * block_w. x_planar: rearrange x to (M, 8, K // 8) first (one small extra launch, timed with the call)."""
    if group_size % (8 * block_w):
        raise ValueError(f"w4_dot_planes: group_size {group_size} must be a multiple of 8 * block_w = {8 * block_w}")
    words = w_packed.view(torch.int32)
    (m, k), n = x.shape, words.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    n_tiles, m_tiles = triton.cdiv(n, block_n), triton.cdiv(m, block_m)
    splits, k_split, part, locks = QUANT._split_k(n_tiles * m_tiles, k, 8 * block_w, programs_per_sm, x, m, n)
    xs = x.view(m, k // 8, 8).transpose(1, 2).contiguous() if x_planar else x  # (M, 8, K // 8) or (M, K)
    _w4_dot_planes_kernel[(n_tiles, splits, m_tiles)](
        xs, words, scales, y, part, locks, m, n, k, xs.stride(0), words.stride(0), scales.stride(0), y.stride(0),
        k_split, k // 8, GROUP_SIZE=group_size, BLOCK_N=block_n, BLOCK_M=block_m, BLOCK_W=block_w,
        EVEN_K=k % (8 * block_w) == 0, X_PLANAR=x_planar, NUM_STAGES=num_stages, SPLIT=splits > 1, num_warps=num_warps,
        num_stages=num_stages,
    )  # fmt: skip
    return y


# --------------------------------------------------------------------------------------------------
# Decode with the combine fused into the split kernel
# --------------------------------------------------------------------------------------------------


@triton.jit
def _decode_fused_kernel(
    q_ptr,  # (B, Hq, 1, HEAD_DIM): row b * Hq + h
    k_ptr,  # (B, Hkv, Sk, HEAD_DIM)
    v_ptr,
    o_ptr,  # (B, Hq, 1, HEAD_DIM) output, q's dtype
    lse_ptr,  # (B, Hq, 1) float32, natural log
    o_part_ptr,  # (B * Hq, n_splits, HEAD_DIM) float32 (only with more than one split)
    lse_part_ptr,  # (B * Hq, n_splits) float32, log2 units
    lock_ptr,  # (B * Hkv,) int32 arrival counters, zero between calls
    k_desc,  # TMA descriptors over K and V as (B * Hkv * Sk, HEAD_DIM) when USE_TMA, else unused
    v_desc,
    seqlen_k,
    group,
    keys_per_split,
    qk_scale,  # scale * log2(e)
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_G: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    USE_TMA: tl.constexpr,  # K and V tiles by TMA (straight to shared memory), else by masked pointer loads
    DOT_PRECISION: tl.constexpr,
):
    """Program (s, b * Hkv + j): the group's query heads over split s of the keys, as the solution's
    split kernel; then the last of the n_splits programs of (b, j) to finish merges their partials."""
    split = tl.program_id(0)
    pid_bkv = tl.program_id(1)
    n_splits = tl.num_programs(0)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n0 = tl.arange(0, BLOCK_N)
    rows = pid_bkv * group + offs_g
    row_mask = offs_g < group
    q = tl.load(q_ptr + rows[:, None] * HEAD_DIM + offs_d[None, :], mask=row_mask[:, None], other=0.0)
    kv_head = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM
    start = split * keys_per_split
    end = tl.minimum(start + keys_per_split, seqlen_k)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_DIM], dtype=tl.float32)
    for start_n in tl.range(start, end, BLOCK_N, num_stages=NUM_STAGES):
        offs_n = start_n + offs_n0
        key_mask = offs_n < end
        if USE_TMA:  # a tile past the split reads on (the next head's rows, or zeros past the end): masked below
            k = k_desc.load([pid_bkv * seqlen_k + start_n, 0])
            v = v_desc.load([pid_bkv * seqlen_k + start_n, 0])
        else:
            kv_offs = kv_head + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
            k = tl.load(k_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
            v = tl.load(v_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)
        s = tl.where(key_mask[None, :], s * qk_scale, float("-inf"))
        if USE_TMA:  # the rows read past the split are finite, but p = 0 there must not meet a NaN in v
            v = tl.where(key_mask[:, None], v, 0.0)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=DOT_PRECISION)
        m_i = m_new
    out_ptrs = o_ptr + rows[:, None] * HEAD_DIM + offs_d[None, :]
    if n_splits == 1:  # the keys in one program: no partials, no merge
        tl.store(out_ptrs, (acc / l_i[:, None]).to(o_ptr.dtype.element_ty), mask=row_mask[:, None])
        tl.store(lse_ptr + rows, (m_i + tl.math.log2(l_i)) * 0.6931471805599453, mask=row_mask)
    else:
        part = rows.to(tl.int64) * n_splits  # (BLOCK_G,) split 0 of each row
        tl.store(o_part_ptr + (part + split)[:, None] * HEAD_DIM + offs_d[None, :], acc / l_i[:, None],
                 mask=row_mask[:, None])
        tl.store(lse_part_ptr + part + split, m_i + tl.math.log2(l_i), mask=row_mask)
        tl.debug_barrier()  # every thread's partial is stored before the arrival is counted
        arrived = tl.atomic_add(lock_ptr + pid_bkv, 1, sem="acq_rel")
        if arrived == n_splits - 1:
            # merge in split order (deterministic whoever came last), online: a running max and sum
            m = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
            total = tl.zeros([BLOCK_G], dtype=tl.float32)
            o = tl.zeros([BLOCK_G, HEAD_DIM], dtype=tl.float32)
            for sp in range(0, n_splits):
                # .cg: from L2, where the other programs' stores landed
                lse_s = tl.load(lse_part_ptr + part + sp, mask=row_mask, other=0.0, cache_modifier=".cg")
                o_s = tl.load(o_part_ptr + (part + sp)[:, None] * HEAD_DIM + offs_d[None, :],
                              mask=row_mask[:, None], other=0.0, cache_modifier=".cg")
                m_new = tl.maximum(m, lse_s)
                alpha = tl.math.exp2(m - m_new)
                w = tl.math.exp2(lse_s - m_new)
                total = total * alpha + w
                o = o * alpha[:, None] + o_s * w[:, None]
                m = m_new
            tl.store(out_ptrs, (o / total[:, None]).to(o_ptr.dtype.element_ty), mask=row_mask[:, None])
            tl.store(lse_ptr + rows, (m + tl.math.log2(total)) * 0.6931471805599453, mask=row_mask)
            tl.atomic_xchg(lock_ptr + pid_bkv, 0)  # ready for the next call


_DECODE_LOCKS: dict[torch.device, torch.Tensor] = {}


def decode_splits(seqlen_k: int, n_groups: int, sms: int, block_n: int, programs_per_sm: int,
                  min_blocks_per_split: int) -> int:
    """Key splits that fill programs_per_sm slots per SM once, each split at least min_blocks_per_split blocks."""
    return max(1, min(triton.cdiv(seqlen_k, min_blocks_per_split * block_n), (programs_per_sm * sms) // n_groups))


def decode_fused(
    q: torch.Tensor,  # (B, Hq, 1, D)
    k: torch.Tensor,  # (B, Hkv, Sk, D)
    v: torch.Tensor,
    scale: float,
    *,
    block_n: int,
    num_warps: int,
    num_stages: int,
    programs_per_sm: int,
    min_blocks_per_split: int = 2,
    n_splits: int | None = None,
    tma: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """o (B, Hq, 1, D) and lse (B, Hq, 1) as the solution's attention_decode, in one launch."""
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    n_groups = batch * n_heads_kv
    if n_splits is None:
        n_splits = decode_splits(seqlen_k, n_groups, device_of(q).sms, block_n, programs_per_sm, min_blocks_per_split)
    keys = triton.cdiv(triton.cdiv(seqlen_k, n_splits), block_n) * block_n
    n_splits = triton.cdiv(seqlen_k, keys)  # none empty
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    locks = _DECODE_LOCKS.get(q.device)
    if locks is None or locks.numel() < n_groups:
        locks = torch.zeros(max(n_groups, 1024), dtype=torch.int32, device=q.device)
        _DECODE_LOCKS[q.device] = locks
    if tma:
        k_desc = ATTN.TensorDescriptor(k, shape=[k.numel() // head_dim, head_dim], strides=[head_dim, 1],
                                       block_shape=[block_n, head_dim])
        v_desc = ATTN.TensorDescriptor(v, shape=[v.numel() // head_dim, head_dim], strides=[head_dim, 1],
                                       block_shape=[block_n, head_dim])
    else:
        k_desc, v_desc = k, v  # stand-ins: the kernel does not touch them
    _decode_fused_kernel[(n_splits, n_groups)](
        q, k, v, o, lse, o_part, lse_part, locks, k_desc, v_desc, seqlen_k, group, keys, scale * ATTN.LOG2E,
        HEAD_DIM=head_dim, BLOCK_N=block_n, BLOCK_G=max(16, triton.next_power_of_2(group)), NUM_STAGES=num_stages,
        USE_TMA=tma, DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32", num_warps=num_warps, num_stages=num_stages,
    )  # fmt: skip
    return o, lse


def decode_solution(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, *, block_n: int, num_warps: int,
    num_stages: int, programs_per_sm: int, min_blocks_per_split: int = 2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The solution's two kernels (split, then combine) with these settings instead of its configs.json."""
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    splits = decode_splits(seqlen_k, batch * n_heads_kv, device_of(q).sms, block_n, programs_per_sm, min_blocks_per_split)
    keys = triton.cdiv(triton.cdiv(seqlen_k, splits), block_n) * block_n
    n_splits = triton.cdiv(seqlen_k, keys)
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    ATTN._attn_decode_split_kernel[(n_splits, batch * n_heads_kv)](
        q, k, v, o_part, lse_part, seqlen_k, group, keys, scale * ATTN.LOG2E,
        HEAD_DIM=head_dim, BLOCK_N=block_n, BLOCK_G=max(16, triton.next_power_of_2(group)),
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32", num_warps=num_warps, num_stages=num_stages,
    )  # fmt: skip
    ATTN._attn_decode_combine_kernel[(batch * n_heads_q,)](
        o_part, lse_part, o, lse, n_splits, HEAD_DIM=head_dim, BLOCK_S=triton.next_power_of_2(n_splits),
        num_warps=4 if head_dim * n_splits >= 4096 else 1,
    )  # fmt: skip
    return o, lse


# --------------------------------------------------------------------------------------------------
# The practical ceiling: a kernel that only reads the same bytes
# --------------------------------------------------------------------------------------------------


@triton.jit
def _stream_read_kernel(src_ptr, out_ptr, n_words, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """A persistent grid reads n_words int32 words once (program p takes blocks p, p + P, ...), xors them
    and stores one word per program: what reading those bytes costs, with no other work."""
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for start in tl.range(pid * BLOCK, n_words, tl.num_programs(0) * BLOCK, num_stages=NUM_STAGES):
        offs = start + tl.arange(0, BLOCK)
        acc ^= tl.load(src_ptr + offs, mask=offs < n_words, other=0)
    tl.store(out_ptr + pid, tl.xor_sum(acc, 0))


def stream_read(src: torch.Tensor, out: torch.Tensor, *, block: int, num_warps: int, num_stages: int) -> torch.Tensor:
    """Read src (contiguous, a multiple of 4 bytes) once with out.numel() programs; out (P,) int32 gets their xors."""
    words = src.reshape(-1).view(torch.int32)
    _stream_read_kernel[(out.numel(),)](words, out, words.numel(), BLOCK=block, NUM_STAGES=num_stages,
                                        num_warps=num_warps, num_stages=num_stages)  # fmt: skip
    return out
