"""Which course op makes the compiled prefill step host-bound at 1 x 512 (issue 20): the block under
torch.compile (as the shipping bench compiles it) with one course kernel switched on at a time, each compiled
after torch._dynamo.reset() so that no plan pays another's guards; host microseconds per step (20 queued steps,
best of 5) and the wall time per step with a synchronize at the end.

    python results/provenance/prefill_ablation.py OUT"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import llama_block_bench as lbb
from course.results import Sections, run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
run = Sections(out / "prefill_ablation.json", run_meta("prefill_ablation"))
rows = []
with torch.inference_mode():
    b = lbb.Bench(False, "solutions", run)
    for batch, seq in ((1, 512), (4, 512)):
        x, _, _ = b.inputs(batch, seq, False)
        for switched in [(), ("rmsnorm",), ("rope",), ("attention",), ("swiglu",), lbb.ALL_BF16, ()]:
            torch._dynamo.reset()
            fn = lbb.WRAP["compile, dynamic"](b.block(switched))
            for _ in range(5):
                fn(x)
            host, wall = [], []
            for _ in range(5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(20):
                    fn(x)
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                host.append((t1 - t0) / 20 * 1e6); wall.append((t2 - t0) / 20 * 1e6)
            row = {"batch": batch, "seq": seq, "switches": list(switched), "host_us": min(host), "wall_us": min(wall)}
            rows.append(row)
            print(f"B={batch} S={seq} {'+'.join(switched) or 'PyTorch':32s} host {row['host_us']:7.1f} us/step  wall {row['wall_us']:7.1f}", flush=True)
(out / "prefill_ablation_rows.json").write_text(json.dumps({"meta": run_meta("prefill_ablation"), "rows": rows}, indent=1))
