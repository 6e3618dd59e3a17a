"""One course kernel at an issue-22 shape, launched 4 times (ncu profiles the 3rd)."""
import os, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
case = os.environ["CASE"]
dev = torch.device("cuda")
if case.startswith("softmax"):
    from solutions.fusion import kernels as k
    m, n = {"softmax_vocab128k": (1024, 128256), "softmax_vocab32k": (4096, 32000)}[case]
    x = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
    fn = lambda: k.softmax(x)
elif case == "decode4096":
    from solutions.flash_attention import kernels as k
    q = torch.randn(8, 32, 1, 128, device=dev, dtype=torch.bfloat16)
    kk = torch.randn(8, 8, 4096, 128, device=dev, dtype=torch.bfloat16); v = torch.randn_like(kk)
    fn = lambda: k.flash_attention(q, kk, v)
else:
    from solutions.quant_matmul import kernels as k
    x = torch.randn(1, 4096, device=dev, dtype=torch.float16)
    wp = torch.randint(0, 256, (14336, 2048), dtype=torch.uint8, device=dev)
    s = torch.rand(14336, 32, device=dev, dtype=torch.float16) * 0.01
    fn = lambda: k.w4a16_matmul(x, wp, s, 128)
for _ in range(4):
    fn()
torch.cuda.synchronize()
