"""Wrong (found by a red team on 2026-12-07): an idle kernel, and the transpose done by PyTorch under a view op's
name: `aten._unsafe_view.out(x.t(), ..., out=out)` copies into `out`. The policy allows `_unsafe_view` (a view), but its
`.out` overload writes the tensor it is given; the replay refuses every overload that writes a tensor besides `self`."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(x_ptr):
    tl.load(x_ptr)


def transpose(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty((x.shape[1], x.shape[0]), dtype=x.dtype, device=x.device)
    _touch_kernel[(1,)](x)
    torch.ops.aten._unsafe_view.out(x.t(), [x.shape[1], x.shape[0]], out=out)  # BUG: PyTorch does the work
    return out
