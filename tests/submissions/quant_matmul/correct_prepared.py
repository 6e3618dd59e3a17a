"""An honest submission with a prepare() step: the weights are re-laid offline as (K // 2, N) bytes and
the scales as (K // G, N), so that the channels a program owns sit side by side in memory. The graded
call receives prepare()'s dict in place of w_packed. w4a16_matmul still takes a plain w_packed too."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 16, 32, 32


@triton.jit
def _w8_kernel(x_ptr, w_ptr, s_ptr, y_ptr, M, N, K,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_n[None, :] * K + k[:, None], mask=(offs_n[None, :] < N) & (k[:, None] < K), other=0)
        acc += tl.dot(x.to(tl.float32), w.to(tl.float32), input_precision="ieee")
    s = tl.load(s_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], (acc * s[None, :]).to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _w4_kernel(x_ptr, w_ptr, s_ptr, y_ptr, M, N, K, G, stride_wn, stride_wb, stride_sn, stride_sg,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        kn_mask = (offs_n[None, :] < N) & (k[:, None] < K)
        byte = tl.load(w_ptr + offs_n[None, :] * stride_wn + (k // 2)[:, None] * stride_wb, mask=kn_mask, other=0)
        q = tl.where((k % 2 == 0)[:, None], byte & 0xF, byte >> 4)
        s = tl.load(s_ptr + offs_n[None, :] * stride_sn + (k // G)[:, None] * stride_sg, mask=kn_mask, other=0.0)
        acc += tl.dot(x.to(tl.float32), (q.to(tl.float32) - 8.0) * s.to(tl.float32), input_precision="ieee")
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def w8a16_matmul(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    (m, k), n = x.shape, w_int8.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _w8_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))](
        x, w_int8, scales, y, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y


def prepare(w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> dict[str, torch.Tensor]:
    return {"w_t": w_packed.t().contiguous(), "scales_t": scales.t().contiguous()}  # (K // 2, N), (K // G, N)


def w4a16_matmul(x, w_packed, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    if isinstance(w_packed, dict):  # prepare()'s layout: byte (j, n) at j * N + n
        w, s = w_packed["w_t"], w_packed["scales_t"]
        n = w.shape[1]
        strides = (1, n, 1, n)
    else:
        w, s = w_packed, scales
        n = w.shape[0]
        strides = (w.shape[1], 1, s.shape[1], 1)
    m, k = x.shape
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _w4_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))](
        x, w, s, y, m, n, k, group_size, *strides, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y
