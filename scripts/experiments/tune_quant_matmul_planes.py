"""EXPERIMENT: scripts/tune_quant_matmul.py's sweep, pointed at the rejected "nibble planes" rewrite in
scripts/experiments/quant_matmul_planes_kernels.py instead of the solution, with a grid for that
kernel's settings. Its table goes to results/h200/tune_quant_matmul_planes_configs.json, never to the
solution's. Kept as the record behind results/h200/tune_quant_matmul_planes.txt; what follows describes
the shared procedure.

    python3 scripts/experiments/tune_quant_matmul_planes.py [--out DIR] [--write-table] [--jobs 14] [--quick]
    TRITON_INTERPRET=1 python3 scripts/experiments/tune_quant_matmul_planes.py --smoke --out /tmp/x    # plumbing only

1. Compiling is most of the cost of a sweep, so every setting is first compiled, run once and checked
   against a float64 reference (and run again, to catch a split-K race) by a pool of worker processes;
   Triton's on-disk cache is shared, so the main process then loads each kernel instead of compiling it.
2. The main process times every setting alone on the GPU, as the grader times (L2 flushed, medians).
3. Per format and M bucket it keeps the fastest setting over the shapes measured at that M and writes
   the table to OUT/quant_matmul_configs.json (and, with --write-table, to results/h200/, where the
   solution reads it).
4. A fresh pool then runs every GPU-tier case of the grading spec with those settings, checking the
   solution as the grader will and leaving its float32 and bfloat16 kernels compiled for
   `python -m autograder grade` afterwards.
5. Finally the public API against cuBLAS fp16 and torch's int4 kernel, by M; a table is printed last.

Besides the solution itself it times a variant made from its source: the decoders with a plain
int -> float conversion instead of the exact-float trick ("i2f"), to show what that trick buys.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

SOLUTION = REPO_ROOT / "scripts" / "experiments" / "quant_matmul_planes_kernels.py"  # the kernels under test
VARIANTS: dict[str, list[tuple[str, str]]] = {
    # name -> [(text in the solution, replacement)]: variants made from the solution's source
}
_modules: dict[str, Any] = {}
_TABLE_PATH = REPO_ROOT / "results" / "h200" / "tune_quant_matmul_planes_configs.json"
PREVIOUS_TABLE: dict = json.loads(_TABLE_PATH.read_text()) if _TABLE_PATH.exists() else {}


def variant_path(name: str, out: Path) -> Path:
    """The variant's source file: in a folder beside the output, not in it (only results come back)."""
    return SOLUTION if name == "solution" else out.parent / f"{out.name}_variants" / f"kernels_{name}.py"


def write_variants(out: Path) -> None:
    text = SOLUTION.read_text()
    for name, edits in VARIANTS.items():
        src = text
        for old, new in edits:
            assert old in src, f"variant {name}: '{old}' is no longer in the solution"
            src = src.replace(old, new)
        variant_path(name, out).parent.mkdir(parents=True, exist_ok=True)
        variant_path(name, out).write_text(src)


def module(name: str, out: Path) -> Any:
    if name not in _modules:
        from course.loader import load_module

        _modules[name] = load_module(variant_path(name, out), name=f"qm_{name}")
    return _modules[name]


# --------------------------------------------------------------------------------------------------
# Jobs: one launch setting on one shape. Workers compile, run and check them; the main process times.
# --------------------------------------------------------------------------------------------------


def make_inputs(job: dict, device: Any) -> dict:
    from autograder.spec import generator
    from autograder.specs import quant_matmul as spec

    params = {"M": job["M"], "K": job["K"], "N": job["N"], "dtype": job["dtype"]}
    if job["bits"] == 4:
        params["group_size"] = job["G"]
        return spec.make_w4_inputs(params, generator(1234 + job["M"], device), device)
    return spec.make_w8_inputs(params, generator(1234 + job["M"], device), device)


def job_fn(job: dict, inputs: dict, out: Path) -> Any:
    """A zero-argument callable that runs the job's launch once and returns y."""
    k = module(job["module"], out)
    cfg = (k.GemvConfig if job["path"] == "gemv" else k.DotConfig)(**job["cfg"])
    x = inputs["x"]
    if job["bits"] == 8:
        return lambda: k.w8a16_launch(x, inputs["w_int8"], inputs["scales"], cfg)
    words = inputs["w_packed"].view(k.torch.int32)
    return lambda: k.w4a16_launch(x, words, inputs["scales"], job["G"], cfg)


