"""Wrong: the store's mask guards the end of c (flat index < M * N), not the right edge of the tile.

In a tile that reaches past column N, the columns past the edge wrap into the next row of c: the zeros
computed there overwrite the first columns of the next row, already written by another program. The
end of the buffer is safe, so nothing crashes; shapes whose N is a multiple of the tile (or fits in one
tile) pass.
"""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK):
        ks = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * K + ks[None, :], mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + offs_n[None, :], mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    flat = offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptr + flat, acc.to(c_ptr.dtype.element_ty), mask=flat < M * N)  # BUG: not the tile's edge


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    _mm_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BLOCK=32)
    return c
