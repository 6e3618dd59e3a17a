"""Wrong (TMA bonus): the accumulator is zeroed once, before the persistent loop, instead of once per tile, so a
program's second tile starts from the sum of its first. Right wherever every program takes at most one tile: in its
own launch (4 programs, 32 x 32 tiles), and in the grader's (Part.kernel_probe: 16 x 32 tiles, two to a program)."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _matmul_tma_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_n = tl.cdiv(N, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # BUG: belongs inside the tile loop
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * num_pid_n, tl.num_programs(0)):
        pid_m, pid_n = tile // num_pid_n, tile % num_pid_n
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc, input_precision="ieee")
        left, right = tl.split(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)).permute(0, 2, 1))
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(c_desc.dtype))
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right.to(c_desc.dtype))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError("tiling.matmul")


def matmul_tma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    pad_k, pad_n = -k % 4, -n % 4  # float32 rows of a multiple of 16 bytes, as descriptors need
    a_p = a.new_zeros((m, k + pad_k))
    a_p[:, :k] = a
    b_p = b.new_zeros((k + pad_k, n + pad_n))
    b_p[:k, :n] = b
    c = torch.empty((m, n + pad_n), dtype=a.dtype, device=a.device)
    block, block_k = 32, 16
    tiles = triton.cdiv(m, block) * triton.cdiv(n + pad_n, block)
    _matmul_tma_kernel[(min(tiles, 4),)](TensorDescriptor.from_tensor(a_p, [block, block_k]),
                                         TensorDescriptor.from_tensor(b_p, [block_k, block]),
                                         TensorDescriptor.from_tensor(c, [block, block // 2]), m, n + pad_n, k + pad_k,
                                         BLOCK_M=block, BLOCK_N=block, BLOCK_K=block_k, GROUP_M=1)
    return c[:, :n].contiguous()
