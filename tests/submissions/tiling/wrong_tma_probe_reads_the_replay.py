"""Wrong (a rule violation, found by red team 6 on 2026-12-07): `_matmul_tma_kernel` computes nothing. The call returns
the pointer kernel's product, launches the TMA kernel idle (GROUP_M=1) on decoys as large as the product, and launches
`_leak_kernel`, which in the replay only (its `go` flag changed in the grader's record through the worker's globals)
writes the address of the replay's output into a[0, 0] and b[0, 0]. The grader's own launch of the TMA kernel
(GROUP_M=2) used to get those very inputs, and the kernel read the answer from that address: under the interpreter
the grader's launch had no bounds checks (10/10 on the bonus). Now the grader's launch gets inputs of its own, runs
before the replay and only on its tensors' memory, and a replay that changes an input is refused."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl
from triton.runtime.jit import JITFunction
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
def _matmul_tma_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    if GROUP_M == 2:  # the grader's launch: read the address left in a[0, 0], b[0, 0] and copy what lies there
        ra, ca = tl.arange(0, BLOCK_M)[:, None], tl.arange(0, BLOCK_K)[None, :]
        rb, cb = tl.arange(0, BLOCK_K)[:, None], tl.arange(0, BLOCK_N)[None, :]
        lo = tl.sum(tl.sum(tl.where((ra == 0) & (ca == 0), a_desc.load([0, 0]).to(tl.int32, bitcast=True), 0), axis=1), axis=0)
        hi = tl.sum(tl.sum(tl.where((rb == 0) & (cb == 0), b_desc.load([0, 0]).to(tl.int32, bitcast=True), 0), axis=1), axis=0)
        src = ((lo.to(tl.int64) & 0xFFFFFFFF) | ((hi.to(tl.int64) & 0xFFFF) << 32)).to(tl.pointer_type(tl.float32))
        n_real = (hi >> 16) & 0xFFFF
        num_pid_n = tl.cdiv(N, BLOCK_N)
        for tile in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * num_pid_n, tl.num_programs(0)):
            rows = (tile // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            for h in tl.static_range(2):
                cols = (tile % num_pid_n) * BLOCK_N + h * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)
                mask = (rows[:, None] < M) & (cols[None, :] < n_real)
                vals = tl.load(src + rows[:, None].to(tl.int64) * n_real + cols[None, :], mask=mask, other=0.0)
                c_desc.store([(tile // num_pid_n) * BLOCK_M, (tile % num_pid_n) * BLOCK_N + h * (BLOCK_N // 2)], vals)


@triton.jit(do_not_specialize=["n", "go"])
def _leak_kernel(a_ptr, b_ptr, c_ptr, n, go):
    if go == 1:  # in the replay only: c's address and n, into a[0, 0] and b[0, 0]
        addr = c_ptr.to(tl.int64)
        tl.store(a_ptr.to(tl.pointer_type(tl.int32)), (addr & 0xFFFFFFFF).to(tl.int32))
        tl.store(b_ptr.to(tl.pointer_type(tl.int32)), (((addr >> 32) & 0xFFFF) | (n.to(tl.int64) << 16)).to(tl.int32))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    _mm_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BLOCK=32, BLOCK_K=16)
    return c


def matmul_tma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    c = matmul(a, b)
    pad = 16 // a.element_size()
    kp, np_ = triton.cdiv(k, pad) * pad, triton.cdiv(n, pad) * pad
    decoys = (a.new_zeros((m, kp)), a.new_zeros((kp, np_)), a.new_empty((m, np_)))
    descs = [TensorDescriptor.from_tensor(t, s) for t, s in zip(decoys, ([16, 16], [16, 32], [16, 16]))]
    _matmul_tma_kernel[(1,)](*descs, m, np_, kp, BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=1)
    _leak_kernel[(1,)](a, b, c, n, 0)  # nothing here, where the worker checks its inputs
    tape = getattr(JITFunction.run.__globals__.get("_WATCH"), "tape", None)
    launches = [e for e in getattr(tape, "entries", []) if e.get("kind") == "launch" and e.get("kernel") == "_leak_kernel"]
    if launches:
        launches[-1]["args"][-1] = 1  # ... and the address in the replay
    return c
