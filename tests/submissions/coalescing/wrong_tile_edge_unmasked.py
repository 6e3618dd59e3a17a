"""Wrong: the masks guard the end of the buffer (flat index < M * N), not the edges of the tile.

Past the last column of a row the load and the store do not stop: they wrap into the next row. The
store then writes the zeros loaded for rows past M over elements of the next output row that another
program has already written. Only the end of the buffer is safe, so nothing crashes; square shapes
that are multiples of the tile pass.
"""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _tile_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    src = rows[:, None] * n_cols + cols[None, :]
    dst = cols[None, :] * n_rows + rows[:, None]
    tile = tl.load(x_ptr + src, mask=src < n_rows * n_cols, other=0.0)  # BUG: not the tile's edges
    tl.store(out_ptr + dst, tile, mask=dst < n_rows * n_cols)  # BUG: likewise


def transpose(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    _tile_kernel[(triton.cdiv(n_rows, 32), triton.cdiv(n_cols, 32))](x, out, n_rows, n_cols, BLOCK=32)
    return out
