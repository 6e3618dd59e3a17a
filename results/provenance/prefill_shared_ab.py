"""Does sharing one compiled code object between benchmarked blocks cost the second block host time (issue 20)?
The shipping bench compiles every plan from the same `lambda x: block_forward(...)`, so Dynamo keeps the PyTorch
block's and the course block's graphs as entries of one cache. Here the two blocks at 1 x 512 tokens are compiled
both ways in one process (shared: one code object, PyTorch first, as the bench does; own: a code object each), and
timed in turn, 5 rounds of 20 queued steps: host and wall microseconds per step, best and median.

    python results/provenance/prefill_shared_ab.py OUT"""
import json, statistics, sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import llama_block_bench as lbb
from course.llama import block_forward
from course.results import Sections, run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
run = Sections(out / "prefill_shared_ab.json", run_meta("prefill_shared_ab"))
torch._dynamo.config.cache_size_limit = 64
with torch.inference_mode():
    b = lbb.Bench(False, "solutions", run)
    fns = {}
    for name, switched in (("PyTorch, shared", ()), ("course, shared", lbb.ALL_BF16)):
        fns[name] = lbb.WRAP["compile, dynamic"](b.block(switched))  # one code object: Bench.block's lambda
    for i, (name, switched) in enumerate((("PyTorch, own", ()), ("course, own", lbb.ALL_BF16))):
        ops = b.ops(switched)
        step = eval(compile("lambda x: block_forward(x, w, cfg, ops, rot)", f"<plan {i}>", "eval"),
                    {"block_forward": block_forward, "w": b.weights, "cfg": b.cfg, "ops": ops, "rot": b.rotary})
        fns[name] = lbb.WRAP["compile, dynamic"](step)
    results = {}
    for batch, seq in ((1, 512), (4, 512)):
        x, _, _ = b.inputs(batch, seq, False)
        for f in fns.values():
            for _ in range(5):
                f(x)
        got = {name: {"host": [], "wall": []} for name in fns}
        for _ in range(5):
            for name, f in fns.items():
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(20):
                    f(x)
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                got[name]["host"].append((t1 - t0) / 20 * 1e6); got[name]["wall"].append((t2 - t0) / 20 * 1e6)
        for name, v in got.items():
            r = {k: (min(s), statistics.median(s)) for k, s in v.items()}
            results[f"{batch}x{seq} {name}"] = r
            print(f"{batch}x{seq} {name:16s} host {r['host'][0]:7.1f} ({r['host'][1]:7.1f})  wall {r['wall'][0]:7.1f} ({r['wall'][1]:7.1f}) us/step", flush=True)
(out / "prefill_shared_ab_rows.json").write_text(json.dumps({"meta": run_meta("prefill_shared_ab"), "rows": results}, indent=1))
