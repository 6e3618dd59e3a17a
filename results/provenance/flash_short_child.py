"""One flash attention forward, run a few times, for Nsight Compute (flash_short_ncu.sh): WHO = solution or cudnn,
S (tokens), CAUSAL (0 or 1), at 4 x 32 heads, d = 128, bf16."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
import torch  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.nn.functional import scaled_dot_product_attention as sdpa  # noqa: E402

s, causal = int(os.environ["S"]), os.environ["CAUSAL"] == "1"
q, k, v = (torch.randn(4, 32, s, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
if os.environ["WHO"] == "solution":
    from solutions.flash_attention import kernels as fa

    def fn() -> torch.Tensor:
        return fa.flash_attention(q, k, v, causal=causal)
else:
    def fn() -> torch.Tensor:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return sdpa(q, k, v, is_causal=causal)
for _ in range(4):
    fn()
torch.cuda.synchronize()
