"""Grade one assignment of one submission: correctness case by case, then speed on a GPU."""

from __future__ import annotations

import io
import math
import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from autograder.checking import check_meta, compare
from autograder.runner import Worker, WorkerLost
from autograder.spec import DTYPES, Assignment, Part, SpeedCase, generator
from autograder.specs import load_spec


@dataclass
class CaseResult:
    task: str
    name: str
    status: str  # passed | failed | error | not_implemented | timeout | skipped
    score: float
    max_score: float
    message: str = ""
    bonus: bool = False
    kind: str = "correctness"  # or "speed"
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)  # speed: ms, baseline_ms, speedup, gbps, pct_copy


@dataclass
class AssignmentResult:
    slug: str
    title: str
    tier: str
    cases: list[CaseResult]
    note: str = ""  # e.g. why speed was not graded

    def score(self, bonus: bool) -> float:
        return sum(c.score for c in self.cases if c.bonus == bonus)

    def max_score(self, bonus: bool) -> float:
        return sum(c.max_score for c in self.cases if c.bonus == bonus)


class Seeds:
    """Per-case seeds: unpredictable by default; a fixed base (the repo's own tests) makes runs repeatable."""

    def __init__(self, base: int | None) -> None:
        self.base = base
        self.count = 0

    def next(self) -> int:
        self.count += 1
        if self.base is None:
            return secrets.randbits(62)
        return (self.base * 1_000_003 + self.count * 7919) % (1 << 62)


Progress = Callable[[str], None]


def _points(part: Part, tier: str) -> float:
    return part.points / max(1, len(part.cases_for(tier)))


def _load_outputs(blob: bytes) -> dict[str, torch.Tensor]:
    return torch.load(io.BytesIO(blob), weights_only=True)


def _judge(part: Part, params: dict, reply: dict, reference: dict[str, torch.Tensor], device: torch.device) -> tuple[bool, str]:
    """Whether a case's reply is correct, and a sentence when it is not."""
    if reply["forbidden_ops"]:
        ops = ", ".join(reply["forbidden_ops"][:6])
        return False, (
            f"The graded call computed with PyTorch ({ops}). Besides your Triton kernels it may only "
            "allocate, view and copy tensors: compute the result in your kernel."
        )
    if reply["launches"] == 0:
        return False, "The graded call launched none of the Triton kernels in your kernels.py: the result must come from your kernel."
    if reply["inputs_changed"]:
        names = ", ".join(f"`{n}`" for n in reply["inputs_changed"])
        return False, f"Your code changed its input {names}: inputs must be left as they were (write into a new tensor)."
    outputs = _load_outputs(reply["outputs"])
    dtype = DTYPES[params["dtype"]]
    worst = 0.0
    for name, ref in reference.items():
        meta = reply["meta"].get(name)
        if meta is None:
            return False, f"The call returned no `{name}`."
        if meta["type"] != "Tensor":
            return False, f"`{name}` should be a torch.Tensor, but the call returned {meta['type']}."
        problem = check_meta(name, outputs[name], tuple(ref.shape), dtype, "cpu")
        if not problem and meta["device"] != device.type:
            problem = f"`{name}` is on {meta['device']}, but should be on {device.type} like the inputs."
        if problem:
            return False, problem
        verdict = compare(name, outputs[name].to(ref.device), ref, part.tolerances[params["dtype"]])
        if not verdict.ok:
            return False, verdict.message
        worst = max(worst, verdict.max_error)
    return True, f"max error {100 * worst:.2g}% of the tolerance"


def _correctness(spec: Assignment, part: Part, tier: str, worker: Worker, device: torch.device, seeds: Seeds,
                 timeout: float, progress: Progress) -> list[CaseResult]:
    results = []
    cases = part.cases_for(tier)
    for i, case in enumerate(cases, 1):
        progress(f"{spec.slug} · {part.task} · case {i}/{len(cases)} {case.name}")
        pts = _points(part, tier)
        result = CaseResult(part.task, case.name, "failed", 0.0, pts, bonus=part.bonus)
        t0 = time.perf_counter()
        if worker.import_error:
            result.status, result.message = "error", worker.import_error
            results.append(result)
            continue
        seed = seeds.next()
        try:
            reply = worker.request({"op": "case", "task": part.task, "params": case.params, "seed": seed}, timeout, f"running {case.name}")
        except WorkerLost as lost:
            result.status = "timeout" if str(lost).startswith("Timed out") else "error"
            result.message = str(lost)
        else:
            if reply["status"] != "ok":
                result.status, result.message = reply["status"], reply["message"]
            else:
                inputs = part.make_inputs(case.params, generator(seed, device), device)
                reference = part.reference(inputs, case.params)
                ok, message = _judge(part, case.params, reply, reference, device)
                result.status, result.message = ("passed" if ok else "failed"), message
                result.score = pts if ok else 0.0
        result.seconds = time.perf_counter() - t0
        results.append(result)
    return results


def speed_points(speedup: float, target: float, points: float, zero_at: float = 1.0) -> float:
    """None at `zero_at` or slower, all at `target` or faster, log-linear in between."""
    if not math.isfinite(speedup) or speedup <= zero_at:
        return 0.0
    return points * min(1.0, math.log(speedup / zero_at) / math.log(target / zero_at))


