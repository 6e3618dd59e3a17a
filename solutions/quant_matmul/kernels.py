"""Assignment 09, weight-only quantized matmul: W8A16 and W4A16 kernels in Triton.

    w8a16_matmul(x, w_int8, scales):           y = x @ (w_int8 * scales[:, None]).T
    w4a16_matmul(x, w_packed, scales, G=128):  y = x @ W.T,  W[n, k] = (q[n, k] - 8) * scales[n, k // G]

with q[n, k] the 4-bit code in w_packed[n, k // 2]: the low nibble for even k, the high nibble for odd k.
The handout is README.md beside this file. Fill in every region marked TODO; keep the signatures, the
launch wrappers and the helpers that are given: the grader calls the two functions above.
Grade yourself with `make grade` (or `python -m autograder grade quant_matmul`).

Two kernels per format. A GEMV (one activation row per program, CUDA-core FMAs) for decoding one token;
a tile kernel with `tl.dot` for a few to many rows. Both may split K across programs ("split-K") when the
output alone has too few tiles to keep every SM streaming weights; `_finish_tile` adds the splits up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

from course.configs import ConfigTable, SearchSpace
from course.device import Device, device_of
from course.launch import LaunchPlan, cdiv, launch, next_power_of_2
from course.ops import OpLibrary
from course.validate import CheckedOnce, check_same, check_tensor

# --------------------------------------------------------------------------------------------------
# Kernels, 1: given helpers: exact int -> float decoding, and the split-K epilogue.
#
# Weights are read as 32-bit words (w.view(torch.int32)): 8 four-bit codes or 4 int8 weights a word, one
# 16-byte load for 32 or 16 weights. Decoding must cost only a few instructions per weight: at M = 1 the
# kernel streams 58.7 million weights (4096 x 14336); to run near the ~7 us it takes to read them, each of
# an H200's 16,896 lanes has about 3 instructions per weight, and an int -> float conversion alone issues
# at 16 per clock per SM against 128 for a float add.
#
# The trick: the float32 with bits 0x4B000000 is 2**23, and its low 23 bits are the mantissa in units of
# 1. OR a field of the word into it and the float is exactly 2**23 + v * 2**b, with b the field's bit
# position: a bitwise AND (with 0x4B000000 already OR-ed into the word once) and one float subtract
# give (v - zero) * 2**b exactly. Leaving each field where it is saves a shift per weight; the factor
# 2**b is undone on the activation instead (x * 2**-b, exact), once per activation, not per weight.
# --------------------------------------------------------------------------------------------------

MAGIC = tl.constexpr(0x4B000000)  # the bits of the float 2**23
TWO_23 = tl.constexpr(8388608.0)


@triton.jit
def _field(word_magic, mask: tl.constexpr, zero: tl.constexpr, bit: tl.constexpr):
    """(v - zero) * 2**bit as float32, exactly, for the field v = word & mask at bit `bit` (bits 0..22),
    given word_magic = word | MAGIC (or word ^ flip | MAGIC for signed fields)."""
    return (word_magic & (MAGIC | mask)).to(tl.float32, bitcast=True) - (TWO_23 + zero * (1 << bit))


@triton.jit
def _planes_to_k(p0, p1, p2, p3, p4, p5, p6, p7):
    """Eight (R, C) planes -> (R, 8C) with plane i of column j at 8j + i."""
    # tl.join stacks along a new last axis, so element [r, j, a, b, c] of this (R, C, 2, 2, 2) tensor is
    # plane 4a + 2b + c, and the row-major reshape puts it at 8j + 4a + 2b + c
    w = tl.join(tl.join(tl.join(p0, p4), tl.join(p2, p6)), tl.join(tl.join(p1, p5), tl.join(p3, p7)))
    return tl.reshape(w, (p0.shape[0], p0.shape[1] * 8))


@triton.jit
def _k_to_planes(t):
    """(8C, M) in k order -> the eight (C, M) planes, plane i holding rows 8j + i: _planes_to_k's inverse
    along the first axis, as a tuple."""
    # [j, a, b, c, m] with k = 8j + 4a + 2b + c, then m moved before the three size-2 axes, which tl.split
    # takes off from the last: c first, then b, then a
    t = tl.permute(tl.reshape(t, (t.shape[0] // 8, 2, 2, 2, t.shape[1])), (0, 4, 1, 2, 3))
    c0, c1 = tl.split(t)
    c0b0, c0b1 = tl.split(c0)
    c1b0, c1b1 = tl.split(c1)
    p0, p4 = tl.split(c0b0)
    p2, p6 = tl.split(c0b1)
    p1, p5 = tl.split(c1b0)
    p3, p7 = tl.split(c1b1)
    return p0, p1, p2, p3, p4, p5, p6, p7


@triton.jit
def _field_exact(word_magic, mask: tl.constexpr, zero: tl.constexpr, bit: tl.constexpr):
    """v - zero as float32, exactly, for the field v = word & mask at bit `bit`: _field's float 2**23 + v * 2**bit
    times 2**-bit (exact) minus 2**(23 - bit) + zero, in one FMA (the sum v - zero is representable)."""
    raw = (word_magic & (MAGIC | mask)).to(tl.float32, bitcast=True)
    return raw * (1.0 / (1 << bit)) - (TWO_23 / (1 << bit) + zero)


@triton.jit
def _quads_to_k(p0, p1, p2, p3):
    """Four (R, C) planes -> (R, 4C) with plane i of column j at 4j + i."""
    w = tl.join(tl.join(p0, p2), tl.join(p1, p3))
    return tl.reshape(w, (p0.shape[0], p0.shape[1] * 4))


@triton.jit
def _finish_tile(
    acc,  # float32 tile of this program's share of the output: y[rows, cols] summed over its K slice
    y_ptrs,  # pointers into y for the tile (same shape as acc)
    part_ptrs,  # pointers into split 0's slice of the float32 partial buffer (same shape as acc)
    mask,  # which elements of the tile exist
    lock_ptr,  # this tile's arrival counter (int32, zero between calls)
    split_stride,  # elements between one split's slice of the partial buffer and the next
    SPLIT: tl.constexpr,  # K is split across tl.num_programs(1) programs
):
    """Write a finished tile: directly without split-K, else through the partial buffer.

    With split-K each program stores its partial sum, then counts itself in on the tile's counter; the
    last to arrive adds the partials in split order (so the result does not depend on who came last),
    writes y and resets the counter. One launch, no atomics on data, deterministic.
    """
    if not SPLIT:
        tl.store(y_ptrs, acc.to(y_ptrs.dtype.element_ty), mask=mask)
    else:
        n_splits = tl.num_programs(1)
        tl.store(part_ptrs + tl.program_id(1) * split_stride, acc, mask=mask)
        tl.debug_barrier()  # every thread's partial is stored before the arrival is counted
        arrived = tl.atomic_add(lock_ptr, 1, sem="acq_rel")  # release our partial, acquire the others'
        if arrived == n_splits - 1:
            total = tl.zeros_like(acc)
            for p in range(0, n_splits):
                # .cg reads from L2, where the other programs' stores landed, never a stale L1 line
                total += tl.load(part_ptrs + p * split_stride, mask=mask, other=0.0, cache_modifier=".cg")
            tl.store(y_ptrs, total.to(y_ptrs.dtype.element_ty), mask=mask)
            tl.atomic_xchg(lock_ptr, 0)  # ready for the next call


# --------------------------------------------------------------------------------------------------
# Kernels, 2: W8A16: int8 weights, one scale per output channel.
# --------------------------------------------------------------------------------------------------


@triton.jit
def _decode_int8_words(words):
    """(R, C) int32 words, 4 int8 weights each (byte b is k = 4j + b) -> (R, 4C) float32 in k order,
    each weight times 2**(8 * (b % 2)): multiply the activations by _int8_unscale to undo it."""
    ### BEGIN SOLUTION quant_matmul.w8a16
    #> Byte b of word j is the weight at k = 4j + b. Return the (R, 4C) float32 values in k order (interleave
    #> the four byte planes with _quads_to_k), up to the factors _int8_unscale returns.
    #> More: python -m autograder hint quant_matmul.w8a16
    lo = (words ^ 0x8080) | MAGIC  # bytes 0 and 1 as b + 128; the magic exponent over bits 24..31
    hi = ((words >> 16) ^ 0x8080) | MAGIC  # bytes 2 and 3, moved to bits 0..15
    b0 = _field(lo, 0x00FF, 128.0, 0)
    b1 = _field(lo, 0xFF00, 128.0, 8)
    b2 = _field(hi, 0x00FF, 128.0, 0)
    b3 = _field(hi, 0xFF00, 128.0, 8)
    return _quads_to_k(b0, b1, b2, b3)
    ### END SOLUTION


@triton.jit
def _int8_unscale(C: tl.constexpr):
    """(1, 4C) float32: what each activation is multiplied by to undo _decode_int8_words' factors."""
    ### BEGIN SOLUTION quant_matmul.w8a16
    #> One value per k = 4j + b, in the layout _decode_int8_words returns: build the four (1, C) planes
    #> with tl.full and interleave them with _quads_to_k.
    one = tl.full((1, C), 1.0, tl.float32)
    low = tl.full((1, C), 1.0 / 256, tl.float32)
    return _quads_to_k(one, low, one, low)
    ### END SOLUTION


