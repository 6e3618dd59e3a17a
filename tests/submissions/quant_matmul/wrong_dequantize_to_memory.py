"""Wrong technique, right answer: dequantize-then-matmul, all in Triton. A kernel writes a chunk of the weights
widened to float32 into a buffer that is reused chunk after chunk (so no allocation is ever N x K), and a plain
tiled matmul multiplies by it. Every output is right; the assignment asks for the weights dequantized in the
matmul's K loop, and the grader counts what the kernels store: N x K floats, past the budget at every case of
the CPU tier but those with 40 rows, with the sentence that says so; and those fail with their part.
"""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

CHUNK_N, BLOCK_M, BLOCK_K = 16, 16, 32


@triton.jit
def _dequantize_w8_kernel(w_ptr, s_ptr, dense_ptr, n0, N, K, CHUNK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = n0 + tl.arange(0, CHUNK_N)
    k = tl.program_id(0) * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = (rows[:, None] < N) & (k[None, :] < K)
    w = tl.load(w_ptr + rows[:, None] * K + k[None, :], mask=mask, other=0).to(tl.float32)
    s = tl.load(s_ptr + rows, mask=rows < N, other=0.0).to(tl.float32)
    tl.store(dense_ptr + (rows - n0)[:, None] * K + k[None, :], w * s[:, None], mask=mask)


@triton.jit
def _dequantize_w4_kernel(w_ptr, s_ptr, dense_ptr, n0, N, K, G, CHUNK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = n0 + tl.arange(0, CHUNK_N)
    k = tl.program_id(0) * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = (rows[:, None] < N) & (k[None, :] < K)
    byte = tl.load(w_ptr + rows[:, None] * (K // 2) + (k // 2)[None, :], mask=mask, other=0)
    q = tl.where((k % 2 == 0)[None, :], byte & 0xF, byte >> 4)
    s = tl.load(s_ptr + rows[:, None] * (K // G) + (k // G)[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(dense_ptr + (rows - n0)[:, None] * K + k[None, :], (q.to(tl.float32) - 8.0) * s, mask=mask)


@triton.jit
def _matmul_chunk_kernel(x_ptr, dense_ptr, y_ptr, n0, M, N, K,
                         CHUNK_N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = tl.arange(0, CHUNK_N)
    acc = tl.zeros([BLOCK_M, CHUNK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        w_mask = ((n0 + rows)[None, :] < N) & (k[:, None] < K)
        w = tl.load(dense_ptr + rows[None, :] * K + k[:, None], mask=w_mask, other=0.0)
        acc += tl.dot(x.to(tl.float32), w, input_precision="ieee")
    tl.store(y_ptr + offs_m[:, None] * N + (n0 + rows)[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & ((n0 + rows)[None, :] < N))


def _matmul_by_chunks(x: torch.Tensor, n: int, dequantize_chunk) -> torch.Tensor:
    m, k = x.shape
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    dense = torch.empty((CHUNK_N, k), dtype=torch.float32, device=x.device)  # (CHUNK_N, K), reused
    for n0 in range(0, n, CHUNK_N):
        dequantize_chunk(dense, n0)
        _matmul_chunk_kernel[(triton.cdiv(m, BLOCK_M),)](x, dense, y, n0, m, n, k, CHUNK_N=CHUNK_N, BLOCK_M=BLOCK_M,
                                                         BLOCK_K=BLOCK_K)
    return y


def w8a16_matmul(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    (_, k), n = x.shape, w_int8.shape[0]
    grid = (triton.cdiv(k, BLOCK_K),)
    return _matmul_by_chunks(x, n, lambda dense, n0: _dequantize_w8_kernel[grid](
        w_int8, scales, dense, n0, n, k, CHUNK_N=CHUNK_N, BLOCK_K=BLOCK_K))


def w4a16_matmul(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    (_, k), n = x.shape, w_packed.shape[0]
    grid = (triton.cdiv(k, BLOCK_K),)
    return _matmul_by_chunks(x, n, lambda dense, n0: _dequantize_w4_kernel[grid](
        w_packed, scales, dense, n0, n, k, group_size, CHUNK_N=CHUNK_N, BLOCK_K=BLOCK_K))
