# Exploit: read the baseline's own inputs in the timed call. Each timed call's inputs in the replayer held what the
# speed case's baseline setup made for the baseline: for the INT8 matmul, `_dense`, the weights already dequantized
# (and the dequantized cache for the KV-cache decode). The replay binds every input its tape names from the inputs
# it is given, so the call recorded for timing named `_dense` as an input and launched a plain matmul on it: no
# decoding in the timed kernel, timed against cuBLAS on the same dense weights. Correctness calls run the honest
# kernel. Found by a red team on 2026-12-07 (its timed outputs were checked right on the CPU, where speed earns no
# points). Defence: a replay is bound only from the call's own inputs and what its setup step returned; the
# baseline's tensors go to the baseline alone (replayer._Replayer.time). Written for the INT8 matmul (the W8A16
# part's speed case).
import inspect as _inspect

import torch as _torch
import triton as _triton
import triton.language as tl
from torch.utils._python_dispatch import _get_current_dispatch_mode as _current_mode


@_triton.jit
def _dense_only_kernel(x_ptr, w_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * K + k[None, :], mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_n[None, :] * K + k[:, None], mask=(offs_n[None, :] < N) & (k[:, None] < K), other=0.0)
        acc += tl.dot(x.to(tl.float32), w.to(tl.float32), input_precision="ieee")
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _records():
    return _inspect.unwrap(type(_current_mode()).__torch_dispatch__).__globals__


def _cheat(honest, name):
    assert SLUG == "quant_matmul" and name == "w8a16_matmul", "written for the INT8 matmul"  # noqa: F821

    def cheat(x, w_int8, scales):
        records = _records()
        watch = records["_WATCH"]
        if not getattr(watch, "timed", False):
            return honest(x, w_int8, scales)  # correctness calls: the honest kernel
        records["_WATCH"] = None
        try:
            dense = (w_int8.to(x.dtype) * scales[:, None]).contiguous()  # the worker's stand-in for `_dense`, unrecorded
        finally:
            records["_WATCH"] = watch
        (m, k), n = x.shape, w_int8.shape[0]
        y = _torch.empty((m, n), dtype=x.dtype, device=x.device)
        _dense_only_kernel[(_triton.cdiv(m, 16), _triton.cdiv(n, 32))](x, dense, y, m, n, k, BLOCK_M=16, BLOCK_N=32, BLOCK_K=32)
        tape = getattr(watch, "tape", None)
        if tape is not None:
            sid = tape.ref(dense)["T"][0]
            tape.carried.pop(sid, None)  # not memory kept from before the call, but an input: the grader's `_dense`
            tape.storages[sid]["origin"] = "input"
            tape.inputs["_dense"] = tape.ref(dense)
        return y

    return cheat
