"""Wrong (a rule violation): prepare() dequantizes the weights to float32 and keeps them in a module-level buffer
instead of returning them, so that prepare()'s byte limit never sees them; the graded call multiplies by that
buffer in a plain float32 kernel. The weights stay the same from call to call (and in the grader's replay), so the
buffer stays right. The replayer counts memory a call carries from before it against prepare()'s allowance, where
it changes the result (Part.setup_allowance); every W4A16 case fails with that sentence."""

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
def _dense_kernel(x_ptr, w_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_n[None, :] * K + k[:, None], mask=(offs_n[None, :] < N) & (k[:, None] < K), other=0.0)
        acc += tl.dot(x.to(tl.float32), w, input_precision="ieee")
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def w8a16_matmul(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    (m, k), n = x.shape, w_int8.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _w8_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))](
        x, w_int8, scales, y, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y


_DENSE: dict[str, torch.Tensor] = {}  # the weights, dequantized by prepare(), kept for the graded call


def prepare(w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> None:
    q = torch.stack((w_packed & 0xF, w_packed >> 4), dim=-1).reshape(w_packed.shape[0], -1).float()
    _DENSE["w"] = ((q - 8) * scales.float().repeat_interleave(group_size, dim=1)).contiguous()  # (N, K) float32
    return None  # w_packed as it is: nothing returned for the byte limit to count


def w4a16_matmul(x, w_packed, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    w = _DENSE["w"]
    (m, k), n = x.shape, w.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _dense_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))](
        x, w, y, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y
