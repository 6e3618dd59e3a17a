"""An honest split-K submission written the way vLLM's AWQ and GPTQ Triton kernels are: a fixed count of 16 splits
(whatever K), each storing its float32 partial tile in a partials buffer made by `torch.zeros`, then a reduce kernel
that sums the splits and applies the scale. Dequantization is in registers, in the K loop. The zeros are a fill by a
number, not counted against the write budget (red team 25: counted, they pushed this file past it at 7 cases and lost
70/70)."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 16, 32, 32
SPLIT_K = 16


@triton.jit
def _w8_split_kernel(x_ptr, w_ptr, p_ptr, M, N, K, K_PER_SPLIT,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    split = tl.program_id(2)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    k_lo = split * K_PER_SPLIT
    for k0 in range(k_lo, k_lo + K_PER_SPLIT, BLOCK_K):
        k = k0 + offs_k
        km = (k < K) & (k < k_lo + K_PER_SPLIT)
        x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & km[None, :], other=0.0)
        w = tl.load(w_ptr + offs_n[None, :] * K + k[:, None], mask=(offs_n[None, :] < N) & km[:, None], other=0)
        acc += tl.dot(x.to(tl.float32), w.to(tl.float32), input_precision="ieee")
    tl.store(p_ptr + split * M * N + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _w4_split_kernel(x_ptr, w_ptr, s_ptr, p_ptr, M, N, K, G, K_PER_SPLIT,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    split = tl.program_id(2)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    k_lo = split * K_PER_SPLIT
    for k0 in range(k_lo, k_lo + K_PER_SPLIT, BLOCK_K):
        k = k0 + offs_k
        km = (k < K) & (k < k_lo + K_PER_SPLIT)
        x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & km[None, :], other=0.0)
        kn = (offs_n[None, :] < N) & km[:, None]
        byte = tl.load(w_ptr + offs_n[None, :] * (K // 2) + (k // 2)[:, None], mask=kn, other=0)
        q = tl.where((k % 2 == 0)[:, None], byte & 0xF, byte >> 4)
        s = tl.load(s_ptr + offs_n[None, :] * (K // G) + (k // G)[:, None], mask=kn, other=0.0)
        acc += tl.dot(x.to(tl.float32), (q.to(tl.float32) - 8.0) * s.to(tl.float32), input_precision="ieee")
    tl.store(p_ptr + split * M * N + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _reduce_kernel(p_ptr, s_ptr, y_ptr, MN, N, SPLITS: tl.constexpr, HAS_SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(SPLITS):
        acc += tl.load(p_ptr + s * MN + offs, mask=mask, other=0.0)
    if HAS_SCALE:
        acc = acc * tl.load(s_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


def _k_per_split(k):
    return triton.cdiv(triton.cdiv(k, SPLIT_K), BLOCK_K) * BLOCK_K


def _reduce(partials, scales, y, has_scale):
    m, n = y.shape
    _reduce_kernel[(triton.cdiv(m * n, 256),)](partials, scales, y, m * n, n, SPLITS=SPLIT_K, HAS_SCALE=has_scale,
                                               BLOCK=256)


def w8a16_matmul(x, w_int8, scales):
    (m, k), n = x.shape, w_int8.shape[0]
    partials = torch.zeros((SPLIT_K, m, n), dtype=torch.float32, device=x.device)
    _w8_split_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N), SPLIT_K)](
        x, w_int8, partials, m, n, k, _k_per_split(k), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _reduce(partials, scales, y, True)
    return y


def w4a16_matmul(x, w_packed, scales, group_size=128):
    (m, k), n = x.shape, w_packed.shape[0]
    partials = torch.zeros((SPLIT_K, m, n), dtype=torch.float32, device=x.device)
    _w4_split_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N), SPLIT_K)](
        x, w_packed, scales, partials, m, n, k, group_size, _k_per_split(k), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _reduce(partials, scales, y, False)
    return y
