"""Issue 20: where the host time of a reduce-overhead replay goes with Inductor's CUDA graph trees on, for the
PyTorch block and the course block (W4A16, fused projections), batch 16, 4096-token cache. Each block built and
warmed as ro_rounds.py does, then 200 steps queued under cProfile (the GPU is not waited on, so the host's time per
step is what is counted); the top functions by own time and by cumulative time are printed per block.
    python results/provenance/ro_trees_profile.py OUT [BATCH]"""
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import llama_block_bench as lbb
from course.results import Sections, run_meta

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 16
run = Sections(out / "ro_trees_profile.json", run_meta("ro_trees_profile"), budget_s=300)
torch._dynamo.config.cache_size_limit = 64
with torch.inference_mode():
    b = lbb.Bench(False, "solutions", run)
    static = [b.rotary.cos, b.rotary.sin, b.rotary.cos_full, b.rotary.sin_full]
    for w in (b.weights, b.weights_w4, *b.fused.values()):
        static += [w.attn_norm, w.ffn_norm, *(t for lin in w.linears.values() for t in (lin.weight, lin.w_packed, lin.scales))]
    for t in static:
        if t is not None:
            torch._dynamo.mark_static_address(t)
    x, cache, start = b.inputs(batch, b.kv, True)
    for t in (cache.k, cache.v):
        torch._dynamo.mark_static_address(t)
    for name, switched in (("PyTorch", ()), ("course W4A16, fused", (*lbb.ALL_W4, lbb.FUSED))):
        fn = lbb.WRAP["reduce-overhead"](b.block(switched, start, cache))
        for _ in range(10):
            fn(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            fn(x)
        host = (time.perf_counter() - t0) / 200 * 1e6
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            fn(x)
        prof.disable()
        torch.cuda.synchronize()
        for key in ("tottime", "cumulative"):
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats(key).print_stats(30)
            (out / f"profile_{name.split()[0]}_{key}.txt").write_text(f"host {host:.1f} us per step\n" + s.getvalue())
        print(f"{name}: host {host:.1f} us per step (200 queued, no profiler)", flush=True)
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(12)
        print("\n".join(l[:150] for l in s.getvalue().splitlines()[6:24]), flush=True)
