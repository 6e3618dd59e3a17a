"""Correct but slow (TMA bonus): two accumulators, one for the even steps along K and one for the odd, added at the
end, in the persistent loop flattened with tl.range(..., flatten=True), as the solution's is. The idea is the
student's: two independent chains of products should overlap better than one. On sm_90 ptxas does the opposite: the
two accumulators' reset for the next tile sits inside the flattened loop, so ptxas makes every wgmma wait for the
one before (its note C7515, which Triton does not print). It passes every case; on a GPU with wgmma its speed case
is slow, and the grader's diagnosis (autograder/diagnose.py) must say that ptxas serialized its products.

Graded on an H100 (2026-12-06, results/h100/grade_tiling_slow_tma_serialized.json): every case passed, and its speed
cases ran 0.52x cuBLAS at 4096^3 (346 us against the solution's 1.00x), 0.25-0.33 of 5 points each, with the diagnosis
naming the serialized products. Without flatten=True the same loop is not serialized (tests/test_diagnose.py).
"""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _matmul_tma_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pairs = tl.cdiv(tl.cdiv(K, BLOCK_K), 2)  # steps along K, two at a time (the descriptor reads zeros past K)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * num_pid_n, tl.num_programs(0), flatten=True):
        pid_m, pid_n = tile // num_pid_n, tile % num_pid_n
        even = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        odd = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for p in range(0, pairs):
            k0 = 2 * p * BLOCK_K
            a0 = a_desc.load([pid_m * BLOCK_M, k0])
            a1 = a_desc.load([pid_m * BLOCK_M, k0 + BLOCK_K])
            if a_desc.dtype == tl.float32:
                even = tl.dot(a0, b_desc.load([k0, pid_n * BLOCK_N]), even, input_precision="ieee")
                odd = tl.dot(a1, b_desc.load([k0 + BLOCK_K, pid_n * BLOCK_N]), odd, input_precision="ieee")
            else:
                even = tl.dot(a0, b_desc.load([k0, pid_n * BLOCK_N]), even)
                odd = tl.dot(a1, b_desc.load([k0 + BLOCK_K, pid_n * BLOCK_N]), odd)
        acc = even + odd
        left, right = tl.split(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)).permute(0, 2, 1))
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(c_desc.dtype))
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right.to(c_desc.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError("tiling.matmul")


def matmul_tma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    multiple = 16 // a.element_size()  # rows of a multiple of 16 bytes, as descriptors need
    pad_k, pad_n = -k % multiple, -n % multiple
    a_p = a.new_zeros((m, k + pad_k))
    a_p[:, :k] = a
    b_p = b.new_zeros((k + pad_k, n + pad_n))
    b_p[:k, :n] = b
    c = torch.empty((m, n + pad_n), dtype=a.dtype, device=a.device)
    gpu = a.is_cuda and a.element_size() == 2
    bm, bn, bk, stages, warps = (128, 128, 64, 3, 8) if gpu else (32, 32, 16, 2, 4)
    programs = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 4
    tiles = triton.cdiv(m, bm) * triton.cdiv(n + pad_n, bn)
    _matmul_tma_kernel[(min(tiles, programs),)](
        TensorDescriptor.from_tensor(a_p, [bm, bk]), TensorDescriptor.from_tensor(b_p, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn // 2]), m, n + pad_n, k + pad_k,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=1, num_stages=stages, num_warps=warps,
    )  # fmt: skip
    return c[:, :n].contiguous()
