"""Honest, and chatty: the call logs through `logging` (whose records read the caller's frame), warns
through `warnings` (which walks the stack to find who warned), asserts its assumptions, and keeps a
small constant table at module level that its kernel reads (forward only). None of it may cost a point:
the grader reads frames and keeps buffers' contents where honest code needs them."""

import logging
import warnings

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl

LOG = logging.getLogger("rmsnorm.honest")
LOG.addHandler(logging.StreamHandler())  # to the worker's log, never the grader's output
LOG.setLevel(logging.DEBUG)
ONE = tl.constexpr(1.0)
_SCALE = {}  # device -> a tensor of ones, made once and kept: memory the call reads but did not allocate


@triton.jit
def _row_kernel(x_ptr, w_ptr, one_ptr, y_ptr, n_cols, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32) * tl.load(one_ptr)
    rstd = ONE / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    assert x.shape[-1] == weight.shape[0], "weight must match the last dimension"
    n_cols = x.shape[-1]
    if n_cols > 4096:
        warnings.warn(f"a {n_cols}-column row is held in registers whole", stacklevel=2)
    LOG.debug("rmsnorm of %s, %s, eps=%g", tuple(x.shape), x.dtype, eps)
    one = _SCALE.get(x.device)
    if one is None:
        one = _SCALE[x.device] = torch.ones(1, dtype=torch.float32, device=x.device)
    y = torch.empty_like(x)
    _row_kernel[(x.numel() // n_cols,)](x, weight, one, y, n_cols, eps, BLOCK_N=triton.next_power_of_2(n_cols))
    LOG.info("launched %d programs", x.numel() // n_cols)
    return y
