"""Where the compiled prefill step's time goes at 1 x 512 tokens (issue 20): the PyTorch block and the course block
(bf16 projections) under torch.compile as the shipping bench runs them, each profiled over 20 steps after warm-up:
the host's wall time per step, the GPU's busy time per step (sum of kernel times), and the host ops that cost most.

    python results/provenance/prefill_profile.py OUT"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
from torch.profiler import ProfilerActivity, profile
import llama_block_bench as lbb
from course.results import Sections, run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
run = Sections(out / "prefill_profile.json", run_meta("prefill_profile"))
torch._dynamo.config.cache_size_limit = 64
rows = {}
with torch.inference_mode():
    b = lbb.Bench(False, "solutions", run)
    x, _, _ = b.inputs(1, 512, False)
    for name, switched in (("compile", ()), ("course compile", lbb.ALL_BF16)):
        fn = lbb.WRAP["compile, dynamic"](b.block(switched))
        for _ in range(5):
            fn(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            fn(x)
        host = (time.perf_counter() - t0) / 20 * 1e6
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / 20 * 1e6
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                fn(x)
            torch.cuda.synchronize()
        events = prof.key_averages()
        gpu = sum(e.self_device_time_total for e in events) / 20
        top = sorted(events, key=lambda e: -e.self_cpu_time_total)[:15]
        kernels = sorted(events, key=lambda e: -e.self_device_time_total)[:12]
        rows[name] = {"host_us_per_step": host, "wall_us_per_step": wall, "gpu_busy_us_per_step": gpu,
                      "top_cpu": [(e.key, e.self_cpu_time_total / 20, e.count / 20) for e in top],
                      "top_gpu": [(e.key, e.self_device_time_total / 20, e.count / 20) for e in kernels]}
        print(f"\n== {name}: host {host:.0f} us/step (queued), wall {wall:.0f} us/step, GPU busy {gpu:.0f} us/step")
        for k, us, n in rows[name]["top_cpu"]:
            print(f"  cpu {us:8.1f} us  x{n:4.1f}  {k[:90]}")
        for k, us, n in rows[name]["top_gpu"]:
            print(f"  gpu {us:8.1f} us  x{n:4.1f}  {k[:90]}")
(out / "prefill_profile_rows.json").write_text(json.dumps({"meta": run_meta("prefill_profile"), "rows": rows}, indent=1))
