import os, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa
dev = torch.device("cuda")
q, k, v = (torch.randn(4, 32, 4096, 128, device=dev, dtype=torch.bfloat16) for _ in range(3))
if os.environ["WHO"] == "solution":
    from solutions.flash_attention import kernels as fa
    fn = lambda: fa.flash_attention(q, k, v)
else:
    def fn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return sdpa(q, k, v)
for _ in range(4):
    fn()
torch.cuda.synchronize()
