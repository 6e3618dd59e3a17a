"""A/B on a GPU: the solution's single-tile forward against the same kernel with cache-eviction hints."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from autograder import timing
from course.loader import load_kernels

k = load_kernels("rmsnorm", "solutions")


@triton.jit
def _fwd_evict(x_ptr, w_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    rows = rows.to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = row_mask[:, None] & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy="evict_first")


dev = torch.device("cuda")
for m, n in [(4096, 4096), (16384, 4096), (4096, 8192), (16384, 8192), (8192, 14336), (65536, 512)]:
    xs = [torch.randn(m, n, device=dev, dtype=torch.bfloat16) for _ in range(2)]
    w = torch.randn(n, device=dev, dtype=torch.bfloat16)
    y = torch.empty_like(xs[0])
    bm, bn, nw = k._fwd_config(m, n)
    grid = (triton.cdiv(m, bm),)

    def base(i):
        k._rmsnorm_fwd_kernel[grid](xs[i], w, y, xs[i], m, n, n, n, 1e-6, BLOCK_M=bm, BLOCK_N=bn, SINGLE_TILE=True, STORE_RSTD=False, num_warps=nw)

    def evict(i):
        _fwd_evict[grid](xs[i], w, y, m, n, n, n, 1e-6, BLOCK_M=bm, BLOCK_N=bn, num_warps=nw)

    t = timing.time_interleaved({"solution": base, "evict hints": evict}, 2, 40, dev)
    gb = lambda ms: (2 * m * n + n) * 2 / (ms * 1e-3) / 1e9
    print(f"{m}x{n} cfg={bm},{bn},{nw}: " + ", ".join(f"{name} {timing.median(v)*1e3:.1f}us {gb(timing.median(v)):.0f} GB/s" for name, v in t.items()), flush=True)
