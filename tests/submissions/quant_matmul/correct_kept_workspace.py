"""Honest: correct_minimal's kernels, but W4A16 writes its float32 sums into a workspace kept from call to call (a
module-level buffer, grown when a call needs more), which a second kernel rounds into y. The workspace holds the
last call's sums when a call begins, more bytes than prepare()'s allowance on some shapes, but every element a call
reads it wrote first: the replayer's check of carried memory (Part.setup_allowance) finds the result the same with
the workspace zeroed, and lets it pass."""

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
        acc += tl.dot(x.to(tl.float32), w.to(tl.float32), input_precision="ieee")  # (BLOCK_M, BLOCK_N)
    s = tl.load(s_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    y = acc * s[None, :]
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], y.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _w4_kernel(x_ptr, w_ptr, s_ptr, y_ptr, M, N, K, G,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    n_groups = K // G
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        kn_mask = (offs_n[None, :] < N) & (k[:, None] < K)
        byte = tl.load(w_ptr + offs_n[None, :] * (K // 2) + (k // 2)[:, None], mask=kn_mask, other=0)  # (BLOCK_K, BLOCK_N)
        q = tl.where((k % 2 == 0)[:, None], byte & 0xF, byte >> 4)  # even k: low nibble
        s = tl.load(s_ptr + offs_n[None, :] * n_groups + (k // G)[:, None], mask=kn_mask, other=0.0)
        w = (q.to(tl.float32) - 8.0) * s.to(tl.float32)
        acc += tl.dot(x.to(tl.float32), w, input_precision="ieee")
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def w8a16_matmul(x: torch.Tensor, w_int8: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    (m, k), n = x.shape, w_int8.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _w8_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))](
        x, w_int8, scales, y, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y


@triton.jit
def _round_kernel(ws_ptr, y_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(ws_ptr + offs, mask=offs < numel).to(y_ptr.dtype.element_ty), mask=offs < numel)


_WORKSPACE: dict[str, torch.Tensor] = {}


def _workspace(numel: int, device: torch.device) -> torch.Tensor:
    ws = _WORKSPACE.get("ws")
    if ws is None or ws.numel() < numel or ws.device != device:
        ws = _WORKSPACE["ws"] = torch.empty(numel, dtype=torch.float32, device=device)
    return ws


def w4a16_matmul(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    (m, k), n = x.shape, w_packed.shape[0]
    ws = _workspace(m * n, x.device)  # (M, N) float32 sums, rows contiguous
    _w4_kernel[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))](
        x, w_packed, scales, ws, m, n, k, group_size, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _round_kernel[(triton.cdiv(m * n, 256),)](ws, y, m * n, BLOCK=256)
    return y
