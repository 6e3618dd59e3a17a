"""Where a W4A16 public call's host time goes on a GPU's host, layer by layer, and the eager decode step with
separate and fused projections (issue 20). Run from the repo root: python results/provenance/w4a16_host_layers.py OUT"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch, torch.nn.functional as F
import llama_block_bench as lbb
from autograder.timing import host_overhead_us
from course import launch as L
from course.loader import load_kernels
from course.results import Sections, run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
timer = lambda f: host_overhead_us(f, calls=200, reps=7, warmup=20)
qm, rn = load_kernels("quant_matmul", "solutions"), load_kernels("rmsnorm", "solutions")
dev, bf = torch.device("cuda"), torch.bfloat16
rows = []
with torch.inference_mode():
    for m, n, k in ((1, 14336, 4096), (1, 4096, 4096), (16, 14336, 4096)):
        x = torch.randn(m, k, device=dev, dtype=bf)
        wp = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
        sc = torch.randn(n, k // 128, device=dev, dtype=bf)
        dense = torch.randn(n, k, device=dev, dtype=bf)
        words = wp.view(torch.int32)
        cfg = qm.pick_config(4, m, x)
        for _ in range(5):
            qm.w4a16_matmul(x, wp, sc, 128)
        launches = lbb.captured_launches(lambda: qm.w4a16_matmul(x, wp, sc, 128))
        kern, grid, args, kw = launches[0]
        ident = id(kern)
        bound = next(iter(L._BOUND[ident][1].values())) if ident in L._BOUND else None
        stream, gpu = L._GPU["stream"], L._GPU["device"]
        def run_bound():
            bound.run(grid[0], grid[1], grid[2], stream(gpu()), bound.function, bound.metadata, None, None, None, *args, *bound.tail)
        layers = {
            "public w4a16_matmul": lambda: qm.w4a16_matmul(x, wp, sc, 128),
            "CourseOp w4a16_op": lambda: qm.w4a16_op(x, wp, sc, 128),
            "registered op (dispatcher)": lambda: qm.w4a16_op.overload(x, wp, sc, 128),
            "impl": lambda: qm.w4a16_op.impl(x, wp, sc, 128),
            "w4a16_launch(cfg)": lambda: qm.w4a16_launch(x, words, sc, 128, cfg),
            "course.launch.launch": lambda: L.launch(kern, grid, *args, **kw),
            "compiled run alone": run_bound,
            "kernel[grid] (Triton)": lambda: kern[grid](*args, **kw),
            "CheckedOnce": lambda: qm._CHECKED_W4A16_MATMUL(x, wp, sc, 128),
            "torch.empty (m, n)": lambda: torch.empty((m, n), dtype=bf, device=dev),
            "F.linear": lambda: F.linear(x, dense),
        }
        for name, f in layers.items():
            us = timer(f)
            rows.append({"op": f"w4a16 M={m} N={n}", "layer": name, "us": us, "splits": grid[1] if len(grid) > 1 else 1})
            print(f"M={m:2d} N={n:5d} {name:28s} {us:7.2f} us", flush=True)
    xr, wr = torch.randn(16, 4096, device=dev, dtype=bf), torch.randn(4096, device=dev, dtype=bf)
    for name, f in {"public rmsnorm": lambda: rn.rmsnorm(xr, wr), "F.rms_norm": lambda: F.rms_norm(xr, (4096,), wr, 1e-6)}.items():
        us = timer(f); rows.append({"op": "rmsnorm 16x4096", "layer": name, "us": us}); print(f"{name:28s} {us:7.2f} us", flush=True)
    run = Sections(out / "llama_block.json", run_meta("w4a16_host_layers"), merge=True)
    b = lbb.Bench(False, "solutions", run)
    plans = [("eager", (), "eager", False), ("course W4A16", lbb.ALL_W4, "eager", False),
             ("eager, fused", (lbb.FUSED,), "eager", False), ("course W4A16, fused", (*lbb.ALL_W4, lbb.FUSED), "eager", False)]
    for rnd in range(2):
        run.run(f"eager_decode_{rnd}", lambda: [r for batch in (1, 4, 16) for r in b.time_plans("eager_decode", plans, batch, b.kv, True)])
(out / "host_layers.json").write_text(json.dumps({"meta": run_meta("w4a16_host_layers"), "rows": rows}, indent=1))
