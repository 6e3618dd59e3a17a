"""In one process: public calls with interpreter_requested reading os.environ.get (before) or os.environ's dict (after)."""
import os, sys, time, statistics
sys.path.insert(0, os.getcwd())
import torch
import course.env, course.validate, course.device
from course.loader import load_kernels
_YES = ("1", "true", "yes", "on"); _ASKED = {}
def before():
    raw = os.environ.get("TRITON_INTERPRET")
    answer = _ASKED.get(raw)
    if answer is None:
        answer = _ASKED[raw] = raw is not None and raw.strip().lower() in _YES
    return answer
after = course.env.interpreter_requested
mods = [m for m in (course.validate, course.device) if hasattr(m, "interpreter_requested")]
dev, dt = "cuda", torch.bfloat16
qm = load_kernels("quant_matmul", "solutions"); fa = load_kernels("flash_attention", "solutions"); rn = load_kernels("rmsnorm", "solutions")
r = lambda *s: torch.randn(*s, device=dev, dtype=dt)
x = r(16, 4096); w4 = torch.randint(0, 256, (14336, 2048), dtype=torch.uint8, device=dev); s4 = r(14336, 32)
q1, kc, vc = r(16, 32, 1, 128), r(16, 8, 4096, 128), r(16, 8, 4096, 128); wn = r(4096)
cases = {"w4a16 M=16": lambda: qm.w4a16_matmul(x, w4, s4, 128), "flash decode B=16": lambda: fa.flash_attention(q1, kc, vc),
         "rmsnorm 16x4096": lambda: rn.rmsnorm(x, wn)}
def per_call(fn, calls=400):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(calls): fn()
    d = time.perf_counter() - t0; torch.cuda.synchronize(); return d / calls * 1e6
print("| call | public call, os.environ.get (us) | public call, os.environ's dict (us) |")
print("|---|---:|---:|")
for name, fn in cases.items():
    for _ in range(5): fn()
    res = {"before": [], "after": []}
    for _ in range(10):
        for tag, f in (("before", before), ("after", after)):
            for m in mods: m.interpreter_requested = f
            fn(); res[tag].append(per_call(fn))
    for m in mods: m.interpreter_requested = after
    print(f"| {name} | {min(res['before']):.1f} ({statistics.median(res['before']):.1f}) | {min(res['after']):.1f} ({statistics.median(res['after']):.1f}) |", flush=True)
