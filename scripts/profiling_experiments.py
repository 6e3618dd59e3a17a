"""The profiling experiments of module 01 (and the GeLU variants that open module 02), on one GPU.

    OUT=/some/dir python scripts/profiling_experiments.py        (repository root, PYTHONPATH=.)

Writes under $OUT:
    profiling.json            timer pitfalls, matmul TFLOP/s by size, MLP scaling, kernels seen by the
                              profiler, GeLU variants and sin^2 + cos^2 (eager against torch.compile)
    profile_*.txt             torch.profiler tables (top rows only)
    log.txt                   everything printed

Sections run in order of need and stop when the time budget (BUDGET_S, default 165 s) runs out; the
JSON files are rewritten after each section, so a run cut short still returns what it measured.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from autograder import timing
from autograder.specs import fusion as spec
from course.loader import load_kernels

START = time.time()
BUDGET_S = float(os.environ.get("BUDGET_S", "165"))
OUT = Path(os.environ.get("OUT", "/tmp/profiling_out"))
OUT.mkdir(parents=True, exist_ok=True)
DEV = torch.device("cuda")
LOG = open(OUT / "log.txt", "w")  # noqa: SIM115
PROFILING: dict = {}


def log(*args: object) -> None:
    line = " ".join(str(a) for a in args)
    print(f"[{time.time() - START:6.1f}s] {line}", flush=True)
    LOG.write(line + "\n")
    LOG.flush()


def left() -> float:
    return BUDGET_S - (time.time() - START)


def dump() -> None:
    (OUT / "profiling.json").write_text(json.dumps(PROFILING, indent=1) + "\n")


def section(name: str, need_s: float) -> Callable:
    """Run a section if at least need_s seconds of budget are left; record its error, never stop."""

    def wrap(fn: Callable) -> Callable:
        def run() -> None:
            if left() < need_s:
                log(f"SKIP {name}: {left():.0f} s left, needs {need_s:.0f}")
                PROFILING.setdefault("skipped", []).append(name)
                return
            t0 = time.time()
            log(f"== {name}")
            try:
                fn()
            except Exception:  # noqa: BLE001
                log(f"ERROR in {name}:\n{traceback.format_exc()}")
                PROFILING.setdefault("errors", {})[name] = traceback.format_exc()[-2000:]
            log(f"   {name} took {time.time() - t0:.1f} s")
            dump()

        run.__name__ = fn.__name__
        return run

    return wrap


def events_ms(fn: Callable[[], object], reps: int = 10, warmup: int = 3) -> float:
    """Median of CUDA-event times of fn over reps calls, after warm-up (no L2 flush: large operands)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def flushed_ms(fns: dict[str, Callable[[], object]], reps: int = 20) -> dict[str, float]:
    """Median ms per call of each fn, interleaved, L2 flushed before each (autograder.timing)."""
    times = timing.time_interleaved({k: (lambda i, f=f: f()) for k, f in fns.items()}, 1, reps, DEV,
                                    warmup_ms=20, min_warmup_calls=3)  # fmt: skip
    return {k: statistics.median(v) for k, v in times.items()}


def _dev_time(evt: object, self_only: bool) -> float:
    for key in (("self_device_time_total", "self_cuda_time_total") if self_only else ("device_time_total", "cuda_time_total")):
        if hasattr(evt, key):
            return float(getattr(evt, key))
    return 0.0


