"""`python -m autograder tune SLUG`: measure a solution's launch settings on this GPU and write its table entry.

Each solution declares what to try next to its kernels (SEARCH_SPACE in the configuration section of its
kernels.py): per kernel, shape buckets with a few calls each, and candidate settings. For every bucket,
each candidate is forced on its kernel and its outputs checked against the spec's float64 reference on the
bucket's first call; the correct ones are then timed together, interleaved call by call, with the grader's
timer (L2 flushed before each call). The fastest by geometric mean over the bucket's calls goes into
solutions/<slug>/configs.json under this GPU's name (for an autotuner's list, the fastest few), with the
GPU, date and versions; buckets the search space does not cover keep the GPU's earlier settings, if any. Then
the solution's MEASUREMENTS (values measured rather than chosen, such as a tile's speed against another) run
with this run's choices in force. `--smoke` runs the same path under the CPU interpreter on the spec's first CPU
case, two candidates per search space (the times mean nothing), so that the tests exercise it.
"""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from autograder import timing
from autograder.checking import compare
from autograder.spec import Part, generator
from autograder.specs import load_spec
from course.configs import ConfigTable, SearchSpace, dump_table
from course.device import Device, device_of
from course.env import interpreter_requested
from course.loader import load_module

REPO_ROOT = Path(__file__).resolve().parent.parent
SEED = 1234  # tuning compares candidates on the same inputs; grading draws fresh ones


@dataclass
class Trial:
    """One candidate in one bucket: whether it was correct, and its median time on each call."""

    value: Any
    problem: str = ""  # why it was left out: a wrong output, an error
    ms: list[float] = field(default_factory=list)
    score: float = math.inf  # geometric mean of its time over the fastest candidate's, call by call


@dataclass
class BucketResult:
    kernel: str
    bucket: str
    calls: list[dict]
    trials: list[Trial]
    chosen: Any = None


def describe(value: Any) -> str:
    """Settings in a line: `block=2048 num_warps=4`; a list's entries separated by ` | `."""
    if isinstance(value, list):
        return " | ".join(describe(v) for v in value)
    if isinstance(value, dict):
        return " ".join(f"{k}={describe(v)}" if isinstance(v, (dict, list)) else f"{k}={v}" for k, v in value.items())
    return str(value)


def _check(module: ModuleType, part: Part, params: dict, inputs: dict, reference: dict) -> str:
    """'' when the call's outputs match the reference, else what is wrong, in a sentence."""
    try:
        out = part.call(module, inputs, params)
        for name, want in reference.items():
            verdict = compare(name, out[name], want, part.tolerance(params))
            if not verdict.ok:
                return verdict.message.split(". ")[0]
    except Exception as exc:  # noqa: BLE001  (a candidate that does not compile or launch is left out)
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    return ""


def tune_bucket(module: ModuleType, spec_part: Part, space: SearchSpace, bucket: str, calls: list[dict],
                candidates: list[Any], device: torch.device, reps: int) -> BucketResult:
    """Check, then time, every candidate on the bucket's calls; choose as the space says."""
    table = module.CONFIGS
    trials = [Trial(c) for c in candidates]
    pools = []
    for params in calls:
        pool = [spec_part.make_inputs(params, generator(SEED + i, device), device) for i in range(2)]
        if spec_part.setup is not None:
            pool = [{**inputs, **spec_part.setup(module, inputs, params)} for inputs in pool]
        pools.append(pool)
    references = [spec_part.reference(pool[0], params) for params, pool in zip(calls, pools)]
    for trial in trials:  # correctness first, on each call's first input set (this also compiles)
        for params, pool, reference in zip(calls, pools, references):
            table.forced_hits.clear()
            with table.forcing(space.kernel, bucket, trial.value):
                trial.problem = _check(module, spec_part, params, pool[0], reference)
            if not trial.problem and (space.kernel, bucket) not in table.forced_hits:
                trial.problem = f"the call {params} does not reach {space.kernel} [{bucket}]: fix the search space's buckets"
            if trial.problem:
                break
    good = [t for t in trials if not t.problem]
    cuda = device.type == "cuda"
    for params, pool in zip(calls, pools):
        fns: dict[str, Callable[[int], object]] = {}
        for n, trial in enumerate(good):
            def call(i: int, value: Any = trial.value, params: dict = params, pool: list = pool) -> object:
                table.force(space.kernel, bucket, value)
                return spec_part.call(module, pool[i], params)

            fns[str(n)] = call
        try:
            times = timing.time_interleaved(fns, len(pool), reps, device, warmup_ms=5.0 if cuda else 0.0,
                                            min_warmup_calls=3 if cuda else 1)  # fmt: skip
        finally:
            table.force(space.kernel, bucket, None)
        for n, trial in enumerate(good):
            trial.ms.append(timing.median(times[str(n)]))
    for k in range(len(calls)):
        best = min((t.ms[k] for t in good), default=math.nan)
        for t in good:
            t.score = (t.score if k else 1.0) * (t.ms[k] / best) ** (1 / len(calls))
    ranked = sorted(good, key=lambda t: t.score)
    result = BucketResult(space.kernel, bucket, calls, trials)
    if ranked:
        if space.keep:
            # An autotuner's list: each call's fastest first, then the best of the rest.
            picks = [min(good, key=lambda t, k=k: t.ms[k]) for k in range(len(calls))]
            order: list[Trial] = []
            for t in sorted(picks, key=lambda t: t.score) + ranked:
                if all(t is not o for o in order):
                    order.append(t)
            order = order[: space.keep]
            result.chosen = [entry for t in order for entry in t.value]
        else:
            result.chosen = ranked[0].value
    return result


