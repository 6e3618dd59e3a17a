"""Misbehaves on 3-D inputs with rows of odd length: its kernel spins forever, each program waiting for an arrival
counter to reach one more than the number of programs (a split-K reduction counted wrong). On the CPU tier that is
(2, 5, 129), the first such case, and every case before it must pass; on the GPU tier (2, 3, 20001). On a GPU the
process is stuck waiting on the device, not in Python."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _row_kernel(x_ptr, w_ptr, y_ptr, count_ptr, n_cols, eps, BLOCK_N: tl.constexpr, WAIT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
    if WAIT:
        tl.atomic_add(count_ptr, 1)
        while tl.atomic_add(count_ptr, 0) < tl.num_programs(0) + 1:  # one more arrival than there are programs
            pass


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    y = torch.empty_like(x)
    n_cols = x.shape[-1]
    count = torch.zeros(1, dtype=torch.int32, device=x.device)
    wait = x.dim() == 3 and n_cols % 2 == 1
    _row_kernel[(x.numel() // n_cols,)](x, weight, y, count, n_cols, eps, BLOCK_N=triton.next_power_of_2(n_cols),
                                        WAIT=wait)
    return y