def profile(name: str, fn: Callable[[], object], iters: int = 3, rows: int = 12) -> list[dict]:
    """Profile fn (after a warm-up), write the top rows of the table to profile_<name>.txt, return the kernels."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    fn()
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    averages = prof.key_averages()
    table = None
    for key in ("device_time_total", "cuda_time_total"):
        try:
            table = averages.table(sort_by=key, row_limit=rows, max_name_column_width=70)
            break
        except Exception:  # noqa: BLE001
            continue
    (OUT / f"profile_{name}.txt").write_text(f"# {name}: {iters} calls, {torch.cuda.get_device_name()}\n{table}\n")
    # Kernels: entries that spend device time themselves and are not framework (aten::, cuda*) rows.
    kernels = []
    for evt in averages:
        t = _dev_time(evt, self_only=True)
        if t > 0 and not evt.key.startswith(("aten::", "cuda", "Memcpy", "Memset", "autograd", "Optimizer")):
            kernels.append({"name": evt.key[:160], "calls_per_iter": evt.count / iters, "us_per_iter": t / iters})
    kernels.sort(key=lambda k: -k["us_per_iter"])
    return kernels


# ==================================================================================================
# Module 01: timing pitfalls, matmul, MLP scaling, the profiler
# ==================================================================================================


@section("timer pitfalls", 10)
def timer_pitfalls() -> None:
    n = 8192
    a = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    a @ b  # the first matmul of the process: cuBLAS handle, workspace, kernel selection
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    calls = 20
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        a @ b  # no synchronize: the loop only queues launches
    naive_ms = (time.perf_counter() - t0) * 1e3 / calls
    torch.cuda.synchronize()
    drained_ms = (time.perf_counter() - t0) * 1e3 / calls  # the same loop once the queue has drained
    synced = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        synced.append((time.perf_counter() - t0) * 1e3)
    ev = events_ms(lambda: a @ b, reps=calls)
    flops = 2 * n**3
    res = {
        "op": f"bf16 matmul {n}x{n} @ {n}x{n}", "flops": flops, "calls": calls,
        "first_call_ms": first_ms, "naive_ms_per_call": naive_ms, "naive_then_sync_ms_per_call": drained_ms,
        "synced_median_ms": statistics.median(synced), "synced_mean_ms": statistics.mean(synced),
        "events_median_ms": ev,
        "tflops": {"naive": flops / (naive_ms * 1e-3) / 1e12, "synced": flops / (statistics.median(synced) * 1e-3) / 1e12,
                   "events": flops / (ev * 1e-3) / 1e12},
    }  # fmt: skip
    PROFILING["timer_pitfalls"] = res
    log(f"first call {first_ms:.1f} ms; naive {naive_ms * 1e3:.1f} us/call; synced median {statistics.median(synced):.3f} ms; "
        f"events {ev:.3f} ms -> naive says {res['tflops']['naive']:,.0f} TFLOP/s, events {res['tflops']['events']:,.0f}")


@section("matmul sweep", 20)
def matmul_sweep() -> None:
    rows = []
    torch.backends.cuda.matmul.allow_tf32 = False
    for dtype, sizes in (("bfloat16", [1024, 2048, 4096, 8192, 16384]), ("float32", [1024, 2048, 4096, 8192]),
                         ("tf32", [1024, 2048, 4096, 8192])):  # fmt: skip
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        for n in sizes:
            if left() < 8:
                break
            dt = torch.bfloat16 if dtype == "bfloat16" else torch.float32
            a = torch.randn(n, n, device=DEV, dtype=dt)
            b = torch.randn(n, n, device=DEV, dtype=dt)
            ms = events_ms(lambda: a @ b, reps=10 if n < 16384 else 5, warmup=3)
            tf = 2 * n**3 / (ms * 1e-3) / 1e12
            rows.append({"dtype": dtype, "n": n, "ms": ms, "tflops": tf})
            log(f"matmul {dtype:8s} {n:6d}: {ms:9.3f} ms {tf:7.1f} TFLOP/s")
            del a, b
    torch.backends.cuda.matmul.allow_tf32 = False
    PROFILING["matmul"] = rows


def make_mlp(width: int, layers: int) -> torch.nn.Module:
    blocks = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(width, width, bias=False), torch.nn.GELU(approximate="tanh")]
    return torch.nn.Sequential(*blocks).to(device=DEV, dtype=torch.bfloat16)


def mlp_steps(model: torch.nn.Module, x: torch.Tensor, steps: int) -> None:
    for _ in range(steps):
        model(x).float().square().mean().backward()


def mlp_scaling(base: dict, key: str) -> None:
    configs = [("base", 1)] + [(k, f) for k in ("steps", "layers", "batch", "width") for f in (2, 4)]
    rows = []
    for knob, factor in configs:
        cfg = dict(base)
        if knob != "base":
            cfg[knob] *= factor
        model = make_mlp(cfg["width"], cfg["layers"])
        x = torch.randn(cfg["batch"], cfg["width"], device=DEV, dtype=torch.bfloat16)
        ms = events_ms(lambda: mlp_steps(model, x, cfg["steps"]), reps=7, warmup=2)
        flops = 6 * cfg["batch"] * cfg["width"] ** 2 * cfg["layers"] * cfg["steps"]  # matmuls, fwd + bwd
        rows.append({"knob": knob, "factor": factor, **cfg, "ms": ms, "matmul_flops": flops,
                     "tflops": flops / (ms * 1e-3) / 1e12})  # fmt: skip
        log(f"mlp {knob:6s} x{factor}: {cfg} {ms:8.3f} ms {rows[-1]['tflops']:6.1f} TFLOP/s")
        del model, x
    base_ms = rows[0]["ms"]
    for r in rows:
        r["actual_ratio"] = r["ms"] / base_ms
        r["expected_ratio"] = 1 if r["knob"] == "base" else (r["factor"] ** 2 if r["knob"] == "width" else r["factor"])
    PROFILING[key] = {"base": base, "rows": rows}


@section("mlp scaling", 15)
def mlp_scaling_small() -> None:
    """Small enough that the host, not the GPU, sets the pace."""
    mlp_scaling({"steps": 2, "layers": 4, "batch": 1024, "width": 1024}, "mlp_scaling")


@section("mlp scaling, large", 30)
def mlp_scaling_large() -> None:
    """Large enough (about 0.2 ms per matmul at the base) that the GPU sets the pace: counting predicts the ratios."""
    mlp_scaling({"steps": 2, "layers": 4, "batch": 4096, "width": 4096}, "mlp_scaling_large")


@section("profiler tables", 15)
def profiler_tables() -> None:
    x = torch.randn(4096, 4096, device=DEV)
    y = torch.randn(4096, 4096, device=DEV)
    kern = {"add": profile("add", lambda: x + y)}
    s = torch.randn(128, 128, device=DEV, dtype=torch.bfloat16)
    kern["matmul_small"] = profile("matmul_small", lambda: s @ s)
    big = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    kern["matmul_large"] = profile("matmul_large", lambda: big @ big)
    model = make_mlp(1024, 4)
    xm = torch.randn(1024, 1024, device=DEV, dtype=torch.bfloat16)
    kern["mlp_fwd_bwd"] = profile("mlp", lambda: mlp_steps(model, xm, 1), iters=2, rows=16)
    PROFILING["profiler_kernels"] = kern
    for k, v in kern.items():
        log(f"profile {k}: " + "; ".join(f"{e['name'][:70]} x{e['calls_per_iter']:g} {e['us_per_iter']:.1f}us" for e in v[:4]))


# ==================================================================================================
# Module 02's opening: GeLU written out, from the library, compiled and in Triton (the solution)
# ==================================================================================================

SOL = load_kernels("fusion", "solutions")


def compiled(fn: Callable) -> Callable:
    import torch._dynamo

    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    return torch.compile(fn, dynamic=False)


@section("gelu variants and sin^2+cos^2", 20)
def gelu_variants() -> None:
    x = torch.randn(16384, 8192, device=DEV, dtype=torch.bfloat16)
    inputs, params = {"x": x}, {}
    gelu_c = compiled(spec.eager_gelu)
    variants = {
        "eager ops": lambda: spec.eager_gelu(inputs, params),
        "F.gelu": lambda: F.gelu(x, approximate="tanh"),
        "torch.compile": lambda: gelu_c(inputs, params),
        "triton": lambda: SOL.gelu(x),
    }
    ms = flushed_ms(variants, reps=20)
    kernels = {name: profile(f"gelu_{name.split()[0].replace('.', '_').lower()}", fn, iters=2, rows=10) for name, fn in variants.items()}
    PROFILING["gelu_variants"] = {"shape": [16384, 8192], "dtype": "bfloat16", "ms": ms, "bytes_min": 2 * x.nbytes,
                                  "kernels": kernels}  # fmt: skip
    for name in variants:
        log(f"gelu {name:14s} {ms[name] * 1e3:8.1f} us, {len(kernels[name])} kernels: " + ", ".join(k["name"][:40] for k in kernels[name]))

    def sincos(t: torch.Tensor) -> torch.Tensor:
        return torch.sin(t) ** 2 + torch.cos(t) ** 2

    t = torch.randn(16384, 8192, device=DEV)
    sc_c = compiled(sincos)
    ms2 = flushed_ms({"eager": lambda: sincos(t), "torch.compile": lambda: sc_c(t)}, reps=20)
    k2 = {"eager": profile("sincos_eager", lambda: sincos(t), iters=2, rows=8),
          "torch.compile": profile("sincos_compile", lambda: sc_c(t), iters=2, rows=8)}
    PROFILING["sincos"] = {"shape": [16384, 8192], "dtype": "float32", "ms": ms2, "bytes_min": 2 * t.nbytes, "kernels": k2}
    log(f"sin^2+cos^2: eager {ms2['eager'] * 1e3:.1f} us ({len(k2['eager'])} kernels), compile "
        f"{ms2['torch.compile'] * 1e3:.1f} us ({len(k2['torch.compile'])} kernels)")
    # One file for the six tables: no more than 8 files come back from a run.
    with open(OUT / "profile_fusion.txt", "w") as merged:
        for name in ("gelu_eager", "gelu_f_gelu", "gelu_torch_compile", "gelu_triton", "sincos_eager", "sincos_compile"):
            path = OUT / f"profile_{name}.txt"
            if path.exists():
                merged.write(path.read_text() + "\n")
                path.unlink()


def main() -> int:
    import triton as _t

    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": _t.__version__,
            "cuda": torch.version.cuda, "python": platform.python_version(), "date": datetime.date.today().isoformat(),
            "command": "python scripts/profiling_experiments.py"}  # fmt: skip
    PROFILING["meta"] = meta
    log(meta)
    PROFILING["copy_gbps"] = timing.copy_bandwidth_gbps(DEV)
    log(f"copy bandwidth {PROFILING['copy_gbps']:,.0f} GB/s")
    steps = (timer_pitfalls, matmul_sweep, mlp_scaling_small, mlp_scaling_large, profiler_tables, gelu_variants)
    only = os.environ.get("SECTIONS")  # e.g. SECTIONS=mlp_scaling_large: add to the committed results
    if only:
        committed = Path(__file__).resolve().parent.parent / "results" / "h200"
        PROFILING.update({k: v for k, v in json.loads((committed / "profiling.json").read_text()).items() if k != "meta"})
        steps = tuple(s for s in steps if s.__name__ in only.split(","))
    for step in steps:
        step()
    PROFILING["seconds"] = time.time() - START
    dump()
    log(f"done in {time.time() - START:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
