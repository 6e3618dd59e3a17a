"""Assignment 04, tiling: a tiled matrix multiplication on the tensor cores.

    c = a @ b for a (M, K) and b (K, N): products summed in float32, c rounded once to the inputs' dtype

The handout is README.md beside this file. Fill in the region marked TODO; keep the signature, the
launch wrappers and the autotuning configurations as they are: the grader calls `matmul(a, b)`.
Grade yourself with `make grade` (or `python -m autograder grade tiling`).
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.env import interpreter_requested
from course.validate import check_same, check_tensor

# --------------------------------------------------------------------------------------------------
# The kernel
# --------------------------------------------------------------------------------------------------


@triton.jit
def _matmul_kernel(
    a_ptr,  # (M, K), rows contiguous
    b_ptr,  # (K, N), rows contiguous
    c_ptr,  # (M, N) output, rows contiguous, in the inputs' dtype
    M,
    N,
    K,
    stride_am,  # elements between consecutive rows of a
    stride_bk,  # elements between consecutive rows of b
    stride_cm,  # elements between consecutive rows of c
    BLOCK_M: tl.constexpr,  # rows of c per program
    BLOCK_N: tl.constexpr,  # columns of c per program
    BLOCK_K: tl.constexpr,  # step along K: a (BLOCK_M, BLOCK_K) tile of a meets a (BLOCK_K, BLOCK_N) tile of b
    GROUP_M: tl.constexpr,  # tile rows per group in the launch order, for L2 reuse
):
    """Program p computes one (BLOCK_M, BLOCK_N) tile of c, walking K in steps of BLOCK_K."""
    ### BEGIN SOLUTION tiling.matmul
    #> 1. Which tile: with num_pid_m = cdiv(M, BLOCK_M) and num_pid_n = cdiv(N, BLOCK_N) tiles per
    #>    column and per row of c, number the tiles in groups of GROUP_M tile rows: within a group, go
    #>    down a column of GROUP_M tiles before moving one tile right (the last group may be shorter).
    #>    Programs that run at the same time then share rows of a and columns of b in L2.
    #> 2. Offsets: rows offs_m (BLOCK_M,), columns offs_n (BLOCK_N,), offs_k = arange(BLOCK_K); pointers
    #>    to the first a tile (BLOCK_M, BLOCK_K) and the first b tile (BLOCK_K, BLOCK_N). Multiply row
    #>    indices by their stride in int64: row * stride can pass 2**31.
    #> 3. Accumulate in a float32 (BLOCK_M, BLOCK_N) tile over cdiv(K, BLOCK_K) steps. Mask the loads
    #>    (other=0.0) for rows past M, columns past N and, in the last step, k past K: zeros add
    #>    nothing to the dot products. Advance the a pointers by BLOCK_K, the b pointers by
    #>    BLOCK_K * stride_bk.
    #> 4. tl.dot(a, b, acc) adds a @ b into acc on the tensor cores. For float32 inputs pass
    #>    input_precision="tf32x3": Triton's default for float32 ("tf32") rounds the inputs to 10 bits
    #>    of mantissa, far less accurate than the float32 arithmetic the contract asks for.
    #> 5. Round acc once to c's dtype and store it, masked to rows < M and columns < N.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # Grouped order: GROUP_M tile rows form a group, walked column by column, so that the programs in
    # flight at one time read a few rows of a and a few columns of b, which stay in L2.
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)  # the last group may have fewer tile rows
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    offs_k = tl.arange(0, BLOCK_K)  # (BLOCK_K,)
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + offs_k[None, :]  # (BLOCK_M, BLOCK_K)
    b_ptrs = b_ptr + offs_k.to(tl.int64)[:, None] * stride_bk + offs_n[None, :]  # (BLOCK_K, BLOCK_N)
    mask_m = offs_m[:, None] < M
    mask_n = offs_n[None, :] < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # only the last step has k_left < BLOCK_K
        a = tl.load(a_ptrs, mask=mask_m & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & mask_n, other=0.0)
        if a_ptr.dtype.element_ty == tl.float32:
            # Three tf32 products (hi*hi + hi*lo + lo*hi) recover float32 accuracy on the tensor cores.
            acc = tl.dot(a, b, acc, input_precision="tf32x3")
        else:
            acc = tl.dot(a, b, acc)  # fp16 / bf16 products  # pragma: no cover - GPU tier only: 16-bit
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m & mask_n)
    ### END SOLUTION


# --------------------------------------------------------------------------------------------------
# Launch configurations
# --------------------------------------------------------------------------------------------------


def _config(block_m: int, block_n: int, block_k: int, stages: int, warps: int, group_m: int = 8) -> triton.Config:
    meta = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": group_m}
    return triton.Config(meta, num_stages=stages, num_warps=warps)


# Autotuned on the GPU, per (M, N, K) and dtype: Triton times each configuration once on the first call
# of a new shape and keeps the fastest. The lists are short because every entry costs a compilation.
# 16-bit inputs, from a sweep on an H200 (scripts/tune_tiling.py, results/h200/tune_tiling.json):
# 128 x 256 x 64 tiles, 8 warps, 3 stages won at every size from 1792 to 8192 (672 TFLOP/s at 4096^3,
# against 538 for the best 128 x 128); the smaller tiles are there for problems too small to fill the
# GPU's 132 SMs with 128 x 256 tiles.
CONFIGS_16BIT = [
    _config(128, 256, 64, 3, 8),
    _config(128, 128, 64, 3, 4),
    _config(64, 256, 64, 4, 4),
    _config(64, 128, 64, 4, 4),
]
# float32 tiles take twice the bytes, and tf32x3 three times the tensor-core work.
CONFIGS_FP32 = [
    _config(128, 128, 32, 3, 8),
    _config(64, 128, 32, 4, 4),
]
# The interpreter runs one program after another: small tiles, so that small cases still span
# several tiles and several steps along K.
INTERPRETER_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 2}

_matmul_16bit = triton.autotune(configs=CONFIGS_16BIT, key=["M", "N", "K"])(_matmul_kernel)
_matmul_fp32 = triton.autotune(configs=CONFIGS_FP32, key=["M", "N", "K"])(_matmul_kernel)

# Rows whose length (in elements) is not a multiple of this are copied into padded buffers first: with
# 16-byte-aligned rows and masks that change only every 16 elements, loads move 16 bytes at a time
# instead of one element (see _padded_copy).
ALIGN = 16


def _launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    """c = a @ b with the kernel, for contiguous 2-D tensors of agreeing shapes."""
    m, k = a.shape
    n = b.shape[1]
    args = (a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))
    if interpreter_requested():
        cfg = INTERPRETER_CONFIG
        grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
        _matmul_kernel[grid](*args, **cfg)
        return

    def grid(meta: dict) -> tuple[int]:  # pragma: no cover - GPU only: autotuning
        return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    kernel = _matmul_fp32 if a.dtype == torch.float32 else _matmul_16bit  # pragma: no cover - GPU only: autotuning
    kernel[grid](*args)  # pragma: no cover - GPU only: autotuning


# --------------------------------------------------------------------------------------------------
# Padding for shapes whose rows are not 16-byte aligned
# --------------------------------------------------------------------------------------------------


@triton.jit
def _copy_pad_kernel(  # pragma: no cover - GPU only: padding
    src_ptr,  # (R, C) source, rows contiguous
    dst_ptr,  # (R2, C2) destination, rows contiguous
    src_rows,
    src_cols,
    dst_rows,
    dst_cols,
    stride_src,
    stride_dst,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    """dst[i, j] = src[i, j] where src has that element, else 0: pads (dst larger) or crops (dst smaller)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    inside = (rows[:, None] < src_rows) & (cols[None, :] < src_cols)
    v = tl.load(src_ptr + rows.to(tl.int64)[:, None] * stride_src + cols[None, :], mask=inside, other=0)
    keep = (rows[:, None] < dst_rows) & (cols[None, :] < dst_cols)
    tl.store(dst_ptr + rows.to(tl.int64)[:, None] * stride_dst + cols[None, :], v, mask=keep)