@triton.jit
def _decode_int8(w):
    """int8 weights (any shape) -> the same values as float32, exactly (for K not a multiple of 4)."""
    ### BEGIN SOLUTION quant_matmul.w8a16
    #> Return w as float32 (`w.to(tl.float32)` is correct; _field is faster).
    return _field((w.to(tl.int32) ^ 0x80) | MAGIC, 0xFF, 128.0, 0)
    ### END SOLUTION


@triton.jit
def _load_w8_tile(w_rows, k0, k_end, BLOCK_K: tl.constexpr, WORDS: tl.constexpr, EVEN_K: tl.constexpr):
    """The int8 weights at k0 .. k0 + BLOCK_K of the rows w_rows point to ((BLOCK_N, 1) pointers): raw
    int32 words when WORDS (decode with _decode_int8_words), else bytes. Rows are clamped in bounds by
    the caller; with EVEN_K every step is whole and needs no mask."""
    if WORDS:
        offs = k0 // 4 + tl.arange(0, BLOCK_K // 4)
        in_k = 4 * offs < k_end  # K is a multiple of 4 here: a word is all in or all out
    else:
        offs = k0 + tl.arange(0, BLOCK_K)
        in_k = offs < k_end
    if EVEN_K:
        tile = tl.load(w_rows + offs[None, :])
    else:
        tile = tl.load(w_rows + offs[None, :], mask=in_k[None, :], other=0)
    return tile


@triton.jit
def _decode_w8_tile(tile, WORDS: tl.constexpr):
    # (a constexpr `if` with one return after it: the compiler types every return, taken or not)
    if WORDS:
        w = _decode_int8_words(tile)
    else:
        w = _decode_int8(tile)
    return w


