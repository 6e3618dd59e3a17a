"""Wrong technique, right answer: each operation its own kernel, as the written-out PyTorch runs them. GeLU stores
the tanh's argument and reads it back; softmax stores each row's exponentials with its maximum and sum, and a
second kernel divides. Every output is right; the assignment asks for fused kernels, and the grader counts what
the kernels store: twice the output, past the budget in every case but the smallest, with the sentence that says so (the smallest
fails with its part).
"""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _gelu_inner_kernel(x_ptr, u_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(u_ptr + offs, 0.7978845608028654 * (x + 0.044715 * x * x * x), mask=mask)


@triton.jit
def _gelu_outer_kernel(x_ptr, u_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0)
    tanh_u = 1.0 - 2.0 / (tl.exp(2.0 * u) + 1.0)
    tl.store(y_ptr + offs, (0.5 * x * (1.0 + tanh_u)).to(y_ptr.dtype.element_ty), mask=mask)


def gelu(x: torch.Tensor) -> torch.Tensor:
    u = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    y = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    _gelu_inner_kernel[grid](x, u, n, BLOCK=1024)
    _gelu_outer_kernel[grid](x, u, y, n, BLOCK=1024)
    return y


@triton.jit
def _softmax_exp_kernel(x_ptr, e_ptr, sum_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(e_ptr + row * n_cols + cols, e, mask=mask)
    tl.store(sum_ptr + row, tl.sum(e, axis=0))


@triton.jit
def _softmax_divide_kernel(e_ptr, sum_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    e = tl.load(e_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, (e / tl.load(sum_ptr + row)).to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_cols = x.shape[-1]
    rows = x.numel() // n_cols
    e = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    sums = torch.empty(rows, dtype=torch.float32, device=x.device)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    _softmax_exp_kernel[(rows,)](x, e, sums, n_cols, BLOCK_N=block)
    _softmax_divide_kernel[(rows,)](e, sums, y, n_cols, BLOCK_N=block)
    return y
