"""Issue 22, softmax: the solution (16-bit rows of 16385-32768 columns held as 32-bit words, 16 warps) against
the same kernel launched as before this change (PAIRS off, 32 warps), torch.softmax and a copy of the same
bytes, in one process. Medians of triton.testing.do_bench (L2 flushed between calls). JSON to argv[1], a
markdown table to argv[2]."""
import json, sys, time
import torch, triton
sys.path.insert(0, ".")
import solutions.fusion.kernels as K
from course.launch import cdiv
from triton.testing import do_bench

SHAPES = [(4096, 32000, torch.bfloat16), (1024, 32000, torch.bfloat16), (16384, 32000, torch.bfloat16),
          (4096, 24000, torch.bfloat16), (4096, 20000, torch.bfloat16), (4096, 32000, torch.float16),
          (4096, 32000, torch.float32), (8192, 8192, torch.bfloat16), (1024, 128256, torch.bfloat16)]


def before(x, y):
    n_rows, n_cols = x.shape
    bn = triton.next_power_of_2(n_cols)
    K._softmax_kernel[(n_rows,)](x, y, n_rows, n_cols, n_cols, n_cols, BLOCK_M=1, BLOCK_N=bn, SINGLE_TILE=True,
                                 PAIRS=False, num_warps=32)


def us(fn):
    return do_bench(fn, warmup=50, rep=400, return_mode="median") * 1e3


rows = []
for M, N, dt in SHAPES:
    torch.manual_seed(0)
    x = (torch.randn(M, N, device="cuda") * 4).to(dt)
    y = torch.empty_like(x)
    ref = torch.softmax(x.double(), -1)
    t = {"copy": us(lambda: y.copy_(x)), "solution": us(lambda: K.softmax(x)), "torch.softmax": us(lambda: torch.softmax(x, -1))}
    err = (K.softmax(x).double() - ref).abs().max().item()
    if N <= 32768 and N > 16384:
        t["before"] = us(lambda: before(x, y))
    _, _, warps, pairs = K.softmax_config(K.device_of(x), M, N)
    taken = pairs and x.dtype == torch.bfloat16 and N % 2 == 0
    for k, v in t.items():
        rows.append({"shape": [M, N], "dtype": str(dt).replace("torch.", ""), "what": k, "us": round(v, 2),
                     "pct_copy": round(100 * t["copy"] / v, 1), "max_abs_err": err if k == "solution" else None,
                     "pairs": taken if k == "solution" else None})
meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/softmax_pairs_bench.py OUT.json OUT.md"}
json.dump({"meta": meta, "rows": rows}, open(sys.argv[1], "w"), indent=1)
by = {}
for r in rows:
    by.setdefault((tuple(r["shape"]), r["dtype"]), {})[r["what"]] = r
lines = [f"# Softmax, 16-bit rows held as 32-bit words: {meta['gpu']}", "",
         f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}; `{meta['command']}`. "
         "Median of triton.testing.do_bench (L2 flushed); % of copy = copy time / kernel time for the same bytes. "
         "`before`: the same kernel launched as before this change (PAIRS off, 32 warps).", "",
         "| shape | dtype | copy us | solution us | % of copy | before: % of copy | solution / before | torch.softmax % of copy | words |",
         "|---|---|---:|---:|---:|---:|---:|---:|---|"]
for (shape, dt), d in by.items():
    s, b = d["solution"], d.get("before")
    lines.append(f"| {shape[0]}x{shape[1]} | {dt} | {d['copy']['us']:.1f} | {s['us']:.1f} | {s['pct_copy']:.1f}% | "
                 + (f"{b['pct_copy']:.1f}% | {b['us'] / s['us']:.2f}x" if b else "- | -")
                 + f" | {d['torch.softmax']['pct_copy']:.1f}% | {'yes' if s['pairs'] else 'no'} |")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