@triton.jit
def _w8_unscale(BLOCK_K: tl.constexpr, WORDS: tl.constexpr):
    if WORDS:
        unscale = _int8_unscale(BLOCK_K // 4)
    else:
        unscale = tl.full((1, BLOCK_K), 1.0, tl.float32)
    return unscale


@triton.jit
def _w8a16_gemv_kernel(
    x_ptr,  # (M, K) activations
    w_ptr,  # (N, K // 4) int32 words when WORDS, else (N, K) int8
    s_ptr,  # (N,) per-channel scales
    y_ptr,  # (M, N) output, x's dtype
    part_ptr,  # (n_splits, M, N) float32 partial sums (only with SPLIT)
    lock_ptr,  # (M * cdiv(N, BLOCK_N),) int32 arrival counters (only with SPLIT)
    M,
    N,
    K,
    stride_xm,
    stride_wn,  # elements of w_ptr's type between rows
    stride_ym,
    k_per_split,  # a multiple of BLOCK_K: program (., p, .) reduces k in [p * k_per_split, (p + 1) * k_per_split)
    BLOCK_N: tl.constexpr,  # output channels (rows of w) per program
    BLOCK_K: tl.constexpr,  # weights per row per step
    WORDS: tl.constexpr,  # read w as int32 words (K % 4 == 0)
    EVEN_K: tl.constexpr,  # K % BLOCK_K == 0: no step needs a mask
    SPLIT: tl.constexpr,
):
    """Grid (cdiv(N, BLOCK_N), n_splits, M): program (i, p, m) computes y[m, i*BLOCK_N : (i+1)*BLOCK_N]
    over its K slice. One token's product is a GEMV: every weight is used once, so this is a race to
    stream w through the SMs; the arithmetic runs on CUDA cores, in float32."""
    ### BEGIN SOLUTION quant_matmul.w8a16
    #> Walk this program's K slice in steps of BLOCK_K, accumulating sum over k of w[n, k] * x[m, k] in a
    #> (BLOCK_N,) float32 vector; scale by the channels' scales and finish with _finish_tile: y[m, n] at
    #> y_ptr + m * stride_ym + n, its partials at part_ptr + m * N + n, its counter at
    #> lock_ptr + m * num_programs(0) + program_id(0).
    #> More: python -m autograder hint quant_matmul.w8a16
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    m = tl.program_id(2).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    # rows past N re-read row N - 1 (their results are never stored), so loads need no row mask;
    # int64: row * stride passes 2**31 on big layers
    w_rows = w_ptr + tl.minimum(offs_n, N - 1).to(tl.int64)[:, None] * stride_wn
    x_row = x_ptr + m * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    unscale = _w8_unscale(BLOCK_K, WORDS)  # (1, BLOCK_K)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    tile = _load_w8_tile(w_rows, k_start, k_end, BLOCK_K, WORDS, EVEN_K)
    for k0 in range(k_start, k_end, BLOCK_K):
        # Software pipelining by hand: the next step's weights are requested before this step's math
        # (the last step re-requests the first, which is in bounds and cached, instead of a mask)
        k_next = tl.where(k0 + BLOCK_K < k_end, k0 + BLOCK_K, k_start)
        following = _load_w8_tile(w_rows, k_next, k_end, BLOCK_K, WORDS, EVEN_K)
        k = k0 + tl.arange(0, BLOCK_K)
        if EVEN_K:
            x = tl.load(x_row + k)
        else:
            x = tl.load(x_row + k, mask=k < k_end, other=0.0)
        acc += tl.sum(_decode_w8_tile(tile, WORDS) * (x.to(tl.float32)[None, :] * unscale), axis=1)
        tile = following
    out = acc * tl.load(s_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)  # the scale factors out of the sum
    tile_id = m * tl.num_programs(0) + pid_n
    _finish_tile(out, y_ptr + m * stride_ym + offs_n, part_ptr + m * N + offs_n, n_mask, lock_ptr + tile_id,
                 M * N, SPLIT)
    ### END SOLUTION


@triton.jit
def _w8a16_dot_kernel(
    x_ptr,  # (M, K) activations
    w_ptr,  # (N, K // 4) int32 words when WORDS, else (N, K) int8
    s_ptr,  # (N,) per-channel scales
    y_ptr,  # (M, N) output
    part_ptr,  # (n_splits, M, N) float32 partial sums (only with SPLIT)
    lock_ptr,  # (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N),) int32 arrival counters (only with SPLIT)
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_ym,
    k_per_split,
    BLOCK_N: tl.constexpr,  # output channels per program: the M side of the MMA (64 or more on Hopper)
    BLOCK_M: tl.constexpr,  # activation rows per program: the N side of the MMA (16 or more)
    BLOCK_K: tl.constexpr,
    WORDS: tl.constexpr,
    EVEN_K: tl.constexpr,
    DOT_16BIT: tl.constexpr,  # dot in x's 16-bit dtype (exact weights); else in float32 with PRECISION
    PRECISION: tl.constexpr,  # "tf32" for 16-bit activations (exact here: see _precision), "ieee" for float32
    SPLIT: tl.constexpr,
):
    """Grid (cdiv(N, BLOCK_N), n_splits, cdiv(M, BLOCK_M)): program (i, p, j) computes the tile
    y[j*BLOCK_M.., i*BLOCK_N..] as its transpose, w_tile @ x_tile.T (BLOCK_N, BLOCK_M): with few rows of
    x, putting the many weight rows on the MMA's M side keeps the tensor-core tile full."""
    ### BEGIN SOLUTION quant_matmul.w8a16
    #> Per K step a tl.dot of a decoded (BLOCK_N, BLOCK_K) tile of w and a (BLOCK_K, BLOCK_M) tile of x, into
    #> a float32 (BLOCK_N, BLOCK_M) accumulator; scales after the loop; _finish_tile: element (n, m) at
    #> y_ptr + m * stride_ym + n, its partial at part_ptr + m * N + n, its counter at
    #> lock_ptr + program_id(2) * num_programs(0) + program_id(0).
    #> More: python -m autograder hint quant_matmul.w8a16
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n_mask = offs_n < N
    m_mask = offs_m < M
    # rows of w past N and of x past M re-read the last one (never stored): no masks on loads
    w_rows = w_ptr + tl.minimum(offs_n, N - 1).to(tl.int64)[:, None] * stride_wn
    x_cols = x_ptr + tl.minimum(offs_m, M - 1).to(tl.int64)[None, :] * stride_xm  # x read as its transpose
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    unscale = tl.reshape(_w8_unscale(BLOCK_K, WORDS), (BLOCK_K, 1))
    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        w = _decode_w8_tile(_load_w8_tile(w_rows, k0, k_end, BLOCK_K, WORDS, EVEN_K), WORDS)
        k = k0 + tl.arange(0, BLOCK_K)
        if EVEN_K:
            xt = tl.load(x_cols + k[:, None])  # (BLOCK_K, BLOCK_M)
        else:
            xt = tl.load(x_cols + k[:, None], mask=(k < k_end)[:, None], other=0.0)
        if DOT_16BIT:  # exact weights in x's dtype, x as it is  # pragma: no cover - GPU tier only: 16-bit
            acc = tl.dot((w * tl.reshape(unscale, (1, BLOCK_K))).to(xt.dtype), xt, acc)
        else:  # tf32: the weights as decoded, the activations times the factors to undo
            acc = tl.dot(w, xt.to(tl.float32) * unscale, acc, input_precision=PRECISION)
    acc = acc * tl.load(s_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[:, None]
    mn_mask = n_mask[:, None] & m_mask[None, :]
    tile_id = pid_m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None],
                 part_ptr + offs_m[None, :] * N + offs_n[:, None], mn_mask, lock_ptr + tile_id, M * N, SPLIT)
    ### END SOLUTION


# --------------------------------------------------------------------------------------------------
# Kernels, 3: W4A16: 4-bit codes, two per byte, one scale per group of G weights along K.
#
# The kernels read w_packed as 32-bit words, w_packed.view(torch.int32), shape (N, K // 8): the nibble at
# bits 4i..4i+3 of word j of row n is the code of k = 8j + i (bytes are little-endian, and each byte holds
# the even k in its low nibble). A (BLOCK_N, BLOCK_W) tile of words holds BLOCK_K = 8 * BLOCK_W weights
# per row; _decode_nibbles turns it into a (BLOCK_N, BLOCK_K) float32 tile in k order.
# --------------------------------------------------------------------------------------------------


@triton.jit
def _decode_nibbles(words):
    """(R, C) int32 words -> (R, 8C) float32 weights before scaling, (q - 8) * 16**e, in k order (k = 8j + i):
    each nibble is decoded where it sits in its word, so nibble i comes times 16**e with e = i for
    i <= 4 and i - 3 above. Multiply the activations by _nibble_unscale to undo it."""
    ### BEGIN SOLUTION quant_matmul.w4a16
    #> Nibble i of word j is the code q of k = 8j + i, and stands for q - 8. Return the (R, 8C) float32
    #> values in k order (interleave the 8 planes with _planes_to_k), up to the factors _nibble_unscale returns.
    #> More: python -m autograder hint quant_matmul.w4a16
    lo = words | MAGIC  # nibbles 0..4 in bits 0..19, under the magic exponent
    hi = (words >> 12) | MAGIC  # nibbles 5..7 moved to bits 8..19
    return _planes_to_k(
        _field(lo, 0x0000F, 8.0, 0), _field(lo, 0x000F0, 8.0, 4), _field(lo, 0x00F00, 8.0, 8),
        _field(lo, 0x0F000, 8.0, 12), _field(lo, 0xF0000, 8.0, 16), _field(hi, 0x00F00, 8.0, 8),
        _field(hi, 0x0F000, 8.0, 12), _field(hi, 0xF0000, 8.0, 16),
    )  # fmt: skip
    ### END SOLUTION


