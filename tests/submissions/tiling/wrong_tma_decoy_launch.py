"""Wrong (TMA bonus): `matmul_tma` launches a descriptor kernel on a small decoy, so that a kernel with descriptors
is seen to run, and returns the pointer kernel's product. Right on every case, and not the kernel the bonus grades."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * K + ks[None, :], mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * N + offs_n[None, :], mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _matmul_tma_kernel(a_desc, b_desc, c_desc, BLOCK: tl.constexpr):
    c_desc.store([0, 0], tl.dot(a_desc.load([0, 0]), b_desc.load([0, 0]), input_precision="ieee").to(c_desc.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    _mm_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BLOCK=32, BLOCK_K=16)
    return c


def matmul_tma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    decoy = a.new_zeros((16, 16))  # BUG (a cheat): the descriptor kernel runs on this, not on a and b
    out = a.new_empty((16, 16))
    descs = [TensorDescriptor.from_tensor(t, [16, 16]) for t in (decoy, decoy, out)]
    _matmul_tma_kernel[(1,)](*descs, BLOCK=16)
    return matmul(a, b)
