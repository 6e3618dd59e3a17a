"""The W4A16 call planned once per signature (course.launch.LaunchPlan) against the launcher before it, in one
process, and the eager decode step with separate and fused projections (issue 20).

    python results/provenance/w4a16_plan_ab.py OUT BEFORE_KERNELS_PY

BEFORE_KERNELS_PY is solutions/quant_matmul/kernels.py of the commit before (5abdd3a); both versions share this
tree's course/ (course.launch.launch is the same in both). Host time per call: 7 rounds in turn, each the mean of
200 queued calls; best and median. The decode steps: back_to_back_ms of 50 steps, 3 rounds in turn."""
import json, statistics, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch, torch.nn.functional as F
import llama_block_bench as lbb
from autograder.timing import host_overhead_us
from course.loader import load_kernels, load_module
from course.results import Sections, run_meta

out, before_path = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
run = Sections(out / "w4a16_plan_ab.json", run_meta("w4a16_plan_ab"))
new, old = load_kernels("quant_matmul", "solutions"), load_module(before_path, "quant_matmul_before")
dev, bf = torch.device("cuda"), torch.bfloat16


def host() -> list[dict]:
    rows = []
    for m, n, k in ((1, 14336, 4096), (1, 4096, 4096), (1, 6144, 4096), (16, 14336, 4096), (16, 6144, 4096)):
        x = torch.randn(m, k, device=dev, dtype=bf)
        wp = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
        sc = torch.randn(n, k // 128, device=dev, dtype=bf)
        dense = torch.randn(n, k, device=dev, dtype=bf)
        assert torch.equal(new.w4a16_matmul(x, wp, sc, 128), old.w4a16_matmul(x, wp, sc, 128))
        calls = {"before": lambda: old.w4a16_matmul(x, wp, sc, 128), "planned": lambda: new.w4a16_matmul(x, wp, sc, 128),
                 "F.linear": lambda: F.linear(x, dense)}
        got = {name: [] for name in calls}
        for _ in range(7):
            for name, f in calls.items():
                got[name].append(host_overhead_us(f, calls=200, warmup=20))
        row = {"M": m, "N": n, "K": k, **{f"{name}_best_us": min(v) for name, v in got.items()},
               **{f"{name}_median_us": statistics.median(v) for name, v in got.items()}}
        rows.append(row)
        print(f"host M={m:2d} N={n:5d} before {row['before_best_us']:6.1f} ({row['before_median_us']:6.1f})  planned "
              f"{row['planned_best_us']:6.1f} ({row['planned_median_us']:6.1f})  F.linear {row['F.linear_best_us']:6.1f}", flush=True)
    return rows


def eager_decode() -> list[dict]:
    b = lbb.Bench(False, "solutions", run)
    W4F = (*lbb.ALL_W4, lbb.FUSED)
    plans = [("eager", (), "eager", False), ("eager, fused", (lbb.FUSED,), "eager", False),
             ("course W4A16", lbb.ALL_W4, "eager", False), ("course W4A16, fused", W4F, "eager", False)]
    kernels_before = {**b.kernels, "quant_matmul": old}
    rows = []
    for rnd in range(3):
        for batch in (1, 4, 8, 16):
            rows += [{**r, "round": rnd, "launcher": "planned"} for r in b.time_plans("eager_decode", plans, batch, b.kv, True)]
            b.kernels, saved = kernels_before, b.kernels
            try:
                rows += [{**r, "round": rnd, "launcher": "before"}
                         for r in b.time_plans("eager_decode before", plans[2:], batch, b.kv, True)]
            finally:
                b.kernels = saved
    return rows


with torch.inference_mode():
    run.run("host", host)
    run.run("eager_decode", eager_decode)
rows = run.results.get("eager_decode") or []
table = {}
for r in rows:
    table.setdefault((r["batch"], r["impl"], r["launcher"]), []).append(r["ms"] * 1e3)
print("\n| batch | block | launcher | best us | median us |\n|---:|---|---|---:|---:|")
for (batch, impl, launcher), v in sorted(table.items()):
    print(f"| {batch} | {impl} | {launcher} | {min(v):.1f} | {statistics.median(v):.1f} |")
