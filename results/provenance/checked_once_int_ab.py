"""checks_ab for the quantized-cache decode calls: checks every call (f5fb27f) against once per signature."""
# Needs .diag/old_sol/flash_attention/ (kernels.py and configs.json of f5fb27f) and runs from the repository root.
import os, sys, statistics
sys.path.insert(0, os.getcwd()); sys.path.insert(0, ".diag")
import torch
import importlib.util, time
def old(slug):
    spec = importlib.util.spec_from_file_location(f"old_{slug}", f".diag/old_sol/{slug}/kernels.py")
    m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m); return m
def per_call(fn, calls=400):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(calls): fn()
    d = time.perf_counter() - t0; torch.cuda.synchronize(); return d / calls * 1e6
from course.loader import load_kernels
new = load_kernels("flash_attention", "solutions"); before = old("flash_attention")
r = lambda *s: torch.randn(*s, device="cuda", dtype=torch.bfloat16)
q, k, v = r(16, 32, 1, 128), r(16, 8, 4096, 128), r(16, 8, 4096, 128)
c8 = new.quantize_kv(k, v); c4 = new.quantize_kv_int4(k, v, 32)
cases = {"flash_decode_int8 B=16": lambda m: m.flash_decode_int8(q, *c8), "flash_decode_int4 B=16": lambda m: m.flash_decode_int4(q, *c4, 32)}
for name, call in cases.items():
    for _ in range(5): call(before); call(new)
    res = {"b": [], "a": []}
    for _ in range(10):
        res["b"].append(per_call(lambda: call(before))); res["a"].append(per_call(lambda: call(new)))
    print(f"| {name} | {min(res['b']):.1f} ({statistics.median(res['b']):.1f}) | {min(res['a']):.1f} ({statistics.median(res['a']):.1f}) | {min(res['b']) - min(res['a']):.1f} |", flush=True)