@triton.jit
def _nibble_unscale(C: tl.constexpr):
    """(1, 8C) float32: what each activation is multiplied by to undo _decode_nibbles' factors 16**e."""
    ### BEGIN SOLUTION quant_matmul.w4a16
    #> One value per k = 8j + i, in the layout _decode_nibbles returns (all ones if _decode_nibbles returns
    #> q - 8 exactly), as eight (1, C) planes from tl.full, interleaved with _planes_to_k.
    e0 = tl.full((1, C), 1.0, tl.float32)
    e1 = tl.full((1, C), 1.0 / 16, tl.float32)
    e2 = tl.full((1, C), 1.0 / 256, tl.float32)
    e3 = tl.full((1, C), 1.0 / 4096, tl.float32)
    e4 = tl.full((1, C), 1.0 / 65536, tl.float32)
    return _planes_to_k(e0, e1, e2, e3, e4, e2, e3, e4)
    ### END SOLUTION


@triton.jit
def _load_words(w_rows, k0, k_end, BLOCK_W: tl.constexpr, EVEN_K: tl.constexpr):
    """The (BLOCK_N, BLOCK_W) words holding k0 .. k0 + 8 * BLOCK_W of the rows w_rows points to. Rows are
    clamped in bounds by the caller; with EVEN_K every step is whole and needs no mask."""
    offs = k0 // 8 + tl.arange(0, BLOCK_W)
    if EVEN_K:
        words = tl.load(w_rows + offs[None, :])
    else:
        words = tl.load(w_rows + offs[None, :], mask=(8 * offs < k_end)[None, :], other=0)  # K % 8 == 0: whole words
    return words


@triton.jit
def _w4a16_gemv_kernel(
    x_ptr,  # (M, K) activations
    w_ptr,  # (N, K // 8) int32 words: w_packed viewed as int32
    s_ptr,  # (N, K // G) scales
    y_ptr,  # (M, N) output, x's dtype
    part_ptr,  # (n_splits, M, N) float32 partial sums (only with SPLIT)
    lock_ptr,  # (M * cdiv(N, BLOCK_N),) int32 arrival counters (only with SPLIT)
    M,
    N,
    K,
    stride_xm,
    stride_wn,  # words between rows of w (K // 8 for a contiguous w_packed)
    stride_sn,  # scales between rows (K // G)
    stride_ym,
    k_per_split,  # a multiple of BLOCK_K
    GROUP_SIZE: tl.constexpr,  # weights per scale along K, a multiple of 8
    BLOCK_N: tl.constexpr,  # output channels per program
    BLOCK_W: tl.constexpr,  # words per row per step: BLOCK_K = 8 * BLOCK_W weights
    EVEN_K: tl.constexpr,  # K % BLOCK_K == 0: no step needs a mask
    SPLIT: tl.constexpr,
):
    """Grid (cdiv(N, BLOCK_N), n_splits, M): program (i, p, m) computes y[m, i*BLOCK_N : (i+1)*BLOCK_N]
    over its K slice, unpacking the 4-bit codes in registers; w is read once, half a byte per weight."""
    ### BEGIN SOLUTION quant_matmul.w4a16
    #> Walk this program's K slice in steps of BLOCK_K = 8 * BLOCK_W words' worth, decode with
    #> _decode_nibbles, scale by scales[n, k // GROUP_SIZE], accumulate in float32 (BLOCK_N,), and finish with
    #> _finish_tile, addressed as in the W8A16 GEMV.
    #> More: python -m autograder hint quant_matmul.w4a16
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    m = tl.program_id(2).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)  # rows past N re-read row N - 1: loads need no mask
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_row = x_ptr + m * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    unscale = _nibble_unscale(BLOCK_W)  # (1, BLOCK_K)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    words = _load_words(w_rows, k_start, k_end, BLOCK_W, EVEN_K)
    for k0 in range(k_start, k_end, BLOCK_K):
        # Software pipelining by hand: the next step's words are requested before this step's math
        # (the last step re-requests the first, in bounds and cached, instead of a mask)
        following = _load_words(w_rows, tl.where(k0 + BLOCK_K < k_end, k0 + BLOCK_K, k_start), k_end, BLOCK_W, EVEN_K)
        k = k0 + tl.arange(0, BLOCK_K)
        if EVEN_K:
            x = tl.load(x_row + k)
        else:
            x = tl.load(x_row + k, mask=k < k_end, other=0.0)
        xw = _decode_nibbles(words) * (x.to(tl.float32)[None, :] * unscale)  # (BLOCK_N, BLOCK_K): w * x
        if GROUP_SIZE % BLOCK_K == 0:  # one group per step: one scale per row, after the sum
            acc += tl.sum(xw, axis=1) * tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        else:  # several groups per step: one scale per weight
            s = tl.load(s_rows[:, None] + (k // GROUP_SIZE)[None, :], mask=(k < k_end)[None, :], other=0.0)
            acc += tl.sum(xw * s.to(tl.float32), axis=1)
        words = following
    tile_id = m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + m * stride_ym + offs_n, part_ptr + m * N + offs_n, n_mask, lock_ptr + tile_id,
                 M * N, SPLIT)
    ### END SOLUTION


@triton.jit
def _w4a16_dot_kernel(
    x_ptr,  # (M, K) activations
    w_ptr,  # (N, K // 8) int32 words
    s_ptr,  # (N, K // G) scales
    y_ptr,  # (M, N) output
    part_ptr,  # (n_splits, M, N) float32 partial sums (only with SPLIT)
    lock_ptr,  # (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N),) int32 arrival counters (only with SPLIT)
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_sn,
    stride_ym,
    k_per_split,
    GROUP_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr,  # output channels per program: the M side of the MMA
    BLOCK_M: tl.constexpr,  # activation rows per program: the N side of the MMA
    BLOCK_W: tl.constexpr,  # words per row per step (BLOCK_K = 8 * BLOCK_W); each plane's dot is BLOCK_W deep
    EVEN_K: tl.constexpr,
    DOT_16BIT: tl.constexpr,
    PRECISION: tl.constexpr,
    SPLIT: tl.constexpr,
    PLANES: tl.constexpr,  # eight thin products a step, one per nibble plane; else one wide one in k order
):
    """Grid (cdiv(N, BLOCK_N), n_splits, cdiv(M, BLOCK_M)): the tile of y at (rows j*BLOCK_M..,
    channels i*BLOCK_N..), computed as its transpose, with the dequantization in the loop, one of two ways.
    With PLANES (few rows, where the decode is the work): nibble i of the step's words is a (BLOCK_N, BLOCK_W)
    operand of its own, the weights at k = 8j + i, and it meets the activations x[8j + i]: eight thin products
    a step, each decoded where the tensor cores read it. Without (many rows, where the products are the work):
    the decoded tile goes back into k order, (BLOCK_N, BLOCK_K), for one wide product with the x tile."""
    ### BEGIN SOLUTION quant_matmul.w4a16
    #> Per step, the (BLOCK_N, BLOCK_W) words and x as a (BLOCK_K, BLOCK_M) tile: dot the codes q - 8 (x's dtype with
    #> DOT_16BIT, else float32 at PRECISION) with x into float32 sums, scaled per row after the dot when the step lies
    #> in one group, else per word before it. PLANES: one dot per nibble plane (_field_exact, _k_to_planes); else one
    #> of the tile in k order (_decode_nibbles). Finish with _finish_tile, addressed as in the W8A16 dot kernel.
    #> More: python -m autograder hint quant_matmul.w4a16
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n_mask = offs_n < N
    m_mask = offs_m < M
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)  # out-of-range rows re-read the last one: no load masks
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_cols = x_ptr + tl.minimum(offs_m, M - 1).to(tl.int64)[None, :] * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    # the dot's operand type: x's own (16 bits hold q - 8 exactly), or float32 at PRECISION
    DOT_TYPE: tl.constexpr = x_ptr.dtype.element_ty if DOT_16BIT else tl.float32
    one_group: tl.constexpr = GROUP_SIZE % BLOCK_K == 0  # each step lies in one group
    unscale = _nibble_unscale(BLOCK_W)  # (1, BLOCK_K), for the tile in k order
    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        words = _load_words(w_rows, k0, k_end, BLOCK_W, EVEN_K)  # (BLOCK_N, BLOCK_W)
        k = k0 + tl.arange(0, BLOCK_K)
        if EVEN_K:
            xt = tl.load(x_cols + k[:, None])  # (BLOCK_K, BLOCK_M)
        else:
            xt = tl.load(x_cols + k[:, None], mask=(k < k_end)[:, None], other=0.0)
        if not one_group:  # several groups per step: one scale per word (a word's 8 codes share a group)
            s = tl.load(s_rows[:, None] + (k0 // 8 + tl.arange(0, BLOCK_W))[None, :] * 8 // GROUP_SIZE,
                        mask=(k0 + 8 * tl.arange(0, BLOCK_W) < k_end)[None, :], other=0.0).to(tl.float32)
        if PLANES:
            # Nibble i of the words is a (BLOCK_N, BLOCK_W) operand of its own, elementwise in the words: Triton
            # loads them straight into the MMA's operand layout and decodes them there, and no decoded tile
            # goes through shared memory. x goes to the planes instead (a small tile): x_i[j] = x[8j + i].
            x_planes = _k_to_planes(xt.to(DOT_TYPE))
            lo = words | MAGIC  # nibbles 0..4 in bits 0..19, under the magic exponent
            hi = (words >> 12) | MAGIC  # nibbles 5..7 in bits 8..19
            step = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
            for i in tl.static_range(8):
                if i < 5:
                    codes = _field_exact(lo, 0xF << (4 * i), 8.0, 4 * i)  # (BLOCK_N, BLOCK_W): q - 8
                else:
                    codes = _field_exact(hi, 0xF << (4 * i - 12), 8.0, 4 * i - 12)
                if not one_group:
                    codes = codes * s
                step = tl.dot(codes.to(DOT_TYPE), x_planes[i], step, input_precision=PRECISION)
            if one_group:
                # the step's one scale per row, requested after its eight products: 25.7 us against 29.2 requested
                # before them, at 4x4096x14336 on an H200 (results/h200/w4a16_planes.md)
                s = tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        else:
            # One wide product: the tile back in k order (_planes_to_k), through shared memory into the MMA
            if one_group:  # the step's one scale per row, requested before the product waits on it
                s = tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
            codes = _decode_nibbles(words) * unscale  # (BLOCK_N, BLOCK_K): q - 8
            if not one_group:  # each word's scale to its 8 codes
                codes = codes * tl.reshape(tl.broadcast_to(s[:, :, None], (BLOCK_N, BLOCK_W, 8)), (BLOCK_N, BLOCK_K))
            step = tl.dot(codes.to(DOT_TYPE), xt.to(DOT_TYPE), input_precision=PRECISION)
        if one_group:
            acc += step * s[:, None]
        else:
            acc += step
    mn_mask = n_mask[:, None] & m_mask[None, :]
    tile_id = pid_m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None],
                 part_ptr + offs_m[None, :] * N + offs_n[:, None], mn_mask, lock_ptr + tile_id, M * N, SPLIT)
    ### END SOLUTION