def _speed(spec: Assignment, index: int, worker: Worker, device: torch.device, seeds: Seeds, reps: int,
           timeout: float) -> CaseResult:
    sc = spec.speed[index]
    result = CaseResult(sc.task, sc.name, "failed", 0.0, sc.points, kind="speed", bonus=sc.bonus)
    pool_seeds = [seeds.next() for _ in range(4)]
    check = secrets.randbelow(len(pool_seeds))
    try:
        reply = worker.request(
            {"op": "speed", "index": index, "task": sc.task, "params": sc.params, "seeds": pool_seeds, "check_index": check, "reps": reps},
            timeout, f"timing {sc.name}",
        )  # fmt: skip
    except WorkerLost as lost:
        result.status, result.message = "error", str(lost)
        return result
    if reply["status"] != "ok":
        result.status, result.message = reply["status"], reply["message"]
        return result
    # The output of a timed call is checked too: a fast wrong answer earns nothing.
    part = spec.part(sc.task)
    inputs = part.make_inputs(sc.params, generator(pool_seeds[check], device), device)
    ref = next(iter(part.reference(inputs, sc.params).values()))
    out = _load_outputs(reply["outputs"]).get("out")
    problem = check_meta("output", out, tuple(ref.shape), DTYPES[sc.params["dtype"]], "cpu")
    verdict = compare("output", out.to(ref.device), ref, part.tolerances[sc.params["dtype"]]) if not problem else None
    if problem or not verdict.ok:
        result.message = "The output of a timed call was wrong: " + (problem or verdict.message)
        return result
    ms = statistics.median(reply["times"]["submission"])
    base_ms = statistics.median(reply["times"]["baseline"])
    speedup = base_ms / ms
    gbps = sc.bytes_moved(sc.params) / (ms * 1e-3) / 1e9
    pct = 100.0 * gbps / reply["copy_gbps"]
    result.score = speed_points(speedup, sc.target_speedup, sc.points, sc.zero_at)
    result.status = "passed" if result.score >= sc.points - 1e-9 else "failed"
    result.extra = {"ms": ms, "baseline_ms": base_ms, "speedup": speedup, "gbps": gbps, "pct_copy": pct,
                    "copy_gbps": reply["copy_gbps"], "target_speedup": sc.target_speedup,
                    "baseline": sc.baseline_name}
    rate = f"{gbps:,.0f} GB/s = {pct:.0f}% of copy bandwidth"
    if sc.flops is not None:
        result.extra["tflops"] = sc.flops(sc.params) / (ms * 1e-3) / 1e12
        rate = f"{result.extra['tflops']:,.0f} TFLOP/s, {gbps:,.0f} GB/s"
    zero = f", none at {sc.zero_at:g}x" if sc.zero_at != 1.0 else ""
    result.message = (
        f"{ms * 1e3:.1f} us, {speedup:.2f}x {sc.baseline_name} ({base_ms * 1e3:.1f} us), {rate}; "
        f"full points at {sc.target_speedup:g}x{zero}"
    )
    return result


def grade_assignment(slug: str, kernels_file: Path, device_name: str, seed: int | None = None,
                     timeout: float | None = None, reps: int = 50, progress: Progress = lambda s: None) -> AssignmentResult:
    spec = load_spec(slug)
    tier = "gpu" if device_name == "cuda" else "cpu"
    device = torch.device(device_name)
    timeout = timeout or (120.0 if tier == "cpu" else 180.0)
    seeds = Seeds(seed)
    result = AssignmentResult(slug, spec.title, tier, [])
    if not kernels_file.exists():
        message = f"There is no {kernels_file}: copy the starter code from assignments/{slug}/kernels.py."
        for part in spec.parts:
            for case in part.cases_for(tier):
                result.cases.append(CaseResult(part.task, case.name, "error", 0.0, _points(part, tier), message, bonus=part.bonus))
        return result
    worker = Worker(slug, kernels_file, device_name, import_timeout=timeout)
    try:
        try:
            worker.start()
        except WorkerLost as lost:
            worker.import_error = f"kernels.py could not be imported. {lost}"
        passed_tasks = set()
        for part in spec.parts:
            cases = _correctness(spec, part, tier, worker, device, seeds, timeout, progress)
            result.cases += cases
            if cases and all(c.status == "passed" for c in cases):
                passed_tasks.add(part.task)
        if tier == "cpu":
            result.note = "Speed was not graded: there is no GPU here, and the CPU interpreter says nothing about GPU speed."
            for sc in spec.speed:
                result.cases.append(CaseResult(sc.task, sc.name, "skipped", 0.0, 0.0, "not graded on a CPU", kind="speed",
                                               bonus=sc.bonus))
        else:
            for index, sc in enumerate(spec.speed):
                progress(f"{slug} · {sc.task} · timing {sc.name}")
                if sc.task not in passed_tasks:
                    result.cases.append(CaseResult(sc.task, sc.name, "skipped", 0.0, sc.points,
                                                   f"not timed: every correctness case of {sc.task} must pass first",
                                                   kind="speed", bonus=sc.bonus))
                else:
                    result.cases.append(_speed(spec, index, worker, device, seeds, reps, timeout))
    finally:
        worker.cleanup()
    return result
