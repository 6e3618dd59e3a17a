"""On a GPU: rmsnorm_linear's tiles at M = 1, 4, 16 (K=4096, N=14336, bf16) against F.rms_norm + F.linear (cuBLAS)."""
import itertools, sys
sys.path.insert(0, ".")
import torch, triton
import torch.nn.functional as F
from course.loader import load_kernels
from autograder.timing import interleaved_ms
dev = torch.device("cuda")
K = load_kernels("rmsnorm", "solutions")
mod = sys.modules[K.rmsnorm_linear.__module__]
print("GPU", torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
Kd, N = 4096, 14336
w = torch.randn(N, Kd, device=dev, dtype=torch.bfloat16) * 0.02
nw = torch.rand(Kd, device=dev, dtype=torch.bfloat16) + 0.5


def run(x, bm, bn, bk, nw_, st):
    y = torch.empty((x.shape[0], N), dtype=x.dtype, device=dev)
    grid = (triton.cdiv(x.shape[0], bm), triton.cdiv(N, bn))
    mod._rmsnorm_linear_kernel[grid](x, nw, w, y, x.shape[0], N, Kd, x.stride(0), w.stride(0), y.stride(0), 1e-6,
                                     BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, DOT_PRECISION="tf32", num_warps=nw_, num_stages=st)
    return y


for m in [1, 16]:
    x = torch.randn(m, Kd, device=dev, dtype=torch.bfloat16)
    want = F.linear(F.rms_norm(x.float(), (Kd,), nw.float(), 1e-6).to(torch.bfloat16), w)
    fns = {"public": lambda: K.rmsnorm_linear(x, nw, w, 1e-6), "cuBLAS": lambda: F.linear(F.rms_norm(x, (Kd,), nw, 1e-6), w)}
    for bn, bk, nw_, st in itertools.product([16, 32, 64], [128, 256, 512], [4, 8], [3, 4, 5]):
        if (16 + bn) * bk * 2 * st > 200 * 1024 or (bn == 128 and bk == 512):
            continue
        y = run(x, 16, bn, bk, nw_, st)
        if not torch.allclose(y.float(), want.float(), rtol=2e-2, atol=2e-2):
            print("BAD", m, bn, bk, nw_, st, flush=True)
            continue
        fns[f"bn{bn}-bk{bk}-w{nw_}-s{st}"] = (lambda bn=bn, bk=bk, nw_=nw_, st=st: run(x, 16, bn, bk, nw_, st))
    us = {n: t * 1e3 for n, t in interleaved_ms(fns, 20, dev).items()}
    best = sorted((t, n) for n, t in us.items() if n.startswith("bn"))
    print(f"M={m}: public {us['public']:.1f} cuBLAS {us['cuBLAS']:.1f} | best " + "; ".join(f"{n} {t:.1f}" for t, n in best[:8])
          + f" | best/cuBLAS {us['cuBLAS'] / best[0][0]:.3f}x, {N * Kd * 2 / best[0][0] / 1e6:.2f} TB/s", flush=True)
    print("ALL", m, " ".join(f"{n}={t:.1f}" for n, t in sorted(us.items())), flush=True)
