"""What one course op costs the host inside a torch.compile'd function, against the same op called eagerly (issue 20):
host microseconds per call (200 queued calls, best of 7) of (a) the registered op through the dispatcher, (b) a
compiled function holding only that op, (c) a compiled function holding only a torch.add, and the time spent inside
the op's launcher (timed from within) in (a) and (b).

    python results/provenance/compiled_op_cost.py OUT"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
from autograder.timing import host_overhead_us
from course.loader import load_kernels
from course.results import run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
rn = load_kernels("rmsnorm", "solutions")
inner = {"s": 0.0, "n": 0}
original = rn.rmsnorm_forward


def timed(*args):
    t0 = time.perf_counter()
    try:
        return original(*args)
    finally:
        inner["s"] += time.perf_counter() - t0
        inner["n"] += 1


rn.rmsnorm_forward = timed
x, w = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16), torch.randn(4096, device="cuda", dtype=torch.bfloat16)
op = rn.rmsnorm_forward_op
compiled_op = torch.compile(lambda x: op(x, w, 1e-6, False)[0], fullgraph=True, dynamic=False)
compiled_add = torch.compile(lambda x: torch.add(x, 1.0), fullgraph=True, dynamic=False)
compiled_two = torch.compile(lambda x: op(op(x, w, 1e-6, False)[0], w, 1e-6, False)[0], fullgraph=True, dynamic=False)
rows = {}
with torch.inference_mode():
    for name, f in {"dispatcher op": lambda: op.overload(x, w, 1e-6, False), "CourseOp (eager)": lambda: op(x, w, 1e-6, False),
                    "compiled: the op": lambda: compiled_op(x), "compiled: two ops": lambda: compiled_two(x),
                    "compiled: torch.add": lambda: compiled_add(x), "eager torch.add": lambda: torch.add(x, 1.0)}.items():
        f(); f()
        inner.update(s=0.0, n=0)
        us = host_overhead_us(f, calls=200, reps=7, warmup=20)
        per_launcher = inner["s"] / inner["n"] * 1e6 if inner["n"] else 0.0
        rows[name] = {"host_us": us, "inside_launcher_us": per_launcher}
        print(f"{name:22s} host {us:7.1f} us/call   inside the launcher {per_launcher:6.1f} us", flush=True)
(out / "compiled_op_cost.json").write_text(json.dumps({"meta": run_meta("compiled_op_cost"), "rows": rows}, indent=1))
