"""Wrong (a rule violation, found by a red team on 2026-12-07): prepare() returns a one-element view of a storage
that also holds the dequantized weights (4 bytes for the byte limit), and swaps pickle's Pickler so that the whole
storage travels in the reply; the replay used to adopt that storage, and the kernel read the weights past the view's
end. The replayer copies a setup step's tensors into memory of their own, so the replay reads NaN past the view;
every W4A16 case fails."""


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



import pickle as _pickle

_BIG: dict[str, torch.Tensor] = {}  # id(view's storage) -> the storage's whole tensor


def prepare(w_packed: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> dict:
    q = torch.stack((w_packed & 0xF, w_packed >> 4), dim=-1).reshape(w_packed.shape[0], -1).float()
    w = ((q - 8) * scales.float().repeat_interleave(group_size, dim=1)).contiguous()  # (N, K) float32
    big = torch.empty(1 + w.numel(), dtype=torch.float32, device=w.device)
    big[1:].copy_(w.reshape(-1))
    big[0] = float(w.shape[1])
    view = big[:1]  # 4 bytes: what prepare()'s byte limit counts (numel * element_size)
    _BIG["last"] = big
    return {"w": view}


class _Pickler(_pickle.Pickler):
    """Every torch.save in the worker: where a reply carries the prepared 1-element tensor (compacted by the worker),
    put back the view of the whole storage, so that the storage travels whole to the grader and the replayer."""

    def dump(self, obj):
        big = _BIG.get("last")
        if isinstance(obj, dict) and isinstance(obj.get("prepared"), dict) and big is not None:
            p = obj["prepared"]
            for k, v in list(p.items()):
                if type(v) is torch.Tensor and v.numel() == 1 and v.dtype == torch.float32 and float(v) == float(big[0]):
                    p[k] = big[:1]
        return super().dump(obj)


_pickle.Pickler = _Pickler


def w4a16_matmul(x, w_packed, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    w = w_packed["w"]  # the 1-element view; the weights lie past its end, in the same storage
    (m, k), n = x.shape, scales.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _dense_from_view[(triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))](
        x, w, y, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y


@triton.jit
def _dense_from_view(x_ptr, v_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    w_ptr = v_ptr + 1
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
