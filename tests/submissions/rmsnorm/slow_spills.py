"""Correct but slow: one warp holds four whole rows in registers, so the compiler spills (forward only).

Each thread of the single warp keeps 4 x N/32 values of x, and as many of the weight, live across the
row's reduction: at N = 4096 that is far more than the 255 registers a thread may have. It passes every
forward case; on a GPU its speed case is slow, and the grader's diagnosis (autograder/diagnose.py) must
name the spills.

Four rows, not two: measured on an H100 (torch 2.11, triton 3.6, 2026-11-24, the rmsnorm speed case's shape),
two rows a program spill yet still reach 77% of the copy bandwidth (the L1 absorbs the spilled registers) and
earn full speed points, so there is no slow speed case to diagnose; four rows reach 16%, eight 11%, against
83% for the solution.
"""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

ROWS = 4  # rows per program: four times the registers of one row


@triton.jit
def _rows_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, eps, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)  # (ROWS, BLOCK_N)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)  # (ROWS,)
    tl.store(y_ptr + offsets, (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    n_rows = x.numel() // n_cols
    _rows_kernel[(triton.cdiv(n_rows, ROWS),)](x, weight, y, n_rows, n_cols, eps, ROWS=ROWS,
                                               BLOCK_N=triton.next_power_of_2(n_cols), num_warps=1)
    return y
