"""In one process: each public call with its checks every call (HEAD's kernels.py) and once per signature (this tree's)."""
import importlib.util, os, sys, time, statistics
sys.path.insert(0, os.getcwd())
import torch
from course.loader import load_kernels
# .diag/old_sol/<slug>/: kernels.py and configs.json of f5fb27f (git show f5fb27f:solutions/<slug>/kernels.py)
def old(slug):
    spec = importlib.util.spec_from_file_location(f"old_{slug}", f".diag/old_sol/{slug}/kernels.py")
    m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m); return m
dev, dt = "cuda", torch.bfloat16
r = lambda *s: torch.randn(*s, device=dev, dtype=dt)
x = r(16, 4096); w4 = torch.randint(0, 256, (14336, 2048), dtype=torch.uint8, device=dev); s4 = r(14336, 32)
q1, kc, vc = r(16, 32, 1, 128), r(16, 8, 4096, 128), r(16, 8, 4096, 128); wn = r(4096)
xr = r(16, 32, 1, 128); cos, sin = torch.randn(1, 64, device=dev), torch.randn(1, 64, device=dev)
g, u = r(16, 14336), r(16, 14336); a = r(4096, 4096)
cases = {
    "w4a16_matmul M=16": ("quant_matmul", lambda m: m.w4a16_matmul(x, w4, s4, 128)),
    "w4a16_matmul M=1": ("quant_matmul", lambda m: m.w4a16_matmul(x[:1], w4, s4, 128)),
    "flash_attention decode B=16": ("flash_attention", lambda m: m.flash_attention(q1, kc, vc)),
    "rmsnorm 16x4096": ("rmsnorm", lambda m: m.rmsnorm(x, wn)),
    "rope 16x32x1x128": ("rope", lambda m: m.rope(xr, cos, sin)),
    "swiglu 16x14336": ("swiglu", lambda m: m.swiglu(g, u)),
    "matmul 16x4096 @ 4096x4096": ("tiling", lambda m: m.matmul(x, a)),
}
def per_call(fn, calls=400):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(calls): fn()
    d = time.perf_counter() - t0; torch.cuda.synchronize(); return d / calls * 1e6
print("| public call | checks every call (us) | checked once per signature (us) | saved |")
print("|---|---:|---:|---:|")
mods = {}
for name, (slug, call) in cases.items():
    if slug not in mods:
        mods[slug] = (old(slug), load_kernels(slug, "solutions"))
    before, after = mods[slug]
    for _ in range(5): call(before); call(after)
    res = {"before": [], "after": []}
    for _ in range(10):
        for tag, m in (("before", before), ("after", after)):
            res[tag].append(per_call(lambda: call(m)))
    b, a_ = min(res["before"]), min(res["after"])
    print(f"| {name} | {b:.1f} ({statistics.median(res['before']):.1f}) | {a_:.1f} ({statistics.median(res['after']):.1f}) | {b - a_:.1f} |", flush=True)
