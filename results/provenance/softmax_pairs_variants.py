"""Issue 22, softmax over 32000-column rows: the solution against single-tile variants that keep the row in
registers as 32-bit words (two bf16 each), so that two programs fit on an SM. Prints a table; JSON to argv[1]."""
import json, sys, time
import torch, triton
sys.path.insert(0, "results/provenance")
sys.path.insert(0, ".")
from softmax_pairs_kernels import VARIANTS
from solutions.fusion.kernels import softmax_forward
from triton.testing import do_bench

dev = torch.device("cuda")
SHAPES = [(4096, 32000), (1024, 32000), (16384, 32000), (4096, 24000), (4096, 16000), (8192, 8192)]
res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
       "date": time.strftime("%Y-%m-%d"), "rows": []}


def bench(fn):
    return do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e3  # us


for (M, N) in SHAPES:
    torch.manual_seed(0)
    x = torch.randn(M, N, device=dev, dtype=torch.bfloat16) * 4
    ref = torch.softmax(x.float(), -1)
    y = torch.empty_like(x)
    t_copy = bench(lambda: y.copy_(x))
    gbs = lambda t: 2 * x.numel() * 2 / (t * 1e-6) / 1e9
    rows = [("copy", t_copy, 0.0, None)]
    t = bench(lambda: softmax_forward(x))
    rows.append(("solution", t, (softmax_forward(x).float() - ref).abs().max().item(), None))
    t = bench(lambda: torch.softmax(x, -1))
    rows.append(("torch.softmax", t, 0.0, None))
    bn = triton.next_power_of_2(N)
    for name in ("f32", "narrow", "pairs2", "pairs3"):
        for w in (8, 16, 32):
            k = VARIANTS[name]
            words = name.startswith("pairs")
            args = (x, y, M, N // 2 if words else N, N // 2 if words else N, N // 2 if words else N)
            try:
                k[(M,)](*args, BLOCK_N=bn, num_warps=w)
                err = (y.float() - ref).abs().max().item()
                t = bench(lambda: k[(M,)](*args, BLOCK_N=bn, num_warps=w))
                c = k.cache[0] if hasattr(k, "cache") else None
                regs = None
                try:
                    regs = list(k.device_caches[0][0].values())[-1].n_regs
                except Exception:
                    pass
                rows.append((f"{name} w{w}", t, err, regs))
            except Exception as e:
                rows.append((f"{name} w{w}", float("nan"), float("nan"), repr(e)[:80]))
    for (v, t, err, regs) in rows:
        r = {"shape": [M, N], "variant": v, "us": round(t, 2), "pct_copy": round(100 * t_copy / t, 1),
             "gbs": round(gbs(t)), "max_err": err, "regs": regs}
        res["rows"].append(r)
json.dump(res, open(sys.argv[1], "w"), indent=1)
print(res["gpu"], res["torch"], res["triton"])
print(f"{'shape':>12} {'variant':>14} {'us':>8} {'%copy':>6} {'err':>8} regs")
for r in res["rows"]:
    print(f"{r['shape'][0]:>5}x{r['shape'][1]:<6} {r['variant']:>14} {r['us']:8.1f} {r['pct_copy']:6.1f} {r['max_err']:8.2g} {r['regs']}")
