"""On a GPU: host microseconds per public matmul call (tiling) with the direct launch against the commit before,
at shapes where the host dominates; outputs checked equal first."""
import importlib.util, sys, time
sys.path.insert(0, ".")
import torch, triton
from course.loader import load_kernels
dev = torch.device("cuda")
NEW = load_kernels("tiling", "solutions")
s_ = importlib.util.spec_from_file_location("old_tiling_kernels", ".diag/old_tiling/kernels.py")
OLD = importlib.util.module_from_spec(s_); sys.modules["old_tiling_kernels"] = OLD; s_.loader.exec_module(OLD)
print("GPU", torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
for n in [128, 512, 1000]:
    a = torch.randn(n, n, device=dev, dtype=torch.float16); b = torch.randn(n, n, device=dev, dtype=torch.float16)
    ref = a.float() @ b.float()
    for name, mod in (("new", NEW), ("old", OLD)):
        y = mod.matmul(a, b); torch.cuda.synchronize()
        assert torch.allclose(y.float(), ref, rtol=2e-2, atol=2e-1), (name, n)
    res = {}
    for rnd in range(3):
        for name, fn in (("new", lambda: NEW.matmul(a, b)), ("old", lambda: OLD.matmul(a, b)), ("torch", lambda: a @ b)):
            for _ in range(20): fn()
            torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(500): fn()
            host = (time.perf_counter() - t) / 500 * 1e6
            torch.cuda.synchronize(); wall = (time.perf_counter() - t) / 500 * 1e6
            res.setdefault(name, []).append((host, wall))
    print(f"N={n}: " + "; ".join(f"{k} host {min(h for h, _ in v):.1f} us/call (wall {min(w for _, w in v):.1f})" for k, v in res.items()), flush=True)
