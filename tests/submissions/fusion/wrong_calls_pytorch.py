"""Wrong: the GeLU is computed by PyTorch (F.gelu) after a token kernel launch; the softmax is honest."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

import torch.nn.functional as F


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def gelu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)  # a kernel launches...
    return F.gelu(y, approximate="tanh")  # BUG: ...but PyTorch computes the answer


@triton.jit
def _softmax_row_kernel(x_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    _softmax_row_kernel[(x.numel() // n_cols,)](x, y, n_cols, BLOCK_N=triton.next_power_of_2(n_cols))
    return y
