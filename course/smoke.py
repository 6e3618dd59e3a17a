"""A known kernel (vector add) that proves Triton runs here: used by `python -m autograder doctor`."""

from __future__ import annotations

import course.env  # noqa: F401  (before triton)
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n  # the last block runs past n when n is not a multiple of BLOCK
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out


def check_vector_add() -> float:
    """Max |error| of the kernel against torch on 1000 (not a multiple of the block) random floats."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1000, generator=g).to(course.env.DEVICE)
    y = torch.randn(1000, generator=g).to(course.env.DEVICE)
    return (vector_add(x, y) - (x + y)).abs().max().item()


if __name__ == "__main__":
    print(f"max_error={check_vector_add():.3g} triton={triton.__version__} where={course.env.describe()}")
