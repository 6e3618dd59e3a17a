"""`python -m autograder bench`: the reference solutions against PyTorch on a GPU, as JSON and a table.

Every implementation of one call is timed in the same run, interleaved call by call, with L2 flushed
before each call; the copy bandwidth measured in the same run is the ceiling that % of peak refers to.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
from pathlib import Path

import torch

from autograder import anchors, timing
from autograder.plots import markdown_table, plot_results
from autograder.spec import generator
from autograder.specs import load_spec

REPO_ROOT = Path(__file__).resolve().parent.parent


def gpu_slug(name: str) -> str:
    for key in ("H200", "H100", "B200", "A100", "L40S", "L4", "4090", "3090"):
        if key.lower() in name.lower():
            return key.lower()
    return "".join(ch for ch in name.lower() if ch.isalnum())


MATMUL_DIMS = ("M", "K", "N")


def bench_shape(params: dict) -> list[int]:
    """The sizes a benchmark row is labelled with: the case's shape, or (M, K, N) for a product given by them."""
    if "shape" in params:
        return list(params["shape"])
    dims = [params[d] for d in MATMUL_DIMS if d in params]
    if not dims:
        raise KeyError(f"a bench case needs a 'shape' or M, K and N among its params, got {sorted(params)}")
    return dims


def run_bench(slugs: list[str], out: Path | None, quick: bool) -> int:
    if not torch.cuda.is_available():
        print("bench needs a CUDA GPU: the CPU interpreter says nothing about speed. Run it on a GPU machine.")
        return 2
    from course.loader import load_kernels

    device = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    out = out or REPO_ROOT / "results" / gpu_slug(name)
    out.mkdir(parents=True, exist_ok=True)
    reps = 10 if quick else 30
    copy_gbps = timing.copy_bandwidth_gbps(device)
    libraries = anchors.versions()
    print("anchors: " + ", ".join(f"{name} {version}" for name, version in libraries.items()), flush=True)
    for slug in slugs:
        spec_module = sys.modules.get(f"autograder.specs.{slug}") or __import__(f"autograder.specs.{slug}", fromlist=["x"])
        load_spec(slug)
        module = load_kernels(slug, "solutions")
        rows = []
        for case in spec_module.bench_suite(module, quick):
            shape = bench_shape(case.params)
            pool = [case.make_inputs(case.params, generator(1000 + i, device), device) for i in range(2)]
            calls = {impl: [prepare(inputs) for inputs in pool] for impl, prepare in case.impls.items()}
            for impl, prepare in anchors.extra_impls(slug, case.pass_name, case.params).items():
                try:  # a third-party call that fails (an API that moved, say) is left out, said once, not fatal
                    calls[impl] = [prepare(inputs) for inputs in pool]
                    calls[impl][0]()
                except Exception as exc:  # noqa: BLE001
                    calls.pop(impl, None)
                    print(f"{slug} {case.pass_name} {shape}: {impl} left out: {type(exc).__name__}: {exc}", flush=True)
            times = timing.time_interleaved({k: (lambda i, c=c: c[i]()) for k, c in calls.items()}, len(pool), reps, device)
            for impl, ts in times.items():
                ms = timing.median(ts)
                gbps = case.bytes_moved / (ms * 1e-3) / 1e9
                row = {"pass": case.pass_name, "shape": shape, "dtype": case.params["dtype"],
                       "impl": impl, "ms": ms, "gbps": gbps, "pct_copy": 100 * gbps / copy_gbps,
                       "spread": timing.spread(ts)}
                if case.flops:
                    row["tflops"] = case.flops / (ms * 1e-3) / 1e12
                rows.append(row)
                rate = f"{row['tflops']:8.1f} TFLOP/s" if case.flops else f"{gbps:8.0f} GB/s"
                print(f"{slug} {case.pass_name:8s} {str(shape):15s} {impl:14s} {ms * 1e3:9.1f} us {rate}", flush=True)
        import triton

        results = {
            "meta": {
                "gpu": name, "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
                "python": platform.python_version(), "date": datetime.date.today().isoformat(),
                "copy_gbps": copy_gbps, "reps": reps, "command": f"python -m autograder bench {slug}",
                "anchors": libraries,
            },
            "rows": rows,
        }  # fmt: skip
        (out / f"{slug}.json").write_text(json.dumps(results, indent=1) + "\n")
        (out / f"{slug}.md").write_text(markdown_table(results))
        plot_results(results, slug, out / f"{slug}.png")
        print(markdown_table(results))
    return 0
