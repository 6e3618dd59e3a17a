"""Every GPU-tier correctness case of every solution, called three times (the first through Triton's launcher,
then directly), judged against the float64 reference; then which kernels launch directly. Run from a tree's root."""
import importlib, sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
import course.launch as cl
from autograder.specs import SLUGS, load_spec
from course.comparison import compare

dev = torch.device("cuda")
t0 = time.time(); n = bad = 0
for slug in SLUGS:
    spec = load_spec(slug)
    mod = importlib.import_module(f"solutions.{slug}.kernels")
    for part in spec.parts:
        cases = [c for c in part.cases if c.tier == "gpu"]
        for case in cases[:2] + [c for c in cases if c.params.get("dtype") == "bfloat16"][:1]:
            inputs = part.inputs(case.params, 1234, dev)
            ref = part.reference(inputs, case.params)
            for rep in range(2):
                try:
                    out = part.call(mod, inputs, case.params)
                except Exception as e:  # noqa: BLE001
                    bad += 1; print("ERROR", slug, part.task, case.name, rep, type(e).__name__, str(e)[:200]); continue
                for name, r in ref.items():
                    v = compare(name, out[name].to(r.device), r, part.tolerance(case.params))
                    n += 1
                    if not v.ok:
                        bad += 1; print("WRONG", slug, part.task, case.name, rep, v.message[:200])
# an input 2 bytes past a 16-byte boundary: a new key, compiled for it
from solutions.rmsnorm import kernels as rk
base = torch.randn(4 * 4096 + 1, device=dev, dtype=torch.bfloat16); w = torch.randn(4096, device=dev, dtype=torch.bfloat16)
for x in (base[:4 * 4096].view(4, 4096), base[1:].view(4, 4096), base[:4 * 4096].view(4, 4096)):
    for _ in range(2):
        y = rk.rmsnorm(x, w)
        ref = (x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w.double())
        ok = (y.double() - ref).abs().max().item() < 0.05 * ref.abs().mean().item()
        n += 1; bad += not ok
        if not ok: print("WRONG misaligned rmsnorm", x.data_ptr() % 16)
direct = sorted(f"{k.fn.__name__} ({len(v)} keys)" for k, v in cl._BOUND.items())
plain = sorted(getattr(getattr(k, "fn", k), "__name__", str(k)) for k in cl._PLAIN)
print(f"{n} checks, {bad} wrong, {time.time() - t0:.0f} s")
print("direct:", ", ".join(direct)); print("plain:", ", ".join(plain) or "none")
