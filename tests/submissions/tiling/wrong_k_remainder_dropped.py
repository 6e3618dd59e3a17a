"""Wrong: the loop runs K // BLOCK_K full steps and has no K mask, so the last K % BLOCK_K products
are never added. Right whenever K is a multiple of 16."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for step in range(0, K // BLOCK_K):  # BUG: drops the last K % BLOCK_K
        ks = step * BLOCK_K + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * K + ks[None, :], mask=offs_m[:, None] < M, other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + offs_n[None, :], mask=offs_n[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    _mm_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BLOCK=32, BLOCK_K=16)
    return c