def check(job: dict, inputs: dict, y: Any) -> tuple[bool, str]:
    from autograder.checking import compare
    from autograder.specs import quant_matmul as spec

    params = {"M": job["M"], "K": job["K"], "N": job["N"], "dtype": job["dtype"], "group_size": job.get("G")}
    ref = (spec.reference_w4 if job["bits"] == 4 else spec.reference_w8)(inputs, params)["y"]
    verdict = compare("y", y, ref, spec.TOLERANCES[job["dtype"]])
    return verdict.ok, (f"{verdict.max_error:.3f} of tol" if verdict.ok else verdict.message[:300])


def run_group(jobs: list[dict], out_dir: str) -> list[dict]:
    """Worker: compile, run and check each job of one compile group (same kernel and constexprs)."""
    import course.env  # noqa: F401
    import torch

    out = Path(out_dir)
    device = course.env.DEVICE
    results = []
    for job in jobs:
        t0 = time.perf_counter()
        try:
            inputs = make_inputs(job, device)
            fn = job_fn(job, inputs, out)
            y = fn()
            ok, msg = check(job, inputs, y)
            if ok and job.get("repeat"):  # split-K: the result must not depend on which split came last
                for _ in range(job["repeat"]):
                    if not torch.equal(fn(), y):
                        ok, msg = False, "result changed between identical calls (race?)"
                        break
            results.append({**job, "ok": ok, "msg": msg, "compile_s": time.perf_counter() - t0})
        except Exception as exc:  # noqa: BLE001
            results.append({**job, "ok": False, "msg": f"{type(exc).__name__}: {str(exc)[:400]}",
                            "trace": traceback.format_exc()[-1500:], "compile_s": time.perf_counter() - t0})
    return results