# --------------------------------------------------------------------------------------------------
# Configuration: launch settings per GPU, format and number of rows, from configs.json
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GemvConfig:
    """Launch settings of a GEMV kernel (one program per activation row and BLOCK_N channels)."""

    block_n: int  # output channels per program
    block_k: int  # weights per row per step (a power of two; W4A16: at least 8)
    num_warps: int
    programs_per_sm: int  # split K until the grid holds about this many programs per SM
    num_stages: int = 3


@dataclass(frozen=True)
class DotConfig:
    """Launch settings of a dot kernel (a BLOCK_N x BLOCK_M tile of y.T per program)."""

    block_n: int  # output channels per program (>= 16; 64 or more lets Hopper use wgmma)
    block_m: int  # activation rows per program (>= 16)
    block_k: int  # weights per row per step (W4A16: at least 128, so that BLOCK_W >= 16)
    num_warps: int
    num_stages: int
    programs_per_sm: int
    dot_16bit: bool = False  # 16-bit x: dot in x's dtype (exact weights) rather than tf32 (float32 operands)
    planes: bool = False  # W4A16: one product per nibble plane, decoded in the MMA's operand layout (few rows)


DEFAULT_GEMV_MAX_M = 1
# The W4A16 dot kernel by nibble planes up to this many rows: on an H200, 1.02-1.36x the one wide product from 2
# to 32 rows; from 64 rows on 0.74-0.91x on 8 of 9 shapes (results/h200/w4a16_planes.md). Its reason (no
# decoded tile through shared memory) holds on any GPU with tensor cores; only the H200 has measured it.
DEFAULT_PLANES_MAX_M = 32


def default_config(bits: int, m: int, num_stages: int = 2) -> GemvConfig | DotConfig:  # pragma: no cover - GPU only: a GPU with no measured entry
    """Settings that suit any GPU and dtype, if not the fastest: a GEMV for one row, else a modest tile."""
    if m <= DEFAULT_GEMV_MAX_M:
        return GemvConfig(block_n=32 if bits == 4 else 16, block_k=128 if bits == 4 else 256, num_warps=2,
                          programs_per_sm=8)
    return DotConfig(block_n=64, block_m=min(max(16, next_power_of_2(m)), 32), block_k=128, num_warps=4,
                     num_stages=num_stages, programs_per_sm=2, dot_16bit=True,
                     planes=bits == 4 and m <= DEFAULT_PLANES_MAX_M)


# A float32 dot keeps its operands in shared memory as float32: two stages of the default tile take 100 KB with
# groups of 32 (python -m autograder portability), past the 99 KB of an sm_86/89/120 GPU; one stage fits there.
FLOAT32_TWO_STAGES_SMEM = 128 * 1024


