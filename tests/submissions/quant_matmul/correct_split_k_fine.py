"""Honest, with as much split-K as the write budget allows: one program for each block of 16 of K (the smallest
split the budget counts), each adding its partial product into a float32 buffer with atomics, then a kernel that
applies the per-channel scales (W8) and stores the output. It stores the output and one float32 partial sum of it
for every 16 of K (the smallest K of tl.dot): exactly the room the budget gives split-K, so it must pass every case.
"""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 16, 32, 16


@triton.jit
def _w8_split_kernel(x_ptr, w_ptr, acc_ptr, M, N, K,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.program_id(2) * BLOCK_K + tl.arange(0, BLOCK_K)
    x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
    w = tl.load(w_ptr + offs_n[None, :] * K + k[:, None], mask=(offs_n[None, :] < N) & (k[:, None] < K), other=0)
    part = tl.dot(x.to(tl.float32), w.to(tl.float32), input_precision="ieee")  # (BLOCK_M, BLOCK_N)
    out_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.atomic_add(acc_ptr + offs_m[:, None] * N + offs_n[None, :], part, mask=out_mask)


@triton.jit
def _w4_split_kernel(x_ptr, w_ptr, s_ptr, acc_ptr, M, N, K, G,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.program_id(2) * BLOCK_K + tl.arange(0, BLOCK_K)
    x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
    kn_mask = (offs_n[None, :] < N) & (k[:, None] < K)
    byte = tl.load(w_ptr + offs_n[None, :] * (K // 2) + (k // 2)[:, None], mask=kn_mask, other=0)  # (BLOCK_K, BLOCK_N)
    q = tl.where((k % 2 == 0)[:, None], byte & 0xF, byte >> 4)
    s = tl.load(s_ptr + offs_n[None, :] * (K // G) + (k // G)[:, None], mask=kn_mask, other=0.0).to(tl.float32)
    part = tl.dot(x.to(tl.float32), (q.to(tl.float32) - 8.0) * s, input_precision="ieee")
    out_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.atomic_add(acc_ptr + offs_m[:, None] * N + offs_n[None, :], part, mask=out_mask)


@triton.jit
def _finish_kernel(acc_ptr, s_ptr, y_ptr, M, N, SCALED: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.load(acc_ptr + row * N + offs_n, mask=offs_n < N, other=0.0)
    if SCALED:
        acc = acc * tl.load(s_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * N + offs_n, acc.to(y_ptr.dtype.element_ty), mask=offs_n < N)


def _finish(acc: torch.Tensor, scales: torch.Tensor, dtype: torch.dtype, scaled: bool) -> torch.Tensor:
    m, n = acc.shape
    y = torch.empty((m, n), dtype=dtype, device=acc.device)
    _finish_kernel[(m, triton.cdiv(n, BLOCK_N))](acc, scales, y, m, n, SCALED=scaled, BLOCK_N=BLOCK_N)
    return y


def w8a16_matmul(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    (m, k), n = x.shape, w_int8.shape[0]
    acc = torch.zeros((m, n), dtype=torch.float32, device=x.device)  # (M, N)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N), triton.cdiv(k, BLOCK_K))
    _w8_split_kernel[grid](x, w_int8, acc, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return _finish(acc, scales, x.dtype, True)


def w4a16_matmul(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    (m, k), n = x.shape, w_packed.shape[0]
    acc = torch.zeros((m, n), dtype=torch.float32, device=x.device)  # (M, N)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N), triton.cdiv(k, BLOCK_K))
    _w4_split_kernel[grid](x, w_packed, scales, acc, m, n, k, group_size, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                           BLOCK_K=BLOCK_K)
    return _finish(acc, scales, x.dtype, False)
