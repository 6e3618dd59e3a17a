"""The course W4A16 block compiled with mode="reduce-overhead" as the very first W4A16 call of the process."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import llama_block_bench as lbb
from course.results import Sections, run_meta
b = lbb.Bench(False, "solutions", Sections(Path("/tmp/ro1/x.json"), run_meta("ro_first")))
for w in (b.weights_w4,):
    for t in [b.rotary.cos, b.rotary.sin, b.rotary.cos_full, b.rotary.sin_full, w.attn_norm, w.ffn_norm, *(t for lin in w.linears.values() for t in (lin.weight, lin.w_packed, lin.scales))]:
        if t is not None: torch._dynamo.mark_static_address(t)
x, cache, start = b.inputs(1, lbb.KV, True)
for t in (cache.k, cache.v): torch._dynamo.mark_static_address(t)
fn = lbb.WRAP["reduce-overhead"](b.block(lbb.ALL_W4, start, cache))
for _ in range(4): y = fn(x)
torch.cuda.synchronize()
err = b.error(x, fn, True, start, cache)
print(f"course W4A16 under reduce-overhead, first W4A16 call of the process: ran, relative error {err:.2e}")
