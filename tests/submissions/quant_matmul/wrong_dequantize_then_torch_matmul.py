"""Wrong (a rule violation): a Triton kernel dequantizes the whole weight matrix into memory, and
torch.matmul does the product. The answer is right; the grader refuses it because the graded call
computes with PyTorch (aten.mm), and because it reads 16 bits a weight, it could never be fast."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _dequant_w4_kernel(w_ptr, s_ptr, out_ptr, N, K, G, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # flat index n * K + k
    mask = offs < N * K
    n, k = offs // K, offs % K
    byte = tl.load(w_ptr + n * (K // 2) + k // 2, mask=mask, other=0)
    q = tl.where(k % 2 == 0, byte & 0xF, byte >> 4)
    s = tl.load(s_ptr + n * (K // G) + k // G, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, ((q.to(tl.float32) - 8.0) * s).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _dequant_w8_kernel(w_ptr, s_ptr, out_ptr, N, K, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N * K
    w = tl.load(w_ptr + offs, mask=mask, other=0).to(tl.float32)
    s = tl.load(s_ptr + offs // K, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (w * s).to(out_ptr.dtype.element_ty), mask=mask)


def w8a16_matmul(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    n, k = w_int8.shape
    w = torch.empty((n, k), dtype=x.dtype, device=x.device)
    _dequant_w8_kernel[(triton.cdiv(n * k, BLOCK),)](w_int8, scales, w, n, k, BLOCK=BLOCK)
    return torch.matmul(x, w.t())


def w4a16_matmul(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    n, k = w_packed.shape[0], w_packed.shape[1] * 2
    w = torch.empty((n, k), dtype=x.dtype, device=x.device)
    _dequant_w4_kernel[(triton.cdiv(n * k, BLOCK),)](w_packed, scales, w, n, k, group_size, BLOCK=BLOCK)
    return torch.matmul(x, w.t())
