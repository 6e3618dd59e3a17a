"""Wrong: sin with the wrong sign, a rotation by -theta (the backward's rotation, used in the forward)."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _row_kernel(x_ptr, cos_ptr, sin_ptr, y_ptr, seq_len, half, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # (b*H + h) * S + s
    pos = row % seq_len
    i = tl.arange(0, BLOCK_D)
    mask = i < half
    x1 = tl.load(x_ptr + row * 2 * half + i, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + row * 2 * half + half + i, mask=mask, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + pos * half + i, mask=mask, other=0.0)
    s = tl.load(sin_ptr + pos * half + i, mask=mask, other=0.0)
    tl.store(y_ptr + row * 2 * half + i, (x1 * c + x2 * s).to(y_ptr.dtype.element_ty), mask=mask)  # BUG
    tl.store(y_ptr + row * 2 * half + half + i, (x2 * c - x1 * s).to(y_ptr.dtype.element_ty), mask=mask)  # BUG


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    half = x.shape[-1] // 2
    _row_kernel[(x.numel() // x.shape[-1],)](x, cos, sin, y, x.shape[2], half, BLOCK_D=triton.next_power_of_2(half))
    return y
