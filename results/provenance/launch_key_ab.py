"""In one process: the launch path before (HEAD's course/launch.py) and after, on the launches of real course calls."""
import importlib.util, os, sys, time, statistics
sys.path.insert(0, os.getcwd())
import torch
from course.loader import load_kernels
import course.launch as new
# the previous tree, made with: mkdir -p .diag/before && git archive 2ad281a course | tar -x -C .diag/before
spec = importlib.util.spec_from_file_location("old_launch", ".diag/before/course/launch.py")
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
sys.path.insert(0, "scripts")
from llama_block_bench import captured_launches

dev, dt = "cuda", torch.bfloat16
qm = load_kernels("quant_matmul", "solutions"); fa = load_kernels("flash_attention", "solutions"); rn = load_kernels("rmsnorm", "solutions")
r = lambda *s: torch.randn(*s, device=dev, dtype=dt)
x = r(16, 4096); w4 = torch.randint(0, 256, (14336, 2048), dtype=torch.uint8, device=dev); s4 = r(14336, 32)
q1, kc, vc = r(16, 32, 1, 128), r(16, 8, 4096, 128), r(16, 8, 4096, 128); wn = r(4096)
cases = {"w4a16 M=16": (qm, lambda: qm.w4a16_matmul(x, w4, s4, 128)),
         "w4a16 M=1": (qm, lambda: qm.w4a16_matmul(x[:1], w4, s4, 128)),
         "flash decode B=16": (fa, lambda: fa.flash_attention(q1, kc, vc)),
         "rmsnorm 16x4096": (rn, lambda: rn.rmsnorm(x, wn))}
def per_call(fn, calls=400):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(calls): fn()
    dt_ = time.perf_counter() - t0; torch.cuda.synchronize(); return dt_ / calls * 1e6
print("| call | launch before (us) | after (us) | public call before (us) | after (us) | launches |")
print("|---|---:|---:|---:|---:|---:|")
for name, (mod, public) in cases.items():
    for _ in range(3): public()
    launches = captured_launches(public)
    runs = {"old": [], "new": [], "pub_old": [], "pub_new": []}
    fns = {}
    for tag, L in (("old", old), ("new", new)):
        fns[tag] = (lambda L=L: [L.launch(k, g, *a, **m) for k, g, a, m in launches])
    for k_, g_, a_, m_ in launches:  # first launches bind
        old.launch(k_, g_, *a_, **m_); new.launch(k_, g_, *a_, **m_)
    for _ in range(10):
        for tag in ("old", "new"):
            runs[tag].append(per_call(fns[tag]))
            mod.launch = old.launch if tag == "old" else new.launch
            public()
            runs["pub_" + tag].append(per_call(public))
            mod.launch = new.launch
    b = {k: min(v) for k, v in runs.items()}
    md = {k: statistics.median(v) for k, v in runs.items()}
    print(f"| {name} | {b['old']:.1f} (median {md['old']:.1f}) | {b['new']:.1f} ({md['new']:.1f}) | {b['pub_old']:.1f} ({md['pub_old']:.1f}) | {b['pub_new']:.1f} ({md['pub_new']:.1f}) | {len(launches)} |", flush=True)
