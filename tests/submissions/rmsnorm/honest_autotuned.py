"""Honest, shaped differently: the row walked in tiles whose width and warp count Triton's autotuner
picks per row length (forward only). It must pass every forward case and every defence."""

import time

import course.env  # noqa: F401  (before triton)
import torch
import triton
import triton.language as tl

from course.env import interpreter_requested


def _host_clock_bench(kernel_call, quantiles):  # noqa: ANN001, ANN202
    """Triton's benchmarker needs a GPU; under the CPU interpreter, time configs with the host clock.
    Like Triton's, it summarizes with torch ops: the autotuner's own work is not the graded call's."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        kernel_call()
        times.append((time.perf_counter() - t0) * 1e3)
    return [float(v) for v in torch.quantile(torch.tensor(times), torch.tensor(quantiles)).tolist()]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_N": 64}, num_warps=1),
        triton.Config({"BLOCK_N": 256}, num_warps=2),
        triton.Config({"BLOCK_N": 1024}, num_warps=4),
    ],
    key=["n_cols"],
    do_bench=_host_clock_bench if interpreter_requested() else None,
)
@triton.jit
def _tiled_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + start + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    _tiled_kernel[(x.numel() // n_cols,)](x, weight, y, n_cols, eps)
    return y
