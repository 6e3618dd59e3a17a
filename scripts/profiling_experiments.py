"""Module 01's measurements on one GPU: timers, matmul and MLP scaling, the profiler, GeLU variants, ncu and proton.

    python scripts/profiling_experiments.py --out OUT [--sections a,b] [--budget 165]     (repository root)

Sections (the first seven by default): timer_pitfalls, matmul, mlp_scaling (small enough that the host sets the pace), mlp_scaling_large
(large enough that the GPU does), profiler_kernels (torch.profiler tables), gelu_variants and sincos (module 02's
opening: eager against torch.compile against the Triton solution); then, on the rmsnorm forward at 16384 x 4096
bf16, the course's solution against tests/submissions/rmsnorm/slow_spills.py (one warp holding two rows: it spills):
profilers, Nsight Compute (where installed: SpeedOfLight, LaunchStats, Occupancy, WarpStateStats,
MemoryWorkloadAnalysis and the local-memory bytes) and proton; diagnose, the grader's "why slow" sentence for
both, and the spilling kernel's facts read by cuobjdump from its cubin (what the CPU tests read) against the
driver's (what the grader reads on a GPU). Writes under OUT:

    profiling.json      every section's numbers (merged with an OUT/profiling.json already there: copy the
                        committed results/<gpu>/profiling.json in to add one section to it)
    profile_*.txt       torch.profiler tables (top rows); profile_fusion.txt holds module 02's six
    ncu_<which>*.txt, proton_<which>.hatchet/.txt, profile_summary.txt   the profilers' reports

A section starts only when the time budget (--budget seconds) has room for it; profiling.json is rewritten
after each, so a run cut short keeps what it measured. ncu profiles a child: this script with --child WHICH.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import course.env  # noqa: E402,F401  (before triton)
from autograder.timing import back_to_back_ms, copy_bandwidth_gbps, interleaved_ms  # noqa: E402
from course.results import Sections, run_meta, section_parser  # noqa: E402

DEV = torch.device("cuda")
RMSNORM = {"solution": REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py",
           "slow_spills": REPO_ROOT / "tests" / "submissions" / "rmsnorm" / "slow_spills.py"}  # fmt: skip
RMSNORM_SHAPE = (16384, 4096)
NCU_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "MemoryWorkloadAnalysis")
NCU_LOCAL = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"  # spill bytes


def tflops(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) / 1e12


def profile(out: Path, name: str, fn: Callable[[], object], iters: int = 3, rows: int = 12) -> list[dict[str, Any]]:
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
    sort = next(
        k for k in ("device_time_total", "cuda_time_total") if hasattr(averages[0], k)
    )  # renamed across torch versions
    table = averages.table(sort_by=sort, row_limit=rows, max_name_column_width=70)
    (out / f"profile_{name}.txt").write_text(f"# {name}: {iters} calls, {torch.cuda.get_device_name()}\n{table}\n")
    kernels = []  # entries that spend device time themselves and are not framework rows
    for evt in averages:
        t = float(getattr(evt, "self_" + sort, 0.0))
        if t > 0 and not evt.key.startswith(("aten::", "cuda", "Memcpy", "Memset", "autograd", "Optimizer")):
            kernels.append({"name": evt.key[:160], "calls_per_iter": evt.count / iters, "us_per_iter": t / iters})
    return sorted(kernels, key=lambda k: -k["us_per_iter"])


def compiled(fn: Callable) -> Callable:
    import torch._dynamo

    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    return torch.compile(fn, dynamic=False)


# --------------------------------------------------------------------------------------------------
# Module 01: timing pitfalls, matmul, MLP scaling, the profiler
# --------------------------------------------------------------------------------------------------


def timer_pitfalls(out: Path) -> dict[str, Any]:
    n, calls = 8192, 20
    a, b = (torch.randn(n, n, device=DEV, dtype=torch.bfloat16) for _ in range(2))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    a @ b  # the first matmul of the process: cuBLAS handle, workspace, kernel selection
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
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
    ev, flops = back_to_back_ms(lambda: a @ b, reps=calls), 2 * n**3
    print(
        f"first call {first_ms:.1f} ms; naive {naive_ms * 1e3:.1f} us/call; synced {statistics.median(synced):.3f} ms; events {ev:.3f} ms"
    )
    return {
        "op": f"bf16 matmul {n}x{n} @ {n}x{n}",
        "flops": flops,
        "calls": calls,
        "first_call_ms": first_ms,
        "naive_ms_per_call": naive_ms,
        "naive_then_sync_ms_per_call": drained_ms,
        "synced_median_ms": statistics.median(synced),
        "synced_mean_ms": statistics.mean(synced),
        "events_median_ms": ev,
        "tflops": {
            "naive": tflops(flops, naive_ms),
            "synced": tflops(flops, statistics.median(synced)),
            "events": tflops(flops, ev),
        },
    }


def matmul(out: Path) -> list[dict[str, Any]]:
    rows = []
    for dtype, sizes in (
        ("bfloat16", [1024, 2048, 4096, 8192, 16384]),
        ("float32", [1024, 2048, 4096, 8192]),
        ("tf32", [1024, 2048, 4096, 8192]),
    ):
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        for n in sizes:
            a, b = (
                torch.randn(n, n, device=DEV, dtype=torch.bfloat16 if dtype == "bfloat16" else torch.float32)
                for _ in range(2)
            )
            ms = back_to_back_ms(lambda: a @ b, reps=10 if n < 16384 else 5)
            rows.append({"dtype": dtype, "n": n, "ms": ms, "tflops": tflops(2 * n**3, ms)})
            print(f"matmul {dtype:8s} {n:6d}: {ms:9.3f} ms {rows[-1]['tflops']:7.1f} TFLOP/s")
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def make_mlp(width: int, layers: int) -> torch.nn.Module:
    blocks = [
        m for _ in range(layers) for m in (torch.nn.Linear(width, width, bias=False), torch.nn.GELU(approximate="tanh"))
    ]
    return torch.nn.Sequential(*blocks).to(device=DEV, dtype=torch.bfloat16)


def mlp_steps(model: torch.nn.Module, x: torch.Tensor, steps: int) -> None:
    for _ in range(steps):
        model(x).float().square().mean().backward()


def mlp_scaling(base: dict[str, int]) -> dict[str, Any]:
    """The MLP's training steps with one knob doubled and quadrupled at a time, against what counting FLOPs predicts."""
    rows = []
    for knob, factor in [("base", 1)] + [(k, f) for k in ("steps", "layers", "batch", "width") for f in (2, 4)]:
        cfg = {k: v * (factor if k == knob else 1) for k, v in base.items()}
        model, x = (
            make_mlp(cfg["width"], cfg["layers"]),
            torch.randn(cfg["batch"], cfg["width"], device=DEV, dtype=torch.bfloat16),
        )
        ms = back_to_back_ms(lambda: mlp_steps(model, x, cfg["steps"]), reps=7, warmup=2)
        flops = 6 * cfg["batch"] * cfg["width"] ** 2 * cfg["layers"] * cfg["steps"]  # matmuls, forward + backward
        rows.append(
            {
                "knob": knob,
                "factor": factor,
                **cfg,
                "ms": ms,
                "matmul_flops": flops,
                "tflops": tflops(flops, ms),
                "actual_ratio": ms / rows[0]["ms"] if rows else 1.0,
                "expected_ratio": factor ** (2 if knob == "width" else 1),
            }
        )
        print(f"mlp {knob:6s} x{factor}: {cfg} {ms:8.3f} ms {rows[-1]['tflops']:6.1f} TFLOP/s")
    return {"base": base, "rows": rows}


