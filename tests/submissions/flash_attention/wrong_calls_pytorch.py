"""Wrong: computes attention with PyTorch's SDPA and launches a Triton kernel only to copy the result."""

import course.env  # noqa: F401
import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def flash_attention(q, k, v, causal=False, scale=None):
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=q.shape[1] != k.shape[1])
    out = torch.empty_like(q)
    _copy_kernel[(triton.cdiv(out.numel(), 1024),)](ref, out, out.numel(), BLOCK=1024)
    return out
