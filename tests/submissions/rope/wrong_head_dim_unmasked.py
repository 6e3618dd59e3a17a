"""Wrong: no mask at the head-dimension edge. When D/2 is not a power of two the tile's extra lanes read the
other half of the row and write past it: into the next row, and past the last row of the tensor."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _row_kernel(x_ptr, cos_ptr, sin_ptr, y_ptr, seq_len, half, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # (b*H + h) * S + s
    pos = row % seq_len
    i = tl.arange(0, BLOCK_D)  # BUG: lanes i >= half are never masked off
    x1 = tl.load(x_ptr + row * 2 * half + i).to(tl.float32)
    x2 = tl.load(x_ptr + row * 2 * half + half + i).to(tl.float32)
    c = tl.load(cos_ptr + pos * half + i)
    s = tl.load(sin_ptr + pos * half + i)
    tl.store(y_ptr + row * 2 * half + i, (x1 * c - x2 * s).to(y_ptr.dtype.element_ty))
    tl.store(y_ptr + row * 2 * half + half + i, (x2 * c + x1 * s).to(y_ptr.dtype.element_ty))


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    half = x.shape[-1] // 2
    _row_kernel[(x.numel() // x.shape[-1],)](x, cos, sin, y, x.shape[2], half, BLOCK_D=triton.next_power_of_2(half))
    return y