def profiler_kernels(out: Path) -> dict[str, list[dict[str, Any]]]:
    x, y = torch.randn(4096, 4096, device=DEV), torch.randn(4096, 4096, device=DEV)
    s, big = (torch.randn(n, n, device=DEV, dtype=torch.bfloat16) for n in (128, 8192))
    model, xm = make_mlp(1024, 4), torch.randn(1024, 1024, device=DEV, dtype=torch.bfloat16)
    return {"add": profile(out, "add", lambda: x + y), "matmul_small": profile(out, "matmul_small", lambda: s @ s),
            "matmul_large": profile(out, "matmul_large", lambda: big @ big),
            "mlp_fwd_bwd": profile(out, "mlp", lambda: mlp_steps(model, xm, 1), iters=2, rows=16)}  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Module 02's opening: GeLU written out, from the library, compiled and in Triton; sin^2 + cos^2
# --------------------------------------------------------------------------------------------------


def variants(out: Path, prefix: str, fns: dict[str, Callable[[], object]], nbytes: int, rows: int) -> dict[str, Any]:
    """Each variant timed (interleaved, L2 flushed) and profiled; the tables appended to profile_fusion.txt."""
    ms = interleaved_ms(fns, 20, DEV, warmup_ms=20, min_warmup_calls=3)
    kernels = {}
    for name, fn in fns.items():
        tag = f"{prefix}_{name.split()[0].replace('.', '_').lower()}"
        kernels[name] = profile(out, tag, fn, iters=2, rows=rows)
        with open(out / "profile_fusion.txt", "a") as merged:  # one file for the tables: few files come back from a run
            merged.write((out / f"profile_{tag}.txt").read_text() + "\n")
        (out / f"profile_{tag}.txt").unlink()
        print(
            f"{prefix} {name:14s} {ms[name] * 1e3:8.1f} us, {len(kernels[name])} kernels: "
            + ", ".join(k["name"][:40] for k in kernels[name])
        )
    return {"shape": [16384, 8192], "ms": ms, "bytes_min": nbytes, "kernels": kernels}


