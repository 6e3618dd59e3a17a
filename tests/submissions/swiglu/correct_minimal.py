"""Correct and minimal: small blocks, silu written out as g / (1 + exp(-g)), forward only.

An honest submission shaped unlike the reference solution: it must pass every forward case.
"""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(gate_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    out = g / (1.0 + tl.exp(-g)) * u
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(gate)
    n = gate.numel()
    _kernel[(triton.cdiv(n, 256),)](gate, up, out, n, BLOCK=256)
    return out
