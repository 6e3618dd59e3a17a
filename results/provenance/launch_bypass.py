"""Host us per call of a course kernel launched five ways (GPU only)."""
import json, sys, time, os
import torch, triton
sys.path.insert(0, os.getcwd())
from triton.runtime import driver
from solutions.rmsnorm import kernels as rk
from course.launch import cdiv

dev = torch.device("cuda")
x = torch.randn(1, 4096, device=dev, dtype=torch.bfloat16); w = torch.randn(4096, device=dev, dtype=torch.bfloat16)
y = torch.empty_like(x)
from course.device import device_of
bm, bn, nw = rk.forward_config(device_of(x), 1, 4096)
grid = (cdiv(1, bm),)
args = (x, w, y, x, 1, 4096, x.stride(0), y.stride(0), 1e-6)
kw = dict(BLOCK_M=bm, BLOCK_N=bn, SINGLE_TILE=bn >= 4096, STORE_RSTD=False)
compiled = rk._rmsnorm_fwd_kernel[grid](*args, **kw, num_warps=nw)
allargs = args + tuple(kw.values())
print("triton", triton.__version__, "compiled type", type(compiled).__name__, "run", compiled.run)
dev_idx = driver.active.get_current_device()
get_stream = driver.active.get_current_stream

def t(label, fn, n=5000):
    for _ in range(200): fn()
    torch.cuda.synchronize()
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n): fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    print(f"{label:55s} {best:7.2f} us")
    return best

res = {}
res["public rmsnorm(x, w)"] = t("public rmsnorm(x, w)", lambda: rk.rmsnorm(x, w))
res["launcher rmsnorm_forward"] = t("launcher rmsnorm_forward", lambda: rk.rmsnorm_forward(x, w, 1e-6, False))
res["bare kernel[grid](...)"] = t("bare kernel[grid](...)", lambda: rk._rmsnorm_fwd_kernel[grid](*args, **kw, num_warps=nw))
res["compiled[grid](*args)"] = t("compiled[grid](*args)", lambda: compiled[(grid[0], 1, 1)](*allargs))
fn, pm = compiled.function, compiled.packed_metadata
def direct():
    compiled.run(grid[0], 1, 1, get_stream(dev_idx), fn, pm, None, None, None, *allargs)
compiled._init_handles()
fn, pm = compiled.function, compiled.packed_metadata
res["compiled.run direct"] = t("compiled.run direct (stream fetched)", direct)
def direct_alloc():
    yy = torch.empty_like(x)
    compiled.run(grid[0], 1, 1, get_stream(dev_idx), fn, pm, None, None, None, x, w, yy, x, 1, 4096, 4096, 4096, 1e-6, *kw.values())
res["direct + torch.empty_like"] = t("direct + torch.empty_like", direct_alloc)
res["torch.empty_like alone"] = t("torch.empty_like alone", lambda: torch.empty_like(x))
res["F.rms_norm"] = t("F.rms_norm", lambda: torch.nn.functional.rms_norm(x, (4096,), w, 1e-6))
res["torch.add (PyTorch op)"] = t("x + x (PyTorch op)", lambda: x + x)
# correctness of the direct launch
yy = torch.empty_like(x); compiled.run(grid[0], 1, 1, get_stream(dev_idx), fn, pm, None, None, None, x, w, yy, x, 1, 4096, 4096, 4096, 1e-6, *kw.values())
torch.cuda.synchronize(); ref = rk.rmsnorm(x, w)
print("direct == public:", torch.equal(yy, ref))
# under CUDA graph capture: does the direct launch record onto the capture stream?
g = torch.cuda.CUDAGraph(); out = torch.empty_like(x)
s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    direct()
torch.cuda.current_stream().wait_stream(s)
with torch.cuda.graph(g):
    compiled.run(grid[0], 1, 1, get_stream(dev_idx), fn, pm, None, None, None, x, w, out, x, 1, 4096, 4096, 4096, 1e-6, *kw.values())
out.zero_(); g.replay(); torch.cuda.synchronize(); print("graph replay == public:", torch.equal(out, ref))
import inspect
print("CompiledKernel.run is", type(compiled.run).__name__)
os.makedirs(os.environ.get("OUT", "/tmp/out"), exist_ok=True)
json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__, "host_us": res},
          open(os.path.join(os.environ.get("OUT", "/tmp/out"), "launch_bypass.json"), "w"), indent=1)