def gelu_variants(out: Path) -> dict[str, Any]:
    from autograder.specs import fusion as spec
    from course.loader import load_kernels

    (out / "profile_fusion.txt").unlink(missing_ok=True)
    solution, gelu_c = load_kernels("fusion", "solutions"), compiled(spec.eager_gelu)
    x = torch.randn(16384, 8192, device=DEV, dtype=torch.bfloat16)
    fns = {"eager ops": lambda: spec.eager_gelu({"x": x}, {}), "F.gelu": lambda: F.gelu(x, approximate="tanh"),
           "torch.compile": lambda: gelu_c({"x": x}, {}), "triton": lambda: solution.gelu(x)}  # fmt: skip
    return {"dtype": "bfloat16", **variants(out, "gelu", fns, 2 * x.nbytes, rows=10)}


def sincos(out: Path) -> dict[str, Any]:
    def fn(t: torch.Tensor) -> torch.Tensor:
        return torch.sin(t) ** 2 + torch.cos(t) ** 2

    t, fn_c = torch.randn(16384, 8192, device=DEV), compiled(fn)
    return {
        "dtype": "float32",
        **variants(out, "sincos", {"eager": lambda: fn(t), "torch.compile": lambda: fn_c(t)}, 2 * t.nbytes, rows=8),
    }


# --------------------------------------------------------------------------------------------------
# The rmsnorm solution against a spilling kernel: ncu, proton, and the grader's diagnosis
# --------------------------------------------------------------------------------------------------


def rmsnorm_call(which: str) -> Callable[[], torch.Tensor]:
    from course.loader import load_module

    mod = load_module(RMSNORM[which], f"profiled_{which}")
    x = torch.randn(*RMSNORM_SHAPE, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(RMSNORM_SHAPE[1], device=DEV, dtype=torch.bfloat16)
    return lambda: mod.rmsnorm(x, w)


def profilers(out: Path) -> list[str]:
    """Nsight Compute (where installed) on one steady-state launch of each, then proton over 20 calls."""
    import triton.profiler as proton

    ncu = shutil.which("ncu")
    summary = [f"{torch.cuda.get_device_name()}; torch {torch.__version__}; ncu at {ncu}"]
    if ncu is None:
        summary.append("ncu: not installed on this machine; the Nsight Compute part did not run.")
    for which in RMSNORM if ncu else []:
        child = [sys.executable, str(Path(__file__).resolve()), "--out", str(out), "--child", which]
        for suffix, extra in (
            ("", [a for s in NCU_SECTIONS for a in ("--section", s)]),
            ("_local", ["--metrics", NCU_LOCAL]),
        ):
            cmd = [
                ncu,
                "--target-processes",
                "all",
                "--kernel-name",
                "regex:rmsnorm|_rows_kernel",
                "--launch-skip",
                "2",
                "--launch-count",
                "1",
                *extra,
                *child,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            (out / f"ncu_{which}{suffix}.txt").write_text(
                f"$ {' '.join(cmd)}\n(exit {proc.returncode})\n{proc.stdout}\n{proc.stderr}"
            )
            summary.append(f"ncu {which}{suffix}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")
    for which in RMSNORM:
        call = rmsnorm_call(which)
        call()  # compile outside the profile
        torch.cuda.synchronize()
        proton.start(str(out / f"proton_{which}"), hook="triton")
        with proton.scope(f"rmsnorm {which} x20"):
            for _ in range(20):
                call()
            torch.cuda.synchronize()
        proton.finalize()
        tree = json.loads((out / f"proton_{which}.hatchet").read_text())[0]
        lines = proton_lines(tree)
        (out / f"proton_{which}.txt").write_text("\n".join(lines) + "\n")
        summary += [f"proton {which}:", *lines]
    (out / "profile_summary.txt").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))
    return summary


