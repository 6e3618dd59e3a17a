"""Wrong: launches a kernel of its own for show, but the product comes from torch.matmul."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(a_ptr):
    tl.load(a_ptr)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _touch_kernel[(1,)](a)
    return torch.matmul(a, b)  # BUG: cuBLAS does the work