def _smoke_jobs(module: ModuleType, spec_parts: dict[str, Part], log: Callable[[str], None]) -> list[tuple]:
    """For every search space, the first of its buckets that one of the spec's CPU cases reaches, on that
    case, with two candidates (a space no CPU case reaches, such as a 16-bit one, is said and skipped)."""
    jobs, cpu = [], torch.device("cpu")
    for space in module.SEARCH_SPACE:
        part, table = spec_parts[space.task], module.CONFIGS
        found = None
        for case in part.cases_for("cpu"):
            inputs = part.make_inputs(case.params, generator(SEED, cpu), cpu)
            inputs = {**inputs, **(part.setup(module, inputs, case.params) if part.setup else {})}
            table.forced_hits.clear()
            for bucket in space.buckets:
                table.force(space.kernel, bucket, space.candidates[0])
            try:
                _check(module, part, case.params, inputs, {})
            finally:
                for bucket in space.buckets:
                    table.force(space.kernel, bucket, None)
            found = next((b for b in space.buckets if (space.kernel, b) in table.forced_hits), None)
            if found:
                jobs.append((space, found, [case.params], space.candidates[:2]))
                break
        if not found:
            log(f"{space.kernel} {list(space.buckets)}: no CPU-tier case of {space.task} reaches them; skipped")
    return jobs


def tune(slug: str, gpu_name: str | None = None, smoke: bool = False, out: Path | None = None, reps: int = 20,
         log: Callable[[str], None] = print, kernels: set[str] | None = None) -> list[BucketResult]:
    """Tune every search space of the solution (or those of `kernels`) on this device and write the entry (to `out`,
    if given or not smoke); the table's other kernels keep the GPU's earlier settings."""
    if smoke and not interpreter_requested():
        raise RuntimeError("--smoke runs under Triton's CPU interpreter: set TRITON_INTERPRET=1 (or run it without a GPU).")
    device = torch.device("cpu") if interpreter_requested() else torch.device("cuda")
    if device.type != "cuda" and not smoke:
        raise RuntimeError("tune times kernels on a GPU, and there is none here: run it on a GPU machine "
                           "(`--smoke` checks the tuner itself under the CPU interpreter).")  # fmt: skip
    module = load_module(REPO_ROOT / "solutions" / slug / "kernels.py", name=f"tune_{slug}_kernels")
    spec = load_spec(slug)
    parts = {p.task: p for p in spec.parts}
    if smoke:
        jobs = _smoke_jobs(module, parts, log)
        reps = 2
    else:
        jobs = [(space, bucket, calls, space.candidates) for space in module.SEARCH_SPACE
                for bucket, calls in space.buckets.items()]  # fmt: skip
    if kernels is not None:
        known = {space.kernel for space in module.SEARCH_SPACE}
        known |= {m.kernel for m in getattr(module, "MEASUREMENTS", [])}
        if not kernels <= known:
            raise RuntimeError(f"{slug} declares no search space for {sorted(kernels - known)}: its kernels are {sorted(known)}.")
        jobs = [job for job in jobs if job[0].kernel in kernels]
    dev: Device = device_of(torch.empty(0, device=device))
    name = gpu_name or dev.name
    results = []
    for space, bucket, calls, candidates in jobs:
        result = tune_bucket(module, parts[space.task], space, bucket, calls, candidates, device, reps)
        results.append(result)
        log(report_bucket(slug, result))
    entry: dict[str, Any] = {"meta": {
        "measured_on": dev.name, "capability": list(dev.capability), "sms": dev.sms, "smem_per_block": dev.smem_per_block,
        "date": datetime.date.today().isoformat(), "torch": torch.__version__, "triton": _triton_version(),
        "command": " ".join(["python -m autograder tune", slug] + ([f"--gpu-name '{gpu_name}'"] if gpu_name else [])
                            + ([f"--kernels {','.join(sorted(kernels))}"] if kernels else []) + (["--smoke"] if smoke else [])),
    }}  # fmt: skip
    for r in results:
        if r.chosen is not None:
            entry.setdefault(r.kernel, {})[r.bucket] = r.chosen
    for kernel, bucket, value in _measure(module, entry, dev, device, reps, log, kernels):
        entry.setdefault(kernel, {})[bucket] = value
    path = out or (None if smoke else REPO_ROOT / "solutions" / slug / "configs.json")
    if path is not None:
        write_entry(path, name, entry, module.CONFIGS.path)
        log(f"wrote the entry for {name} to {path}" + ("" if smoke else f"; run `python -m autograder release {slug}` next"))
        for line in ConfigTable(json.loads(path.read_text()), module.CONFIGS.path).stale():
            log(line)  # another GPU's settings that predate a setting this table's reference now has
    return results


