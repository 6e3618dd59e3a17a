"""The W4A16 dot kernel by nibble planes (solutions/quant_matmul/kernels.py, 2026-11-28) against the kernel it
replaced (the re-interleaving one, saved from git as .ab/quant_matmul_before.py with its configs.json) and
cuBLAS fp16/bf16 (F.linear on dense weights), each with its own launch settings (pick_config of its module),
through the launchers (w4a16_launch) so that both pay the same host path. For M = 128 and 256 it also times
the new kernel under a few candidate settings (CANDIDATES=0 skips them). Every output is checked against a float64 product of the
dequantized weights; the grader's timer (flush, interleaved, medians of 20).

    git show HEAD:solutions/quant_matmul/kernels.py > .ab/quant_matmul_before.py   # before the change
    git show HEAD:solutions/quant_matmul/configs.json > .ab/configs.json
    python results/provenance/w4a16_planes_ab.py OUT"""
import importlib.util, json, os, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
import torch.nn.functional as F
from autograder.timing import median, time_interleaved
from course.loader import load_kernels
from course.results import run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
new = load_kernels("quant_matmul", "solutions")
spec = importlib.util.spec_from_file_location("quant_matmul_before", ".ab/quant_matmul_before.py")
old = importlib.util.module_from_spec(spec); sys.modules[spec.name] = old; spec.loader.exec_module(old)
dev = torch.device("cuda")
DC = new.DotConfig
CANDIDATES = {128: [DC(128, 128, 128, 8, 3, 1, True), DC(128, 128, 128, 8, 2, 1, True), DC(128, 64, 128, 8, 3, 1, True),
                    DC(64, 128, 128, 4, 2, 1, True), DC(256, 128, 128, 8, 2, 1, True)],
              256: [DC(128, 128, 128, 8, 3, 1, True), DC(128, 128, 128, 8, 3, 2, True), DC(128, 64, 128, 8, 3, 1, True),
                    DC(64, 128, 128, 4, 2, 2, True), DC(256, 128, 128, 8, 2, 1, True)]}
rows = []
shapes = [(m, k, n) for m in (1, 2, 4, 8, 16, 32, 64, 128, 256) for k, n in ((4096, 14336), (14336, 4096), (4096, 4096))]
for dt in (torch.float16, torch.bfloat16):
    for m, k, n in shapes:
        if dt == torch.bfloat16 and m not in (4, 16, 64):
            continue
        torch.manual_seed(0)
        x = torch.randn(m, k, dtype=dt, device=dev)
        w_packed = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
        words = w_packed.view(torch.int32)
        scales = (torch.rand(n, k // 128, device=dev) * 0.01 + 0.001).to(dt)
        dense = torch.randn(n, k, dtype=dt, device=dev)
        q = torch.stack((w_packed & 15, w_packed >> 4), dim=-1).reshape(n, k).double() - 8
        exact = x.double() @ (q * scales.double().repeat_interleave(128, dim=1)).T
        size = exact.abs().mean().item()
        cfg_new, cfg_old = new.pick_config(4, m, x), old.pick_config(4, m, x)
        fns = {"before": lambda i: old.w4a16_launch(x, words, scales, 128, cfg_old),
               "after": lambda i: new.w4a16_launch(x, words, scales, 128, cfg_new),
               "cuBLAS": lambda i: F.linear(x, dense)}
        for c in CANDIDATES.get(m, []) if dt == torch.float16 and os.environ.get("CANDIDATES", "1") == "1" else []:
            fns[f"after {c.block_n}/{c.block_m}/w{c.num_warps}/s{c.num_stages}/p{c.programs_per_sm}"] = \
                lambda i, c=c: new.w4a16_launch(x, words, scales, 128, c)
        errors = {}
        for label, f in list(fns.items()):
            if label == "cuBLAS":
                continue
            got = f(0); torch.cuda.synchronize()
            errors[label] = float((got.double() - exact).abs().max()) / size
        times = time_interleaved(fns, 1, 20, dev)
        us = {lab: median(t) * 1e3 for lab, t in times.items()}
        row = {"M": m, "K": k, "N": n, "dtype": str(dt)[6:], "cfg_after": str(cfg_new), "cfg_before": str(cfg_old),
               "us": us, "error_over_mean_abs": errors}
        rows.append(row)
        print(json.dumps({"shape": f"{m}x{k}x{n}", "dtype": row["dtype"], **{k2: round(v, 2) for k2, v in us.items()},
                          "err_after": round(errors["after"], 5), "err_before": round(errors["before"], 5)}), flush=True)
        (out / "w4a16_planes_ab.json").write_text(json.dumps({"meta": run_meta("w4a16_planes_ab"), "rows": rows}, indent=1))
print("\n| M | K | N | dtype | before (us) | after (us) | after / before | cuBLAS (us) | after vs cuBLAS |")
print("|---:|---:|---:|---|---:|---:|---:|---:|---:|")
for r in rows:
    u = r["us"]
    print(f"| {r['M']} | {r['K']} | {r['N']} | {r['dtype']} | {u['before']:.1f} | {u['after']:.1f} | {u['before'] / u['after']:.2f}x | {u['cuBLAS']:.1f} | {u['cuBLAS'] / u['after']:.2f}x |")
