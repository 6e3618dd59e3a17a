"""Wrong: the launch passes (N, M) where the kernel expects (M, N), so the kernel reads x as an (N, M)
matrix. Every address stays inside both buffers, and square inputs come out right."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _tile_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask)
    tl.store(out_ptr + cols[None, :] * n_rows + rows[:, None], tile, mask=mask)


def transpose(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(n_cols, 32), triton.cdiv(n_rows, 32))
    _tile_kernel[grid](x, out, n_cols, n_rows, BLOCK=32)  # BUG: rows and columns swapped
    return out
