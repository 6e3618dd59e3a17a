"""Decode B=1 under torch.compile reduce-overhead: wall per call vs the GPU kernels' own time per replay."""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import llama_block_bench as lbb
import os
if os.environ.get("TREES") == "0":
    torch._inductor.config.triton.cudagraph_trees = False
    print("cudagraph_trees off")
from course.results import Sections, run_meta
from autograder.timing import back_to_back_ms
run = Sections(Path("/tmp/ro/llama_block.json"), run_meta("ro_diag"))
b = lbb.Bench(False, "solutions", run)
static = [b.rotary.cos, b.rotary.sin, b.rotary.cos_full, b.rotary.sin_full]
for w in (b.weights, b.weights_w4):
    static += [w.attn_norm, w.ffn_norm, *(t for lin in w.linears.values() for t in (lin.weight, lin.w_packed, lin.scales))]
for t in static:
    if t is not None:
        torch._dynamo.mark_static_address(t)
import contextlib
mode = torch.inference_mode() if os.environ.get("INFER") == "1" else contextlib.nullcontext()
print("inference_mode", os.environ.get("INFER") == "1", "trees", torch._inductor.config.triton.cudagraph_trees)
mode.__enter__()
for batch in tuple(int(b) for b in os.environ.get("BATCHES", "1").split(",")):
    x, cache, start = b.inputs(batch, lbb.KV, True)
    for t in (cache.k, cache.v):
        torch._dynamo.mark_static_address(t)
    for name, switched, wrap, graph in (("compile RO", (), "reduce-overhead", False), ("course W4A16 compile RO", lbb.ALL_W4, "reduce-overhead", False),
                                        ("course W4A16 + hand graph", lbb.ALL_W4, "eager", True)):
        fn = lbb.WRAP[wrap](b.block(switched, start, cache))
        call = lbb.cuda_graph(lambda fn=fn: fn(x)) if graph else (lambda fn=fn: fn(x))
        for _ in range(5):
            call()
        torch.cuda.synchronize()
        wall = back_to_back_ms(call, 50, 7) * 1e3
        # host time alone: queue 50 calls without waiting
        torch.cuda.synchronize(); t0 = time.perf_counter()
        for _ in range(50):
            call()
        host = (time.perf_counter() - t0) / 50 * 1e6
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA, torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(10):
                call()
            torch.cuda.synchronize()
        cpu_names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CPU]
        graph_launches = sum(n == "cudaGraphLaunch" for n in cpu_names) / 10
        kernel_launches = sum(n in ("cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernel", "cudaLaunchKernelExC") for n in cpu_names) / 10
        course_ops = sum(n.startswith("course::") for n in cpu_names) / 10
        print(f"   per call: {graph_launches:.1f} cudaGraphLaunch, {kernel_launches:.1f} kernel launches from the host, {course_ops:.1f} course ops run")
        ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        gpu = sum(e.device_time for e in ev) / 10  # us of kernel time per call (kernels do not overlap here)
        n = len(ev) / 10
        top = {}
        for e in ev:
            top[e.name[:60]] = top.get(e.name[:60], 0) + e.device_time / 10
        print(f"B={batch} {name:28s} wall {wall:7.1f} us  host-only {host:7.1f} us  GPU kernels {gpu:7.1f} us in {n:.0f} launches")
        for k, v in sorted(top.items(), key=lambda kv: -kv[1])[:6]:
            print(f"      {v:7.1f} us  {k}")