def _default_stages(kernel: str, device: Device) -> int:  # pragma: no cover - GPU only: a GPU with no measured entry
    return 1 if kernel.endswith("float32") and device.smem_per_block < FLOAT32_TWO_STAGES_SMEM else 2


def _as_entry(cfg: GemvConfig | DotConfig) -> dict:
    return {"path": "gemv" if isinstance(cfg, GemvConfig) else "dot", "cfg": dataclasses.asdict(cfg)}


def _defaults(device: Device, kernel: str, bucket: str, reference: object) -> dict:  # pragma: no cover - GPU only: a GPU with no measured entry
    """A GPU with no measured entry (and float32 activations, graded for correctness only): default_config."""
    return _as_entry(default_config(int(kernel[1]), int(bucket.removeprefix("m<=")), _default_stages(kernel, device)))


# solutions/quant_matmul/configs.json, per GPU: "w4" and "w8" for 16-bit activations (and "w4 float32",
# "w8 float32" for float32 ones), by the number of rows M rounded up to a power of two (256 for any more).
# The H200 entry came from the sweep in results/h200/tune_quant_matmul.json.
CONFIGS = ConfigTable.beside(__file__, "quant_matmul", rules=_defaults)


@CONFIGS.cached
def quant_config(device: Device, bits: int, m: int, dtype: torch.dtype) -> GemvConfig | DotConfig:
    """The launch settings for an M-row product in the given format (bits 8 or 4) with activations of this dtype."""
    kernel = f"w{bits}" if dtype != torch.float32 else f"w{bits} float32"
    entry = CONFIGS.pick(device, kernel, f"m<={min(next_power_of_2(m), 256)}")
    return (GemvConfig if entry["path"] == "gemv" else DotConfig)(**entry["cfg"])


def pick_config(bits: int, m: int, x: torch.Tensor) -> GemvConfig | DotConfig:
    """quant_config for activations like x, on x's device."""
    return quant_config(device_of(x), bits, m, x.dtype)


# What `python -m autograder tune quant_matmul` tries: for one row (the GEMV), 16 and 64 rows (the dot
# kernels), around the H200's choices; the other row counts keep the settings of a GPU of the same
# architecture, or the defaults.
def _gemv(bn: int, bk: int, warps: int, per_sm: int, stages: int = 3) -> dict:
    return _as_entry(GemvConfig(block_n=bn, block_k=bk, num_warps=warps, programs_per_sm=per_sm, num_stages=stages))


def _dot(bn: int, bm: int, bk: int, warps: int, stages: int, per_sm: int, planes: bool = False) -> dict:
    return _as_entry(DotConfig(block_n=bn, block_m=bm, block_k=bk, num_warps=warps, num_stages=stages,
                               programs_per_sm=per_sm, dot_16bit=True, planes=planes))  # fmt: skip


def _w(bits: int, m: int, k: int = 4096, ns: tuple[int, ...] = (14336,)) -> list[dict]:
    return [{"M": m, "K": k, "N": n, "dtype": "float16", **({"group_size": 128} if bits == 4 else {})} for n in ns]


# Each W4A16 bucket is timed on 4096 and 14336 columns: tuned on 14336 columns alone, the decode bucket's
# block_n 64 won by 1% on an H200 and cost the 4096-column case 14% (10.9 -> 12.4 us), and the M=16 and M=64
# buckets' choices ran 16-22% slower at 4096 columns than the hand-tuned ladder before them (the H200 bench of
# 2026-11-25 against 2026-11-21).
SEARCH_SPACE = [
    SearchSpace("w4", "quant_matmul.w4a16", {"m<=1": _w(4, 1, ns=(14336, 4096))},
                [_gemv(32, 128, 2, 8), _gemv(16, 128, 1, 16), _gemv(64, 128, 2, 8), _gemv(32, 256, 4, 8), _gemv(32, 128, 2, 16)]),
    SearchSpace("w4", "quant_matmul.w4a16", {"m<=16": _w(4, 16, ns=(14336, 4096))},
                [_dot(128, 16, 128, 4, 3, 2, planes=True), _dot(128, 16, 128, 4, 3, 4, planes=True), _dot(128, 16, 128, 4, 4, 2, planes=True),
                 _dot(64, 16, 128, 4, 3, 4, planes=True), _dot(64, 16, 128, 4, 3, 4)]),
    SearchSpace("w4", "quant_matmul.w4a16", {"m<=64": _w(4, 64, ns=(14336, 4096))},
                [_dot(64, 64, 128, 4, 3, 1), _dot(128, 64, 128, 4, 3, 1), _dot(128, 64, 128, 8, 3, 1), _dot(128, 64, 128, 8, 3, 1, planes=True)]),
    SearchSpace("w8", "quant_matmul.w8a16", {"m<=1": _w(8, 1)},
                [_gemv(16, 512, 2, 2), _gemv(16, 256, 2, 8), _gemv(8, 1024, 4, 2), _gemv(16, 512, 4, 2), _gemv(32, 512, 4, 2)]),
    SearchSpace("w8", "quant_matmul.w8a16", {"m<=16": _w(8, 16)},
                [_dot(64, 16, 128, 4, 3, 2), _dot(128, 16, 128, 4, 3, 2), _dot(64, 16, 128, 4, 2, 4)]),
    SearchSpace("w8", "quant_matmul.w8a16", {"m<=64": _w(8, 64)},
                [_dot(128, 64, 128, 8, 3, 1), _dot(64, 64, 128, 4, 3, 1), _dot(128, 64, 128, 4, 3, 1)]),
]  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Launchers: inputs already checked, settings explicit
# --------------------------------------------------------------------------------------------------


_LOCKS: dict[tuple[torch.device, int], torch.Tensor] = {}  # (device, stream) -> that stream's counters
_POOLS: dict[torch.device, object] = {}  # the counters' own memory pools (torch.cuda.MemPool), one per GPU


def _arrival_counters(n: int, device: torch.device) -> torch.Tensor:
    """At least n int32 counters at zero, for launches on the current stream. Kept across calls: _finish_tile
    leaves each one back at zero.

    One set per stream: one stream's launches run one after another, but two streams' launches may run at
    once, and two split launches counting on the same counters would each see the other's arrivals (a tile
    summed before all its partials are in). On a GPU they come from a memory pool of their own: the first
    call of a model compiled with mode="reduce-overhead" runs while torch.compile's CUDA graphs allocate from
    their private pool, and they refuse a tensor of that pool that outlives the call. A call made while a
    graph is being captured takes counters that exist already, those of the stream its warm-up ran on (the
    graph keeps their address, so it shares them with that stream's launches), or gets counters of its own,
    zeroed inside the graph."""
    stream = torch._C._cuda_getCurrentRawStream(device.index) if device.type == "cuda" else 0
    locks = _LOCKS.get((device, stream))
    if locks is not None and locks.numel() >= n:
        return locks
    if device.type != "cuda":
        locks = torch.zeros(max(n, 1024), dtype=torch.int32, device=device)
    elif torch.cuda.is_current_stream_capturing():  # pragma: no cover - GPU only: inside a capture
        # capture runs on a side stream: the counters the warm-up calls made on another stream serve the graph
        found = [t for (d, _), t in _LOCKS.items() if d == device and t.numel() >= n]
        return found[0] if found else torch.zeros(n, dtype=torch.int32, device=device)
    else:  # pragma: no cover - GPU only: outside any CUDA graph's pool
        pool = _POOLS.setdefault(device, torch.cuda.MemPool())
        with torch.cuda.use_mem_pool(pool, device):
            locks = torch.zeros(max(n, 1024), dtype=torch.int32, device=device)
    _LOCKS[(device, stream)] = locks
    return locks


