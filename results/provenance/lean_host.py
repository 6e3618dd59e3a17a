"""Host cost of the course ops and the eager decode block, for one tree (run from its root): before/after the lean launch."""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import llama_block_bench as lbb
import torch
from autograder import timing
from course.results import Sections, run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
# the best of 5 runs of 200 queued calls (the bench's own default is one run)
lbb.host_overhead_us = lambda f, **k: timing.host_overhead_us(f, calls=200, reps=5, warmup=20)
run = Sections(out / "llama_block.json", run_meta("lean_host"), merge=True)
t0 = time.time()
with torch.inference_mode():
    b = lbb.Bench(False, "solutions", run)
    run.run("host", lambda: lbb.section_host(b))
    plans = [("eager", (), "eager", False), ("course bf16", lbb.ALL_BF16, "eager", False),
             ("course W4A16", lbb.ALL_W4, "eager", False), ("course W4A16 + CUDA graph", lbb.ALL_W4, "eager", True)]
    run.run("eager_decode", lambda: [r for batch in (1, 4, 16) for r in b.time_plans("eager_decode", plans, batch, b.kv, True)])
# host cost with autograd on (no inference_mode): a public call in a training script's forward
with torch.no_grad():
    pass
print(f"done in {time.time() - t0:.0f} s", flush=True)