def _measure(module: ModuleType, entry: dict, dev: Device, device: torch.device, reps: int,
             log: Callable[[str], None], kernels: set[str] | None) -> list[tuple[str, str, Any]]:
    """The solution's MEASUREMENTS on this device, with the settings this run chose in force (a speed measured
    against a tile must be against the tile this GPU will launch); (kernel, bucket, value) for each value."""
    cuda = device.type == "cuda"

    def time(fns: dict[str, Callable[[], object]]) -> dict[str, float]:
        times = timing.time_interleaved({k: (lambda i, f=f: f()) for k, f in fns.items()}, 1, reps, device,
                                        warmup_ms=5.0 if cuda else 0.0, min_warmup_calls=3 if cuda else 1)  # fmt: skip
        return {k: timing.median(v) for k, v in times.items()}

    table, found = module.CONFIGS, []
    chosen = [(k, b, v) for k, buckets in entry.items() if k != "meta" for b, v in buckets.items()]
    for kernel, bucket, value in chosen:
        table.force(kernel, bucket, value)
    try:
        for m in getattr(module, "MEASUREMENTS", []):
            if kernels is not None and m.kernel not in kernels:
                continue
            for bucket in m.buckets:
                value = m.measure(dev, bucket, time)
                said = "not on this GPU" if value is None else f"measured: {describe(value)}"
                log(f"{m.kernel} [{bucket}]: {said}")
                if value is not None:
                    found.append((m.kernel, bucket, value))
    finally:
        for kernel, bucket, _ in chosen:
            table.force(kernel, bucket, None)
    return found


def write_entry(path: Path, name: str, entry: dict, template: Path) -> None:
    """Put one GPU's entry into the table at `path` (started from `template`, the solution's table, when new).

    Buckets this run did not measure keep the GPU's earlier settings, if it had an entry, and the meta says
    which: re-tuning the reference GPU on a subset must not drop what the other GPUs' rules start from.
    """
    source = path if path.exists() else template
    data = json.loads(source.read_text())
    gpus = data.setdefault("gpus", {})
    merged, kept = {"meta": entry["meta"]}, []
    old = gpus.get(name, {})
    for kernel in [k for k in old if k != "meta"] + [k for k in entry if k not in old and k != "meta"]:
        buckets = dict(old.get(kernel, {}))
        kept += [f"{kernel} [{b}]" for b in buckets if b not in entry.get(kernel, {})]
        buckets.update(entry.get(kernel, {}))
        merged[kernel] = buckets
    if kept:
        merged["meta"]["kept"] = f"not re-measured, as of {old.get('meta', {}).get('date', 'an earlier entry')}: " + ", ".join(kept)
        # and where those came from: the earlier run's meta, less what it in turn kept
        merged["meta"]["earlier"] = {k: v for k, v in old.get("meta", {}).items() if k not in ("kept", "earlier")}
    gpus[name] = merged
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_table(data))


def report_bucket(slug: str, r: BucketResult, top: int = 3) -> str:
    calls = "; ".join(" ".join(f"{k}={v}" for k, v in p.items()) for p in r.calls)
    good = sorted((t for t in r.trials if not t.problem), key=lambda t: t.score)
    lines = [f"{slug} {r.kernel} [{r.bucket}] on {calls}: {len(good)} of {len(r.trials)} candidates correct"]
    for t in good[:top]:
        times = ", ".join(f"{ms * 1e3:,.1f} us" for ms in t.ms)
        lines.append(f"   {t.score:5.3f}x  {times:>24}  {describe(t.value)}")
    for t in r.trials:
        if t.problem:
            lines.append(f"   left out: {describe(t.value)}: {t.problem}")
    lines.append(f"   chosen: {describe(r.chosen)}" if r.chosen is not None else "   chosen: nothing (no candidate was correct)")
    return "\n".join(lines)


def _triton_version() -> str:
    import triton

    return triton.__version__