def _split_k(tiles: int, k: int, block_k: int, programs_per_sm: int, device: Device) -> tuple[int, int]:
    """Split K until the grid has about programs_per_sm programs per SM: (n_splits, K per split)."""
    k_steps = cdiv(k, block_k)
    want = max(1, min(k_steps, cdiv(programs_per_sm * device.sms, tiles)))
    steps = cdiv(k_steps, want)
    return cdiv(k_steps, steps), steps * block_k


def _split_buffers(splits: int, tiles: int, x: torch.Tensor, m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The partial sums (n_splits, M, N) and the tiles' counters of a split launch; x stands in for both
    without a split."""
    if splits == 1:
        return x, x  # never touched: SPLIT is false
    return x.new_empty((splits, m, n), dtype=torch.float32), _arrival_counters(tiles, x.device)


def _precision(x_dtype: torch.dtype) -> str:
    """The float32 dot kernels' precision. For 16-bit activations tf32 is exact here: their 11 or 8
    significant bits fit in tf32's 11, and so do the decoded weights; float32 activations need "ieee"."""
    return "ieee" if x_dtype == torch.float32 else "tf32"


def _or_default(launch: Callable[..., torch.Tensor], bits: int, *args: object) -> torch.Tensor:
    """Launch with the given settings; if the GPU lacks the shared memory for them (a tuned tile plus a
    small group size's per-weight scales, say), fall back to default_config."""
    *rest, cfg = args
    try:
        return launch(*rest, cfg)
    except OutOfResources:  # pragma: no cover - GPU only: shared memory
        # the defaults, then with one stage (the least shared memory a tile of theirs needs)
        for fallback in (default_config(bits, rest[0].shape[0]), default_config(bits, rest[0].shape[0], num_stages=1)):
            if fallback != cfg:
                try:
                    return launch(*rest, fallback)
                except OutOfResources:
                    continue
        raise


def w8a16_launch(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor, cfg: GemvConfig | DotConfig) -> torch.Tensor:
    """y (M, N) = x (M, K) @ (w_int8 (N, K) * scales (N,)).T with the given settings."""
    (m, k), n = x.shape, w_int8.shape[0]
    # 16 weights per 16-byte load either way; words decode with fewer instructions than bytes
    words = k % 4 == 0 and w_int8.storage_offset() % 4 == 0
    w = w_int8.view(torch.int32) if words else w_int8  # (N, K // 4) or (N, K)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    even_k = k % cfg.block_k == 0
    if isinstance(cfg, GemvConfig):
        n_tiles = cdiv(n, cfg.block_n)
        splits, k_split = _split_k(n_tiles * m, k, cfg.block_k, cfg.programs_per_sm, device_of(x))
        part, locks = _split_buffers(splits, n_tiles * m, x, m, n)
        launch(_w8a16_gemv_kernel, (n_tiles, splits, m),
            x, w, scales, y, part, locks, m, n, k, x.stride(0), w.stride(0), y.stride(0), k_split,
            BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, WORDS=words, EVEN_K=even_k, SPLIT=splits > 1,
            num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        )  # fmt: skip
        return y
    n_tiles, m_tiles = cdiv(n, cfg.block_n), cdiv(m, cfg.block_m)
    splits, k_split = _split_k(n_tiles * m_tiles, k, cfg.block_k, cfg.programs_per_sm, device_of(x))
    part, locks = _split_buffers(splits, n_tiles * m_tiles, x, m, n)
    launch(_w8a16_dot_kernel, (n_tiles, splits, m_tiles),
        x, w, scales, y, part, locks, m, n, k, x.stride(0), w.stride(0), y.stride(0), k_split,
        BLOCK_N=cfg.block_n, BLOCK_M=cfg.block_m, BLOCK_K=cfg.block_k, WORDS=words, EVEN_K=even_k,
        DOT_16BIT=cfg.dot_16bit and x.dtype != torch.float32, PRECISION=_precision(x.dtype), SPLIT=splits > 1,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    return y


@dataclass(frozen=True)
class W4Plan:
    """One W4A16 signature's launch, worked out once: the split of K, the tiles the counters cover, the launch."""

    cfg: GemvConfig | DotConfig  # the settings it was made for (held, so that their id is not reused)
    splits: int
    tiles: int
    launch: LaunchPlan


def _w4a16_plan(
    x: torch.Tensor, words: torch.Tensor, scales: torch.Tensor, group_size: int, cfg: GemvConfig | DotConfig
) -> W4Plan:
    """Everything about a W4A16 launch that follows from the shapes, strides, dtype, GPU and settings."""
    (m, k), n = x.shape, words.shape[0]
    even_k = k % cfg.block_k == 0
    shared = dict(GROUP_SIZE=group_size, BLOCK_N=cfg.block_n, BLOCK_W=cfg.block_k // 8, EVEN_K=even_k,
                  num_warps=cfg.num_warps, num_stages=cfg.num_stages)  # fmt: skip
    if isinstance(cfg, GemvConfig):
        kernel, tiles_n, tiles_m, meta = _w4a16_gemv_kernel, cdiv(n, cfg.block_n), m, {}
    else:
        kernel, tiles_n, tiles_m = _w4a16_dot_kernel, cdiv(n, cfg.block_n), cdiv(m, cfg.block_m)
        meta = dict(BLOCK_M=cfg.block_m, DOT_16BIT=cfg.dot_16bit and x.dtype != torch.float32,
                    PRECISION=_precision(x.dtype), PLANES=cfg.planes)  # fmt: skip
    tiles = tiles_n * tiles_m
    splits, k_split = _split_k(tiles, k, cfg.block_k, cfg.programs_per_sm, device_of(x))
    scalars = (m, n, k, x.stride(0), words.stride(0), scales.stride(0), n, k_split)  # y's row stride is n
    meta = {**shared, **meta, "SPLIT": splits > 1}
    return W4Plan(cfg, splits, tiles, LaunchPlan(kernel, (tiles_n, splits, tiles_m), scalars, meta))


# A decode step makes the same W4A16 calls thousands of times: each signature's plan is made once, and a call
# only allocates its outputs and launches, 6-7 us of host time less on an H200's host and 8-13 on an H100's
# (results/<gpu>/fused_projections.md). The key holds everything the plan was worked out from.
_W4A16_PLANS: dict[tuple, W4Plan] = {}


def w4a16_launch(
    x: torch.Tensor, words: torch.Tensor, scales: torch.Tensor, group_size: int, cfg: GemvConfig | DotConfig
) -> torch.Tensor:
    """y (M, N) = x (M, K) @ W.T from words (N, K // 8) int32 and scales (N, K // G), with the given settings."""
    (m, k), n = x.shape, words.shape[0]
    key = (m, n, k, x.stride(0), words.stride(0), scales.stride(0), group_size, x.dtype, x.get_device(), id(cfg))
    plan = _W4A16_PLANS.get(key)
    if plan is None or plan.cfg is not cfg:
        if len(_W4A16_PLANS) >= 4096:  # pragma: no cover - a long run of new shapes: start over
            _W4A16_PLANS.clear()
        plan = _W4A16_PLANS[key] = _w4a16_plan(x, words, scales, group_size, cfg)
    y = x.new_empty((m, n))
    plan.launch(x, words, scales, y, *_split_buffers(plan.splits, plan.tiles, x, m, n))
    return y


# --------------------------------------------------------------------------------------------------
# Custom ops: the launchers as PyTorch operators (course/ops.py), so torch.compile and CUDA graphs take them whole
# --------------------------------------------------------------------------------------------------


OPS = OpLibrary(__file__)
# Both ops are opaque to torch.compile (traced=False): their split-K arrival counters live between calls, zero
# between launches, and a traced graph would take a copy of them rather than the counters themselves.

def _quant_fake(x: torch.Tensor, w: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return x.new_empty((x.shape[0], w.shape[0]))


@OPS.op("w8a16_matmul", "(Tensor x, Tensor w_int8, Tensor scales) -> Tensor", _quant_fake, traced=False)
def w8a16_op(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    return _or_default(w8a16_launch, 8, x, w_int8, scales, pick_config(8, x.shape[0], x))


def _w4a16_fake(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group_size: int) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return x.new_empty((x.shape[0], w_packed.shape[0]))


@OPS.op("w4a16_matmul", "(Tensor x, Tensor w_packed, Tensor scales, int group_size) -> Tensor", _w4a16_fake,
        traced=False)
def w4a16_op(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group_size: int) -> torch.Tensor:
    # Checked here, on the real tensor, rather than in w4a16_matmul: torch.compile traces the public call
    # with fake tensors, whose storage offset it does not follow.
    if w_packed.storage_offset() % 4:
        raise ValueError(f"w4a16_matmul: `w_packed` must start on a 4-byte boundary (the kernels read it as 32-bit words); "
                         "pass a freshly allocated tensor, e.g. w_packed.clone().")
    words = w_packed.view(torch.int32)  # (N, K // 8): the same bytes, read 8 codes at a time
    return _or_default(w4a16_launch, 4, x, words, scales, group_size, pick_config(4, x.shape[0], x))


# --------------------------------------------------------------------------------------------------
# Module: the public API
# --------------------------------------------------------------------------------------------------


def _check_w8a16_matmul(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> None:
    """The checks of `w8a16_matmul`: a TypeError or ValueError that says what to pass instead."""
    fn = "w8a16_matmul"
    check_tensor(fn, "x", x, ndim=2)
    check_tensor(fn, "w_int8", w_int8, ndim=2, dtypes=(torch.int8,))
    check_tensor(fn, "scales", scales, ndim=1)
    check_same(fn, "dtype", x=x, scales=scales)
    check_same(fn, "device", x=x, w_int8=w_int8, scales=scales)
    (m, k), n = x.shape, w_int8.shape[0]
    if w_int8.shape[1] != k:
        raise ValueError(f"{fn}: `w_int8` must be (N, K) with K = x.shape[1] = {k}, got shape {tuple(w_int8.shape)}.")
    if scales.shape[0] != n:
        raise ValueError(f"{fn}: `scales` must hold one scale per output channel, N = {n}; got {scales.shape[0]}.")
    if m == 0 or n == 0 or k == 0:
        raise ValueError(f"{fn}: M, N and K must be positive, got M={m}, N={n}, K={k}.")


_CHECKED_W8A16_MATMUL = CheckedOnce(_check_w8a16_matmul)


def w8a16_matmul(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """y = x @ (w_int8 * scales[:, None]).T, in x's dtype.

    x: (M, K) float32, float16 or bfloat16. w_int8: (N, K) int8. scales: (N,), x's dtype.
    All contiguous, on one device. Returns a new (M, N) tensor.
    """
    _CHECKED_W8A16_MATMUL(x, w_int8, scales)  # the checks, once per signature (CheckedOnce)
    return w8a16_op(x, w_int8, scales)


def _check_w4a16_matmul(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group_size: int) -> None:
    """The checks of `w4a16_matmul`: a TypeError or ValueError that says what to pass instead."""
    fn = "w4a16_matmul"
    check_tensor(fn, "x", x, ndim=2)
    check_tensor(fn, "w_packed", w_packed, ndim=2, dtypes=(torch.uint8,))
    check_tensor(fn, "scales", scales, ndim=2)
    check_same(fn, "dtype", x=x, scales=scales)
    check_same(fn, "device", x=x, w_packed=w_packed, scales=scales)
    (m, k), n = x.shape, w_packed.shape[0]
    if w_packed.shape[1] * 2 != k:
        raise ValueError(f"{fn}: `w_packed` must be (N, K // 2) with K = x.shape[1] = {k}, got shape {tuple(w_packed.shape)}.")
    if not isinstance(group_size, int) or group_size <= 0 or group_size % 8 or k % group_size:
        raise ValueError(f"{fn}: `group_size` must be a positive multiple of 8 that divides K = {k}, got {group_size!r}.")
    if scales.shape != (n, k // group_size):
        raise ValueError(f"{fn}: `scales` must be (N, K // group_size) = {(n, k // group_size)}, got shape {tuple(scales.shape)}.")
    if m == 0 or n == 0:
        raise ValueError(f"{fn}: M and N must be positive, got M={m}, N={n}.")


_CHECKED_W4A16_MATMUL = CheckedOnce(_check_w4a16_matmul)


def w4a16_matmul(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    """y = x @ W.T in x's dtype, with W[n, k] = (q[n, k] - 8) * scales[n, k // group_size].

    x: (M, K) float32, float16 or bfloat16. w_packed: (N, K // 2) uint8 holding q[n, 2j] in the low nibble
    of w_packed[n, j] and q[n, 2j + 1] in its high nibble. scales: (N, K // group_size), x's dtype.
    group_size: a multiple of 8 that divides K. All contiguous, on one device. Returns a new (M, N) tensor.
    """
    _CHECKED_W4A16_MATMUL(x, w_packed, scales, group_size)  # the checks, once per signature (CheckedOnce)
    return w4a16_op(x, w_packed, scales, group_size)