def proton_lines(node: dict[str, Any], depth: int = 0) -> list[str]:
    """Proton's .hatchet tree as indented lines: scope or kernel, calls, total and mean time.

    Triton's own viewer (`python -m triton.profiler.viewer`) needs the llnl-hatchet package, which the course's
    environment does not carry; the file is plain JSON: [root {frame: {name}, metrics, children}, device info].
    """
    m = node.get("metrics", {})
    count, ns = m.get("count", 0), m.get("time (ns)", 0)
    timing = f"{count} calls, {ns / 1e3:.1f} us, {ns / max(count, 1) / 1e3:.2f} us each" if count else ""
    lines = [f"{'  ' * depth}{node['frame']['name']}  {timing}".rstrip()]
    for child in node.get("children", []):
        lines += proton_lines(child, depth + 1)
    return lines


def diagnose(out: Path) -> dict[str, Any]:
    """The grader's first rmsnorm forward speed case for both: the slow one's report must name the spills, the
    solution's its kernel and no spills; and the spilling kernel's facts, from the driver and from its cubin."""
    from autograder.diagnose import facts_from_compiled, facts_from_cubin
    from autograder.grade import Selection, grade_assignment
    from course.loader import load_module

    found: dict[str, Any] = {}
    for which, path in RMSNORM.items():
        result = grade_assignment(
            "rmsnorm", path, "cuda", selection=Selection(tasks={"rmsnorm.forward"}, max_cases=1, max_speed_cases=1)
        )
        found[which] = [{"case": c.name, "status": c.status, "score": c.score, "message": c.message, "kernels": c.extra.get("kernels")}
                        for c in result.cases if c.kind == "speed"]  # fmt: skip
        print(
            "\n".join(
                f"diagnose {which} {c['case']}: {c['status']} {c['score']:.2f}: {c['message']}" for c in found[which]
            )
        )
    mod = load_module(RMSNORM["slow_spills"], "slow_spills")
    x, grid = torch.randn(*RMSNORM_SHAPE, device=DEV, dtype=torch.bfloat16), (RMSNORM_SHAPE[0] // 2,)
    compiled_kernel = mod._rows_kernel[grid](
        x, x[0], torch.empty_like(x), *RMSNORM_SHAPE, 1e-6, ROWS=2, BLOCK_N=4096, num_warps=1
    )
    driver = facts_from_compiled("_rows_kernel", grid, compiled_kernel)  # what the grader reads on a GPU
    cubin = facts_from_cubin("_rows_kernel", grid, compiled_kernel)  # what the CPU tests read
    found["cubin_vs_driver"] = {
        "driver": driver.plain() if driver else None,
        "cubin": cubin.plain(),
        "same": driver == cubin,
    }
    good, slow = (found[w][0]["message"] if found[w] else "" for w in RMSNORM)
    found["checks"] = {"slow_names_spills": "spills" in slow and "Kernel:" in slow,
                       "solution_has_kernel_facts": "Kernel:" in good and " 0 spilled" in good,
                       "cubin_agrees_with_driver": driver == cubin}  # fmt: skip
    print(f"diagnose checks: {found['checks']}")
    return found


SECTIONS: dict[str, tuple[float, Callable[[Path], Any]]] = {  # name: (seconds it needs of the budget, measurement)
    "timer_pitfalls": (10, timer_pitfalls), "matmul": (20, matmul),
    "mlp_scaling": (15, lambda out: mlp_scaling({"steps": 2, "layers": 4, "batch": 1024, "width": 1024})),
    "mlp_scaling_large": (30, lambda out: mlp_scaling({"steps": 2, "layers": 4, "batch": 4096, "width": 4096})),
    "profiler_kernels": (15, profiler_kernels), "gelu_variants": (15, gelu_variants), "sincos": (5, sincos),
    "profilers": (60, profilers), "diagnose": (30, diagnose),
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = section_parser(__doc__, list(SECTIONS), default=list(SECTIONS)[:7], smoke=False)  # the profilers on demand
    parser.add_argument("--budget", type=float, default=165.0, help="seconds; a section that would not fit is skipped")
    parser.add_argument(
        "--child", choices=sorted(RMSNORM), help="(the process ncu profiles) run that rmsnorm 5 times and exit"
    )
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("profiling_experiments.py measures a GPU: run it on a machine with a CUDA GPU.")
        return 2
    if args.child:
        call = rmsnorm_call(args.child)
        for _ in range(5):
            call()
        torch.cuda.synchronize()
        return 0
    run = Sections(args.out / "profiling.json", run_meta("python scripts/profiling_experiments.py " + " ".join(argv or sys.argv[1:])),
                   budget_s=args.budget, merge=True)  # fmt: skip
    run.results["copy_gbps"] = copy_bandwidth_gbps(DEV)
    for name in args.sections:
        need, measure = SECTIONS[name]
        run.run(name, lambda measure=measure: measure(args.out), need_s=need)
    return 0


if __name__ == "__main__":
    sys.exit(main())