def run_spec_case(case: dict, out_dir: str) -> dict:
    """Worker: one GPU-tier case of the grading spec through the public API, judged as the grader does."""
    import course.env  # noqa: F401

    from autograder.checking import compare
    from autograder.spec import generator
    from autograder.specs import quant_matmul as spec

    device = course.env.DEVICE
    k = module("solution", Path(out_dir))
    t0 = time.perf_counter()
    try:
        part = spec.ASSIGNMENT.part(case["task"])
        inputs = part.make_inputs(case["params"], generator(99, device), device)
        prepared = part.setup(k, inputs, case["params"]) if part.setup else {}
        y = part.call(k, {**inputs, **prepared}, case["params"])["y"]
        verdict = compare("y", y, part.reference(inputs, case["params"])["y"], part.tolerances[case["params"]["dtype"]])
        return {**case, "ok": verdict.ok, "msg": f"{verdict.max_error:.3f} of tol" if verdict.ok else verdict.message[:300],
                "seconds": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001
        return {**case, "ok": False, "msg": f"{type(exc).__name__}: {str(exc)[:400]}", "seconds": time.perf_counter() - t0}


def _worker_init() -> None:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")


# --------------------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------------------


def gemv(bn: int, bk: int, warps: int, per_sm: int, stages: int = 3) -> dict:
    return {"block_n": bn, "block_k": bk, "num_warps": warps, "programs_per_sm": per_sm, "num_stages": stages}


def dot(bn: int, bm: int, bk: int, warps: int, stages: int, per_sm: int, dot_16bit: bool) -> dict:
    return {"block_n": bn, "block_m": bm, "block_k": bk, "num_warps": warps, "num_stages": stages,
            "programs_per_sm": per_sm, "dot_16bit": dot_16bit}


def block_m_for(m: int) -> int:
    return max(16, 1 << (m - 1).bit_length())


MS = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def sweep_jobs(quick: bool, smoke: bool) -> list[dict]:
    jobs: list[dict] = []

    def add(bits: int, path: str, cfg: dict, m: int, k: int, n: int, mod: str = "solution") -> None:
        jobs.append({"bits": bits, "path": path, "cfg": cfg, "M": m, "K": k, "N": n, "G": 128, "dtype": "float16",
                     "module": mod, "repeat": 3})

    if smoke:
        add(4, "gemv", gemv(16, 256, 4, 4), 1, 512, 40)
        add(4, "gemv", gemv(16, 256, 4, 4), 3, 512, 40)
        add(4, "dot", dot(64, 16, 128, 4, 3, 2, True), 3, 512, 40)
        add(8, "gemv", gemv(16, 512, 4, 4), 1, 300, 40)
        add(8, "dot", dot(64, 16, 128, 4, 3, 2, True), 5, 300, 40)
        return jobs

    w4_shapes = [(4096, 14336), (4096, 4096), (14336, 4096)]  # (K, N)
    # W4A16 GEMV (all rows in one program) at M = 1 on all three shapes, at M = 2, 4, 8 on the largest:
    # steps of 32 to 128 words (128 to 512 contiguous bytes a row), partial sums kept <= 128 per thread
    for bn, bk, warps, stages in itertools.product([8, 16, 32, 64], [256, 512, 1024], [2, 4, 8], [2, 4]):
        words_per_thread = bn * (bk // 8) // (32 * warps)
        if not 4 <= words_per_thread <= 32:
            continue
        for m in (1, 2, 4, 8):
            if m * words_per_thread > 64:
                continue
            shapes = w4_shapes if m == 1 else w4_shapes[:1]
            for (k, n), per_sm in itertools.product(shapes, [1, 2, 4, 8]):
                add(4, "gemv", gemv(bn, bk, warps, per_sm, stages), m, k, n)
    # W4A16 dot kernel by M: eight tensor-core products a step, one per nibble plane
    for m in MS[1:]:
        bms = sorted({min(block_m_for(m), 128)} | ({64} if m >= 128 else set()))
        for bm, bn, bk, warps, stages in itertools.product(bms, [64, 128], [128, 256], [4, 8], [2, 3, 4]):
            if bn * bm // (32 * warps) > 128 or bn * (bk // 8) // (32 * warps) > 32:
                continue
            shapes = w4_shapes if m == 16 else w4_shapes[:2] if m == 64 else w4_shapes[:1]
            for (k, n), per_sm in itertools.product(shapes, [1, 2, 4, 8]):
                add(4, "dot", dot(bn, bm, bk, warps, stages, per_sm, True), m, k, n)
    # W8A16 GEMV at M = 1 (and 2, 4 against the dot kernel's committed settings)
    for bn, bk, warps, stages in itertools.product([8, 16, 32], [512, 1024, 2048], [2, 4, 8], [2, 4]):
        words_per_thread = bn * (bk // 4) // (32 * warps)
        if not 4 <= words_per_thread <= 32:
            continue
        for m in (1, 2, 4):
            if m * words_per_thread > 64:
                continue
            shapes = [(4096, 14336), (4096, 4096)] if m == 1 else [(4096, 14336)]
            for (k, n), per_sm in itertools.product(shapes, [1, 2, 4, 8]):
                add(8, "gemv", gemv(bn, bk, warps, per_sm, stages), m, k, n)
    old = json.loads(_TABLE_PATH.read_text())["w8"]
    for m in (2, 4, 8):
        if old.get(str(m), {}).get("path") == "dot":
            add(8, "dot", old[str(m)]["cfg"], m, 4096, 14336)
    return jobs


def group_key(job: dict) -> tuple:
    cfg = {k: v for k, v in job["cfg"].items() if k != "programs_per_sm"}
    return (job["bits"], job["path"], job["module"], job["dtype"], tuple(sorted(cfg.items())))


def priority(job: dict) -> int:
    """Order of compiling and timing: what the speed targets hang on first."""
    if job["module"] != "solution":
        return 6
    if job["bits"] == 4 and job["path"] == "gemv":
        return 0
    if job["bits"] == 4 and job["M"] in (2, 4, 8, 16, 64):
        return 1
    if job["bits"] == 8 and job["path"] == "gemv":
        return 2
    if job["bits"] == 4:
        return 3
    return 4


def dump(out: Path, data: dict) -> None:
    (out / "tune_quant_matmul.json").write_text(json.dumps(data, indent=0, default=str))


def spec_cases() -> list[dict]:
    from autograder.specs import quant_matmul as spec

    cases = []
    for part in spec.ASSIGNMENT.parts:
        for case in part.cases_for("gpu"):
            cases.append({"task": part.task, "params": case.params, "name": case.name})
    for sc in spec.ASSIGNMENT.speed:
        cases.append({"task": sc.task, "params": sc.params, "name": "speed " + sc.name})
    return cases


# --------------------------------------------------------------------------------------------------
# Timing (main process only)
# --------------------------------------------------------------------------------------------------


def time_fns(fns: dict, reps: int, device: Any) -> dict[str, float]:
    """Median ms per call of each fn, interleaved, L2 flushed before each call (as the grader times)."""
    from autograder import timing

    if device.type != "cuda":
        out = {}
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            out[name] = (time.perf_counter() - t0) * 1e3
        return out
    times = timing.time_interleaved({k: (lambda i, f=f: f()) for k, f in fns.items()}, 1, reps, device,
                                    warmup_ms=1.0, min_warmup_calls=3)
    return {k: statistics.median(v) for k, v in times.items()}


def choose_table(timed: list[dict], gpu: str) -> dict:
    """Per format and M bucket, the (path, settings) with the best geometric-mean time over the shapes
    measured at that M (only settings measured on all of them compete)."""
    table: dict = {"gpu": gpu, "date": datetime.date.today().isoformat(),
                   "note": "written by scripts/tune_quant_matmul.py; read by solutions/quant_matmul/kernels.py"}
    for bits in (4, 8):
        entries = {}
        for m in MS:
            rows = [r for r in timed if r["bits"] == bits and r["M"] == m and r["module"] == "solution"]
            shapes = {(r["K"], r["N"]) for r in rows}
            by_cfg: dict[str, list[dict]] = {}
            for r in rows:
                by_cfg.setdefault(json.dumps([r["path"], r["cfg"]], sort_keys=True), []).append(r)
            scored = []
            for key, rs in by_cfg.items():
                if {(r["K"], r["N"]) for r in rs} == shapes:
                    scored.append((statistics.geometric_mean([r["ms"] for r in rs]), key))
            if scored:
                best = min(scored)[1]
                path, cfg = json.loads(best)
                entries[str(m)] = {"path": path, "cfg": cfg,
                                   "us": {f"{r['K']}x{r['N']}": round(r["ms"] * 1e3, 2) for r in by_cfg[best]}}
        committed = PREVIOUS_TABLE.get(f"w{bits}", {})
        for m in MS:  # buckets the sweep left out (the W8A16 dot kernel's) keep their committed settings
            if str(m) not in entries and str(m) in committed:
                entries[str(m)] = committed[str(m)]
        table[f"w{bits}"] = dict(sorted(entries.items(), key=lambda e: int(e[0])))
    return table


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/tune_quant_matmul")))
    ap.add_argument("--jobs", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes under the interpreter: the plumbing only")
    ap.add_argument("--no-spec", action="store_true", help="skip the grading spec's GPU cases")
    ap.add_argument("--write-table", action="store_true",
                    help="write the chosen settings to results/h200/tune_quant_matmul_planes_configs.json (which the experiment reads)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--compile-budget", type=float, default=70.0, help="seconds from the start for compiling and checking")
    ap.add_argument("--time-budget", type=float, default=120.0, help="seconds from the start for the sweep's timing")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()

    import course.env  # noqa: F401
    import torch
    import triton

    device = course.env.DEVICE
    gpu = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu (interpreter)"
    print(f"{gpu}; torch {torch.__version__}, triton {triton.__version__}; {args.jobs} compile workers", flush=True)
    write_variants(args.out)

    jobs = sweep_jobs(args.quick, args.smoke)
    groups: dict[tuple, list[dict]] = {}
    for job in jobs:
        groups.setdefault(group_key(job), []).append(job)
    print(f"{len(jobs)} sweep jobs in {len(groups)} compile groups", flush=True)
    ctx = mp.get_context("spawn")

    # 1. Compile, run and check every setting in parallel, most important groups first, until the budget.
    checked: list[dict] = []
    deadline = t_start + args.compile_budget
    with ctx.Pool(args.jobs, initializer=_worker_init) as pool:
        pending = [pool.apply_async(run_group, (g, str(args.out))) for g in sorted(groups.values(), key=lambda g: priority(g[0]))]
        for p in pending:
            try:
                checked += p.get(timeout=max(0.1, deadline - time.perf_counter()))
            except mp.TimeoutError:
                break
        pool.terminate()
    t_compiled = time.perf_counter()
    bad = [r for r in checked if not r["ok"]]
    print(f"compiled and checked {len(checked)} of {len(jobs)} jobs in {t_compiled - t_start:.0f} s: {len(bad)} failed", flush=True)
    for r in bad[:12]:
        print(f"  FAIL {r['bits']}-bit {r['path']} {r['module']} M={r['M']} K={r['K']} N={r['N']} {r['cfg']}: {r['msg']}")
        if "trace" in r and r is bad[0]:
            print(r["trace"])
    dump(args.out, {"checked": checked})

    # 2. Time every setting that passed, alone on the GPU, shape by shape, until the budget.
    inputs_cache: dict[tuple, dict] = {}
    timed: list[dict] = []
    order = sorted((j for j in checked if j["ok"]), key=lambda j: (priority(j), j["bits"], j["M"], j["K"], j["N"]))
    for job in order:
        if time.perf_counter() > t_start + args.time_budget:
            print("timing budget spent: the rest of the sweep is left out", flush=True)
            break
        key = (job["bits"], job["M"], job["K"], job["N"])
        if key not in inputs_cache:
            inputs_cache.clear()
            inputs_cache[key] = make_inputs(job, device)
        fn = job_fn(job, inputs_cache[key], args.out)
        ms = time_fns({"k": fn}, args.reps, device)["k"]
        timed.append({**{k: v for k, v in job.items() if k != "trace"}, "ms": ms})
    inputs_cache.clear()
    t_timed = time.perf_counter()
    print(f"timed {len(timed)} jobs in {t_timed - t_compiled:.0f} s", flush=True)
    table = choose_table(timed, gpu)
    (args.out / "quant_matmul_configs.json").write_text(json.dumps(table, indent=1) + "\n")
    if args.write_table:
        k = module("solution", args.out)
        k.CONFIG_TABLE.parent.mkdir(parents=True, exist_ok=True)
        k.CONFIG_TABLE.write_text(json.dumps(table, indent=1) + "\n")
        k._tuned.cache_clear()
        print(f"wrote {k.CONFIG_TABLE}", flush=True)
    dump(args.out, {"checked": checked, "sweep": timed, "table": table})

    # 3. With the chosen settings in place: every GPU-tier case of the grading spec, in fresh workers
    #    (which compile the float32 and bfloat16 kernels the grader will need), judged as the grader does.
    cases = [] if (args.smoke or args.no_spec) else spec_cases()
    spec_results: list[dict] = []
    if cases:
        with ctx.Pool(args.jobs, initializer=_worker_init) as pool:
            spec_results = pool.starmap(run_spec_case, [(c, str(args.out)) for c in cases])
    spec_bad = [r for r in spec_results if not r["ok"]]
    t_spec = time.perf_counter()
    print(f"grading-spec GPU cases with the chosen settings: {len(spec_results) - len(spec_bad)}/{len(spec_results)} "
          f"correct ({t_spec - t_timed:.0f} s)", flush=True)
    for r in spec_bad:
        print(f"  FAIL {r['task']} {r['name']}: {r['msg']}")

    # 4. Baselines and the solution's own picks, by M, timed together.
    from autograder.specs import quant_matmul as spec

    k = module("solution", args.out)
    by_m: list[dict] = []
    shapes = [(512, 40, 4), (512, 40, 8)] if args.smoke else [(4096, 14336, 4), (4096, 4096, 4), (14336, 4096, 4), (4096, 14336, 8)]
    for kk, nn, bits in shapes:
        for m in ([1, 3] if args.smoke else MS):
            job = {"bits": bits, "M": m, "K": kk, "N": nn, "G": 128, "dtype": "float16"}
            inputs = make_inputs(job, device)
            params = {**job, "group_size": 128}
            fns = {}
            if bits == 4:
                fns["solution"] = lambda i=inputs: k.w4a16_matmul(i["x"], i["w_packed"], i["scales"], 128)
            else:
                fns["solution"] = lambda i=inputs: k.w8a16_matmul(i["x"], i["w_int8"], i["scales"])
            dense = spec._dense_weight(inputs, params)
            fns["cuBLAS fp16"] = lambda i=inputs, w=dense: i["x"] @ w.T
            if bits == 4 and device.type == "cuda":
                try:
                    packed, sz = spec.tinygemm_weights(inputs, 128)
                    xb = inputs["x"].to(torch.bfloat16)
                    ib = {**inputs, "x": xb, "scales": inputs["scales"].to(torch.bfloat16)}
                    if m == 1 and kk == 4096 and nn == 14336:
                        ok, msg = check({**job, "dtype": "bfloat16"}, ib, torch.ops.aten._weight_int4pack_mm(xb, packed, 128, sz))
                        print(f"torch int4 (tinygemm) against the float64 reference: {'ok' if ok else 'WRONG'} {msg}")
                    fns["torch int4 (bf16)"] = lambda xb=xb, p=packed, s=sz: torch.ops.aten._weight_int4pack_mm(xb, p, 128, s)
                except Exception as exc:  # noqa: BLE001
                    print(f"torch int4 failed: {type(exc).__name__}: {exc}")
            ok, msg = check(job, inputs, fns["solution"]())
            res = time_fns(fns, 30 if device.type == "cuda" else 1, device)
            by_m.append({"bits": bits, "M": m, "K": kk, "N": nn, "ok": ok, "msg": msg, "ms": res})
            del inputs, dense, fns
    t_end = time.perf_counter()

    # 5. Report.
    meta = {"gpu": gpu, "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "date": datetime.date.today().isoformat(), "command": "python3 scripts/tune_quant_matmul.py " + " ".join(sys.argv[1:]),
            "seconds": {"compile_check": t_compiled - t_start, "sweep": t_timed - t_compiled, "spec": t_spec - t_timed,
                        "by_m": t_end - t_spec}}
    dump(args.out, {"meta": meta, "sweep": timed, "failed": bad, "table": table, "spec_cases": spec_results, "by_m": by_m})
    report(timed, by_m, table)
    print(f"total {time.perf_counter() - t_start:.0f} s")
    return 0 if not bad and not spec_bad else 1


def fmt_cfg(r: dict) -> str:
    c = r["cfg"]
    if r["path"] == "gemv":
        s = f"gemv bn{c['block_n']} bk{c['block_k']} w{c['num_warps']} s{c.get('num_stages', 3)} p{c['programs_per_sm']}"
    else:
        s = (f"dot bn{c['block_n']} bm{c['block_m']} bk{c['block_k']} w{c['num_warps']} s{c['num_stages']} "
             f"p{c['programs_per_sm']} {'f16' if c['dot_16bit'] else 'tf32'}")
    return s + ("" if r.get("module", "solution") == "solution" else f" [{r['module']}]")


def report(timed: list[dict], by_m: list[dict], table: dict) -> None:
    print("\n== best settings per (format, M, K, N); top 3, time in us ==")
    keys = sorted({(r["bits"], r["M"], r["K"], r["N"]) for r in timed})
    for key in keys:
        rows = sorted((r for r in timed if (r["bits"], r["M"], r["K"], r["N"]) == key), key=lambda r: r["ms"])
        best = " | ".join(f"{r['ms'] * 1e3:6.1f} {fmt_cfg(r)}" for r in rows[:3])
        print(f"W{key[0]} M={key[1]:<3} K={key[2]:<5} N={key[3]:<5}: {best}")
        for label, pick in (("gemv", lambda r: r["path"] == "gemv" and r["module"] == "solution"),
                            ("dot", lambda r: r["path"] == "dot"),
                            ("i2f", lambda r: r["module"] == "i2f")):
            sub = [r for r in rows if pick(r)]
            if sub and sub[0] is not rows[0]:
                print(f"{'':28s} best {label}: {sub[0]['ms'] * 1e3:6.1f} {fmt_cfg(sub[0])}")
    print("\n== chosen per M bucket ==")
    for bits in (4, 8):
        for m, e in table.get(f"w{bits}", {}).items():
            print(f"W{bits} M<={m:<4} {fmt_cfg({'path': e['path'], 'cfg': e['cfg']})}  {e['us']}")
    print("\n== the solution (public API, chosen settings) against the baselines (us; ratio = cuBLAS / solution) ==")
    for r in by_m:
        ms = r["ms"]
        base = ms.get("cuBLAS fp16")
        cells = " ".join(f"{name}={t * 1e3:.1f}" for name, t in ms.items())
        ratio = f"{base / ms['solution']:.2f}x" if base else ""
        int4 = f" vs int4 {ms['torch int4 (bf16)'] / ms['solution']:.2f}x" if "torch int4 (bf16)" in ms else ""
        print(f"W{r['bits']} M={r['M']:<3} K={r['K']:<5} N={r['N']:<5} {'ok' if r['ok'] else 'WRONG'} {ratio:>6}{int4}  {cells}")


if __name__ == "__main__":
    sys.exit(main())
