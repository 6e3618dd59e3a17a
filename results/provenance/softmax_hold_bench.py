"""The held-prefix softmax for long bf16 rows against the solution, torch.softmax and a copy of the same bytes."""
import json, sys, time
import torch, triton
sys.path.insert(0, "results/provenance"); sys.path.insert(0, ".")
from softmax_hold_kernels import sm_hold
import solutions.fusion.kernels as K
from triton.testing import do_bench

def us(fn):
    return do_bench(fn, warmup=50, rep=400, return_mode="median") * 1e3

SHAPES = [(1024, 128256), (512, 128256), (4096, 128256), (4096, 65536 + 2), (2048, 40000), (256, 262144)]
SETTINGS = [(65536, 4096, 32), (65536, 2048, 32), (65536, 8192, 32), (65536, 4096, 16), (32768, 4096, 16), (32768, 2048, 16), (32768, 4096, 8)]
rows = []
for M, N in SHAPES:
    torch.manual_seed(0)
    x = (torch.randn(M, N, device="cuda") * 4).to(torch.bfloat16)
    y = torch.empty_like(x)
    ref = torch.softmax(x.double(), -1)
    t_copy = us(lambda: y.copy_(x))
    r = {"shape": [M, N], "copy": t_copy, "solution": us(lambda: K.softmax(x)), "torch.softmax": us(lambda: torch.softmax(x, -1))}
    for hold, tile, w in SETTINGS:
        if hold >= N:
            continue
        try:
            sm_hold[(M,)](x, y, M, N, N, N, HOLD=hold, TILE=tile, num_warps=w)
            err = (y.double() - ref).abs().max().item()
            r[f"hold{hold // 1024}K t{tile} w{w}"] = us(lambda: sm_hold[(M,)](x, y, M, N, N, N, HOLD=hold, TILE=tile, num_warps=w))
            r[f"err hold{hold // 1024}K t{tile} w{w}"] = err
        except Exception as e:
            r[f"hold{hold // 1024}K t{tile} w{w}"] = repr(e)[:100]
    rows.append(r)
meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__, "date": time.strftime("%Y-%m-%d")}
json.dump({"meta": meta, "rows": rows}, open(sys.argv[1], "w"), indent=1)
print(meta)
for r in rows:
    c = r["copy"]
    print(r["shape"], " ".join(f"{k}={100 * c / v:.1f}%" for k, v in r.items() if isinstance(v, float) and not k.startswith(("err", "copy"))))
    print("   max err", max(v for k, v in r.items() if k.startswith("err")) if any(k.startswith("err") for k in r) else None)
