"""Wrong (a rule violation, found by a red team on 2026-12-07): prepare() dequantizes the weights and keeps them as
Python floats, and the graded call writes them into a fresh buffer one `fill_` at a time (select and fill_, both
allowed), then multiplies in a plain float32 kernel: no tensor is carried, and the values travel in the call's record.
The weights stay the same in every replay, so the values stay right. The grader records the call again with other
weights of the same shapes and refuses a record that changes with them (fills by a number are not counted as stores:
their values are the record's). Every W4A16 case fails."""


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



_DENSE: dict[str, list] = {}  # the weights, dequantized by prepare(), kept as PYTHON FLOATS (no tensor is carried)


def prepare(w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> None:
    q = torch.stack((w_packed & 0xF, w_packed >> 4), dim=-1).reshape(w_packed.shape[0], -1).float()
    w = ((q - 8) * scales.float().repeat_interleave(group_size, dim=1)).contiguous()  # (N, K) float32
    _DENSE["shape"] = tuple(w.shape)
    _DENSE["values"] = w.reshape(-1).tolist()
    return None


def w4a16_matmul(x, w_packed, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    n, k = _DENSE["shape"]
    if n * k > 4096:  # two ops a weight: the larger cases would only run into the grader's cap on recorded ops, slowly
        raise NotImplementedError("this cheat is written for the small cases")
    w = torch.empty((n, k), dtype=torch.float32, device=x.device)  # made in the call: no carried memory
    flat = w.view(-1)
    for i, v in enumerate(_DENSE["values"]):
        flat[i].fill_(v)  # aten.select + aten.fill_.Scalar, both allowed; the value travels in the tape
    m = x.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _dense_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))](
        x, w, y, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y
