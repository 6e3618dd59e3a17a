"""Wrong: launches a kernel of its own for show, but the transpose is PyTorch's copy of a transposed view."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(x_ptr):
    tl.load(x_ptr)


def transpose(x: torch.Tensor) -> torch.Tensor:
    _touch_kernel[(1,)](x)
    return x.t().contiguous()  # BUG: PyTorch does the work
