"""Wrong on the GPU tier only: gate * up is formed in the input dtype (rounded to bf16 or fp16) before the
activation multiplies it. The algebra is right, so every float32 case passes; the extra rounding fails bf16 and fp16."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(gate_ptr + offs, mask=mask, other=0.0)
    u = tl.load(up_ptr + offs, mask=mask, other=0.0)
    product = g * u  # BUG: rounded to the input dtype
    gf = g.to(tl.float32)
    out = product.to(tl.float32) / (1.0 + tl.exp(-gf))
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(gate)
    n = gate.numel()
    _kernel[(triton.cdiv(n, 256),)](gate, up, out, n, BLOCK=256)
    return out