def _padded_copy(src: torch.Tensor, rows: int, cols: int) -> torch.Tensor:  # pragma: no cover - GPU only: padding
    """A new contiguous (rows, cols) tensor holding src in its top-left corner and zeros elsewhere."""
    dst = torch.empty((rows, cols), dtype=src.dtype, device=src.device)
    block_r, block_c = 32, 128
    grid = (triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))
    _copy_pad_kernel[grid](
        src, dst, src.shape[0], src.shape[1], rows, cols, src.stride(0), dst.stride(0),
        BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4,
    )  # fmt: skip
    return dst


def _round_up(n: int, multiple: int) -> int:  # pragma: no cover - GPU only: padding
    return (n + multiple - 1) // multiple * multiple


def needs_padding(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the rows of a or b (K and N elements long) miss 16-element alignment, on a GPU.

    Such rows start at addresses that are not 16-byte aligned, and the K and N masks change at any
    element, so the kernel's loads fall back to one element at a time. Padding costs three copies
    (a, b in; c out), a few microseconds; it pays off several times over when K or N is like 1793.
    """
    k, n = b.shape
    return not interpreter_requested() and (k % ALIGN != 0 or n % ALIGN != 0)


def matmul_launch(a: torch.Tensor, b: torch.Tensor, pad: bool | None = None) -> torch.Tensor:
    """c = a @ b for contiguous 2-D a (M, K) and b (K, N); pad=None pads only where needs_padding says so."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    if m == 0 or n == 0:  # pragma: no cover - empty input, no launch
        return c
    if k == 0:  # pragma: no cover - K = 0, no launch
        return c.zero_()  # an empty sum
    if pad is None:  # pragma: no branch - only scripts/tune_tiling.py passes pad
        pad = needs_padding(a, b)
    if not pad:
        _launch(a, b, c)
        return c
    # Zero padding along K adds nothing to the dot products; the padded columns of c are cropped off.
    kp, np_ = _round_up(k, ALIGN), _round_up(n, ALIGN)  # pragma: no cover - GPU only: padding
    a_p = a if kp == k else _padded_copy(a, m, kp)  # (M, Kp)  # pragma: no cover - GPU only: padding
    b_p = b if (kp, np_) == (k, n) else _padded_copy(b, kp, np_)  # (Kp, Np)  # pragma: no cover - GPU only: padding
    if np_ == n:  # pragma: no cover - GPU only: padding
        _launch(a_p, b_p, c)
        return c
    c_p = torch.empty((m, np_), dtype=a.dtype, device=a.device)  # (M, Np)  # pragma: no cover - GPU only: padding
    _launch(a_p, b_p, c_p)  # pragma: no cover - GPU only: padding
    return _padded_copy(c_p, m, n)  # pragma: no cover - GPU only: padding


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b with float32 accumulation, returned in the inputs' dtype.

    a: (M, K), b: (K, N), both float32, float16 or bfloat16, the same dtype and device, contiguous.
    Returns a new (M, N) tensor. float32 inputs get float32 accuracy (three tf32 products per step).
    """
    check_tensor("matmul", "a", a, ndim=2)
    check_tensor("matmul", "b", b, ndim=2)
    check_same("matmul", "dtype", a=a, b=b)
    check_same("matmul", "device", a=a, b=b)
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"matmul: the inner dimensions must agree, but a is {tuple(a.shape)} and b is {tuple(b.shape)}: "
            f"a.shape[1] ({a.shape[1]}) must equal b.shape[0] ({b.shape[0]})."
        )
    return matmul_launch(a, b)
