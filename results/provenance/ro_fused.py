"""Decode under torch.compile(mode="reduce-overhead") with separate and fused projections (issue 20): the PyTorch
block and the course W4A16 block, with Inductor's CUDA graph trees (the default) and without, batch 1-16, a
4096-token cache. Each batch is a section of its own, so a run cut short keeps the batches that finished.

    python results/provenance/ro_fused.py OUT [BATCH ...]"""
import statistics, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import llama_block_bench as lbb
from course.results import Sections, run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
batches = [int(b) for b in sys.argv[2:]] or [1, 4, 8, 16]
run = Sections(out / "ro_fused.json", run_meta("ro_fused " + " ".join(sys.argv[2:])), budget_s=540)
W4F = (*lbb.ALL_W4, lbb.FUSED)
plans = [
    ("compile RO", (), "reduce-overhead", False),
    ("course W4A16 compile RO, fused", W4F, "reduce-overhead", False),
    ("compile RO, no trees", (), "reduce-overhead, no trees", False),
    ("compile RO, no trees, fused", (lbb.FUSED,), "reduce-overhead, no trees", False),
    ("course W4A16 compile RO, no trees", lbb.ALL_W4, "reduce-overhead, no trees", False),
    ("course W4A16 compile RO, no trees, fused", W4F, "reduce-overhead, no trees", False),
]
torch._dynamo.config.cache_size_limit = 64  # as the bench sets it: one graph per plan and batch
with torch.inference_mode():
    b = lbb.Bench(False, "solutions", run)
    static = [b.rotary.cos, b.rotary.sin, b.rotary.cos_full, b.rotary.sin_full]
    for w in (b.weights, b.weights_w4, *b.fused.values()):
        static += [w.attn_norm, w.ffn_norm, *(t for lin in w.linears.values() for t in (lin.weight, lin.w_packed, lin.scales))]
    for t in static:
        if t is not None:
            torch._dynamo.mark_static_address(t)
    for batch in batches:
        run.run(f"batch_{batch}", lambda batch=batch: b.time_plans("ro", plans, batch, b.kv, True), need_s=60)
print("\n| batch | " + " | ".join(p[0] for p in plans) + " |\n|---:|" + "---:|" * len(plans))
for batch in batches:
    got = {r["impl"]: r["ms"] * 1e3 for r in run.results.get(f"batch_{batch}") or []}
    print(f"| {batch} | " + " | ".join(f"{got[p[0]]:.1f}" if p[0] in got else "-" for p in plans) + " |")
