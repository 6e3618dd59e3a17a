"""Grade one assignment of one submission: correctness case by case, then speed on a GPU.

Everything that is scored is computed here, in the grader's process, which never imports the
submission: inputs are rebuilt from the seed, the float64 reference computed, every output compared,
the speed-up, the physical floor and the points worked out.

Three processes take part (docs/integrity.md): the worker runs the submission and records each call
(its outputs and its tape, the ops and launches it made); the replayer, which runs none of the
submission's Python, replays that tape on new inputs the worker never saw and, for speed, times it;
this process judges both. A case passes only when the worker's output and the replay's are both
right: what the worker says cannot make an answer count that the submission's own kernels did not
compute. Case i is replayed while the worker runs case i + 1.
"""

from __future__ import annotations

import hashlib
import math
import os
import secrets
import statistics
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from autograder import diagnose
from autograder import tape as tapes
from autograder import timing
from autograder.checking import Verdict, check_meta, compare, fmt_percent, physical_floor
from autograder.runner import Replayer, Worker, WorkerLost
from autograder.spec import COPY, DTYPES, Assignment, Case, Params, Part, SpeedCase, Tolerance
from autograder.specs import load_spec
from course.device import INTERPRETER, Device, cuda_device, lacks_tma, not_gradeable

# Timed calls whose outputs the grader checks, drawn at random after the timing: a submission that is
# wrong (stale, skipped, unfinished) on half its timed calls passes all of them with probability 1/32.
CHECKED_TIMED_CALLS = 5
WARMUP_INPUTS = 2  # input sets the warm-up cycles over, none of them used again in a timed call
# Timing stops before `reps` once MIN_REPS timed calls have run and the spread (interquartile range over
# median) of the kernel's and the baseline's times is at most SETTLED_SPREAD; the committed H200 stability
# runs (results/h200/stability_2026-11-21.md) had spreads of 0.3-3% on all but the 4096^3 matmul (7-10%), which keeps
# its 50. The checked outputs are drawn among the first MIN_REPS calls, which always run.
MIN_REPS = 20
SETTLED_SPREAD = 0.03
# Once a case has run out of time, the rest of its part is not run, and every later case of the
# assignment gets this fraction of the time limit: a kernel that hangs costs one limit, not one per case.
HUNG_LIMIT_FRACTION = 0.25


@dataclass
class CaseResult:
    task: str
    name: str
    status: str  # passed | failed | error | not_implemented | timeout | skipped | not_gradeable (this GPU lacks a feature)
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


@dataclass
class Selection:
    """Which cases to grade: every one by default; a few for quick runs and for the repo's own tests.

    Per-case points stay those of the full rubric, so a subset's score is a part of the full score.
    """

    tasks: Collection[str] | None = None  # only these parts, and the speed cases timing them
    names: Collection[str] | None = None  # only the correctness cases with these names
    max_cases: int | None = None  # at most this many correctness cases per part, in the spec's order
    speed: bool | None = None  # None: speed on a GPU only; False: never; True: also on a CPU (timing-defence tests)
    max_speed_cases: int | None = None
    speed_params: dict[str, Any] | None = None  # merged into each speed case's parameters (small shapes on a CPU)
    case_tier: str | None = None  # grade this tier's cases whatever the device (the CPU tier's small cases on a GPU)

    def cases(self, part: Part, tier: str) -> list[Case]:
        if self.tasks is not None and part.task not in self.tasks:
            return []
        cases = [c for c in part.cases_for(self.case_tier or tier) if self.names is None or c.name in self.names]
        return cases[: self.max_cases] if self.max_cases is not None else cases

    def speed_cases(self, spec: Assignment) -> list[int]:
        chosen = [i for i, sc in enumerate(spec.speed) if self.tasks is None or sc.task in self.tasks]
        return chosen[: self.max_speed_cases] if self.max_speed_cases is not None else chosen


# Set by the repo's own tests (tests/conftest.py): with a fixed base, replays' seeds follow from it too, so that a
# wrong submission fails the same cases on every run. Grading, --seed or not, leaves it unset.
REPRODUCIBLE_REPLAYS_ENV = "AUTOGRADER_REPRODUCIBLE_REPLAYS"


class Seeds:
    """Per-case seeds: unpredictable by default; a fixed base makes the worker's inputs repeatable (--seed), and,
    for the repo's own tests and the mutation runs (`reproducible_replays`), the replays' too."""

    def __init__(self, base: int | None, reproducible_replays: bool | None = None) -> None:
        self.base = base
        if reproducible_replays is None:
            reproducible_replays = os.environ.get(REPRODUCIBLE_REPLAYS_ENV) == "1"
        self.reproducible_replays = reproducible_replays
        self.count = 0
        self.replays = 0  # its own count: a case's seed does not depend on how many replays came before

    def next(self) -> int:
        self.count += 1
        if self.base is None:
            return secrets.randbits(62)
        return (self.base * 1_000_003 + self.count * 7919) % (1 << 62)

    def replay(self) -> int:
        """A seed for the inputs a case's replay runs on, which the worker never sees: secret in grading, --seed
        or not (the base is on the grader's command line, and the worker's seeds give it away); only with
        reproducible replays (the repo's own tests, whose wrong submissions must fail the same cases on every run)
        a hash of the base."""
        if self.base is None or not self.reproducible_replays:
            return Seeds.secret()
        self.replays += 1
        digest = hashlib.sha256(f"replay:{self.base}:{self.replays}".encode()).digest()
        return int.from_bytes(digest[:8], "little") >> 2

    @staticmethod
    def secret() -> int:
        """A seed for inputs the worker must never know (a replay's, a timed call's): never fixed, not even by --seed."""
        return secrets.randbits(62)


@dataclass
class Limits:
    """The time limits of one assignment's requests, shortened once something has hung."""

    timeout: float
    hung: str = ""  # the name of the case that ran out of time, once one has

    @property
    def current(self) -> float:
        return self.timeout * HUNG_LIMIT_FRACTION if self.hung else self.timeout


Progress = Callable[[str], None]


def _points(part: Part, tier: str) -> float:
    return part.points / max(1, len(part.cases_for(tier)))


def _load_outputs(blob: Any) -> dict[str, torch.Tensor]:
    """Outputs from a reply: its tensors by name. Anything else in their place counts as no output. (Outputs once came
    as torch.save bytes, which this read with torch.load and none of a reply's checks: 2 MB deflated to a 2 GB tensor
    in the grader, red team 15.)"""
    if not isinstance(blob, dict):
        return {}
    return {k: v for k, v in blob.items() if isinstance(k, str) and type(v) is torch.Tensor}


def _refusal(reply: dict, note: str = "") -> str:
    """The first sentence about how the submission computed or behaved, or '' when nothing was seen."""
    if reply.get("problems"):
        return reply["problems"][0]
    if reply.get("forbidden_ops"):
        ops = ", ".join(reply["forbidden_ops"][:6])
        return (
            f"The graded call computed with PyTorch ({ops}). Besides your Triton kernels it may only "
            "allocate, view and copy tensors: compute the result in your kernel." + (f" {note}" if note else "")
        )
    if reply.get("launches", 1) == 0:
        return "The graded call launched none of the Triton kernels in your kernels.py: the result must come from your kernel."
    if reply.get("missing_kernel"):
        return tapes.missing_kernel(reply["missing_kernel"])
    if reply.get("other_stream"):
        return (
            "Your code launched a kernel on another CUDA stream: the grader times and checks the stream it "
            "calls you on, so launch every kernel on the current stream."
        )
    if reply.get("output_problem"):
        return reply["output_problem"]
    if reply.get("out_of_bounds"):
        return reply["out_of_bounds"][0]
    if reply.get("inputs_changed"):
        names = ", ".join(f"`{n}`" for n in reply["inputs_changed"])
        return f"Your code changed its input {names}: inputs must be left as they were (write into a new tensor)."
    return ""


def _judge(part: Part, params: dict, reply: dict, reference: dict[str, torch.Tensor], device: torch.device,
           note: str = "") -> tuple[bool, str]:
    """Whether a case's reply is correct, and a sentence when it is not."""
    refused = _refusal(reply, note)
    if refused:
        return False, refused
    outputs = _load_outputs(reply["outputs"])
    dtype = DTYPES[params["dtype"]]
    worst = 0.0
    for name, ref in reference.items():
        meta = reply["meta"].get(name)
        if meta is None:
            return False, f"The call returned no `{name}`."
        if meta["type"] != "Tensor":
            return False, f"`{name}` should be a torch.Tensor, but the call returned {meta['type']}."
        problem = check_meta(name, outputs.get(name), tuple(ref.shape), dtype, "cpu")
        if not problem and meta["device"] != device.type:
            problem = f"`{name}` is on {meta['device']}, but should be on {device.type} like the inputs."
        if problem:
            return False, problem
        verdict = compare(name, outputs[name].to(ref.device), ref, part.tolerance(params))
        if not verdict.ok:
            return False, verdict.message
        worst = max(worst, verdict.max_error)
    return True, f"max error {fmt_percent(100 * worst)} of the tolerance"


_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError, RuntimeError)


def _unreadable(exc: BaseException) -> str:
    return (
        f"The grader could not read the worker's reply ({type(exc).__name__}: {exc}): something changed what the "
        "worker sends back, so the case earns no points."
    )


def _replay_verdict(part: Part, params: dict, reply: dict, reference: dict[str, torch.Tensor], reads: int) -> tuple[bool, str]:
    """Whether the replay of a case's tape on new inputs gave the right answer, and a sentence when not."""
    if reply.get("status") == "refused":
        return False, str(reply.get("message", "The grader could not replay your call."))
    if reply.get("status") != "ok":
        return False, (
            "Your call's launches failed when the grader replayed them on new inputs of the same shapes: "
            f"{reply.get('message', '')}"
        )
    outputs = _load_outputs(reply.get("outputs", {}))
    wrong = _wrong_output(part, params, outputs, reference)
    if wrong:
        hint = (
            f" Your call read {reads} value(s) from tensors into Python (.item()): launches that depend on input "
            "values are not the same on new inputs." if reads else ""
        )
        if _near_miss(part, params, outputs, reference):
            return False, (
                "Your call's output was right, but the launches it made, replayed by the grader on new inputs of the "
                f"same shapes, gave an answer just outside the tolerance: {wrong} Your kernels round differently on "
                "other values: look for a step that loses precision on some inputs (a difference of two nearly equal "
                "numbers, a sum kept in 16 bits), and grade with a few values of --seed to find them." + hint
            )
        return False, (
            "Your call's output was right, but the launches it made, replayed by the grader on new inputs of the "
            "same shapes (in a process that runs only your kernels and allowed PyTorch ops), did not produce the "
            f"right answer: {wrong} So the answer did not come from your kernels: it was "
            "computed outside them (PyTorch or Python the record does not show), or read from memory filled "
            "before the call." + hint
        )
    if part.kernel_probe is not None:
        return _probe_verdict(part, params, reply.get("probe"), reference)
    return True, ""


def _probe_verdict(part: Part, params: dict, probe: Any, reference: dict[str, torch.Tensor]) -> tuple[bool, str]:
    """Whether the part's kernel, launched by the grader itself on the replay's inputs (Part.kernel_probe), gave the
    right answer too, and a sentence when not."""
    launched = probe.get("kernels") if isinstance(probe, dict) else None
    names = launched if isinstance(launched, list) and launched and all(isinstance(n, str) for n in launched) \
        else [part.probed_kernel]
    name = " and ".join(f"`{n}`" for n in names)
    these = "that kernel" if len(names) == 1 else "those kernels"
    how = ("its descriptors, a tile of the grader's choosing, programs that each take one or more tiles"
           if part.launches_with_descriptors else "its arguments, with launch settings of the grader's choosing")
    if len(names) > 1:
        how = how.replace("its ", "their ", 1)
    lead = (
        f"The grader also launches your {name} itself, as the given launcher does ({how}), on new inputs, since this "
        f"part grades {these}: "
    )
    if not isinstance(probe, dict):
        return False, lead + "the grader received no result from that launch."
    if isinstance(probe.get("error"), str):
        return False, lead + (
            f"that launch failed: {probe['error']} The grader passes the arguments of the kernel's given signature; "
            "keep it, and keep the kernel within the memory of its arguments."
        )
    wrong = _wrong_output(part, params, _load_outputs(probe), reference)
    if wrong:
        return False, lead + (
            f"its result was wrong: {wrong} Your call's own answer was right, so either the kernel is right only for "
            "your launcher's settings (make it right for any tile and any number of programs the handout allows) or "
            f"the answer came from elsewhere than {name}."
        )
    return True, ""


# A replay's answer within NEAR_MISS of the reference (relative, or of the tolerance's scale), and no NaN, is a kernel
# whose rounding depends on the values, not an answer that came from outside the kernels: that one, replayed on new
# inputs, finds memory the grader poisoned or the old inputs' answer, wrong in every digit.
NEAR_MISS = 0.05


def _near_miss(part: Part, params: dict, outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]) -> bool:
    tol = part.tolerance(params)
    loose = Tolerance(rtol=max(10 * tol.rtol, NEAR_MISS), atol=max(10 * tol.atol, NEAR_MISS), scale=tol.scale)
    for name, ref in reference.items():
        out = outputs.get(name)
        if check_meta(name, out, tuple(ref.shape), DTYPES[params["dtype"]], "cpu"):
            return False
        if not compare(name, out.to(ref.device), ref, loose).ok:
            return False
    return True


def _wrong_output(part: Part, params: dict, outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]) -> str:
    """The first output missing, misshapen or outside the part's tolerance against the reference, as a sentence; ''."""
    dtype = DTYPES[params["dtype"]]
    for name, ref in reference.items():
        out = outputs.get(name)
        problem = check_meta(name, out, tuple(ref.shape), dtype, "cpu")
        verdict = compare(name, out.to(ref.device), ref, part.tolerance(params)) if not problem else None
        if problem or not verdict.ok:
            return problem or verdict.message
    return ""


@dataclass
class _Pending:
    """A case whose replay is running while the worker runs the next one."""

    result: CaseResult
    request_id: str
    params: dict
    seed: int
    fixed_seed: int | None
    reads: int
    other_kept: str = ""  # the kept inputs, named, when this replay runs on other ones (see _replay_with_other_kept)


def _correctness(spec: Assignment, part: Part, cases: list[Case], tier: str, worker: Worker, replayer: Replayer,
                 device: torch.device, seeds: Seeds, limits: Limits, progress: Progress) -> list[CaseResult]:
    results: list[CaseResult] = []
    submission_file = os.path.realpath(worker.submission)
    pending: list[_Pending] = []

    def finish() -> None:
        """Judge the pending replays (a case's, and for kept inputs its second), waiting for them."""
        while pending:
            judge(pending.pop(0))

    def judge(job: _Pending) -> None:
        result = job.result
        waited = time.perf_counter()  # the replay ran while the worker worked: only the wait for it counts
        try:
            what = f"replaying {result.name}" + (
                f" and launching your {part.probed_kernel} on it with the grader's settings" if part.kernel_probe
                else "")
            reply = replayer.collect(job.request_id, limits.current, what)
        except WorkerLost as lost:
            timed_out = str(lost).startswith("Timed out")
            if result.status == "passed":  # a case's second replay, lost with the first's process, keeps its sentence
                result.status, result.score, result.message = ("timeout" if timed_out else "error"), 0.0, str(lost)
            if timed_out:
                limits.hung = limits.hung or result.name
            return
        finally:
            result.seconds += time.perf_counter() - waited
        inputs = part.inputs(job.params, job.seed, device, job.fixed_seed)
        try:
            ok, message = _replay_verdict(part, job.params, reply, part.reference(inputs, job.params), job.reads)
        except _UNREADABLE as exc:
            ok, message = False, _unreadable(exc)
        if not ok and job.other_kept:
            message = (
                f"Replayed with other {job.other_kept} of the same shapes, and what your setup step made from them, "
                f"your call's launches did not give the right answer. Those inputs stay the same from call to call, "
                f"so values derived from them and carried in the call (arguments, fills) answer only them: read them "
                f"in your kernel. {message}"
            )
        if not ok and result.status == "passed":
            result.status, result.message, result.score = "failed", message, 0.0
            if reply.get("over_write_budget") is True:
                result.extra["over_write_budget"] = True

    for i, case in enumerate(cases, 1):
        progress(f"{spec.slug} · {part.task} · case {i}/{len(cases)} {case.name}")
        pts = _points(part, tier)
        result = CaseResult(part.task, case.name, "failed", 0.0, pts, bonus=part.bonus)
        results.append(result)
        if worker.import_error:
            result.status, result.message = "error", worker.import_error
            continue
        if limits.hung and any(r.status == "timeout" for r in results[:-1]):
            _not_run(result, limits.hung)
            continue
        t0 = time.perf_counter()
        seed = seeds.next()
        try:
            reply = worker.request({"op": "case", "task": part.task, "params": case.params, "seed": seed}, limits.current,
                                   f"running {case.name}")  # fmt: skip
        except WorkerLost as lost:
            reply = None
            result.status = "timeout" if str(lost).startswith("Timed out") else "error"
            result.message = str(lost)
            if result.status == "timeout":
                limits.hung = limits.hung or case.name
        finish()  # the previous case's replay ran while the worker ran this one
        if limits.hung and any(r.status == "timeout" for r in results[:-1]):
            _not_run(result, limits.hung)
            continue
        result.seconds = time.perf_counter() - t0
        if reply is None:
            continue
        try:
            job = _judge_reply(spec, part, case, reply, seed, device, submission_file, result)
        except _UNREADABLE as exc:
            result.status, result.message, result.score = "error", _unreadable(exc), 0.0
            job = None
        if job is not None:
            fixed_seed = seed if part.setup_reads else None
            started = _submit_replay(replayer, part, case, reply["tape"], reply.get("prepared"), fixed_seed, seeds, result, pending)
            if started and part.setup_reads:
                _replay_with_other_kept(part, case, seed, reply, worker, replayer, seeds, limits, result, pending,
                                        finish)
    finish()
    _forfeit_past_write_budget(results)
    return results


def _forfeit_past_write_budget(results: list[CaseResult]) -> None:
    """Once one case of a part stored past the part's write budget, no case of the part passes. What kernels store is
    their technique, the same at every size, and at small sizes the technique a budget refuses stores no more than the
    one it allows (red team 23's causal forward that stored its triangle of scores passed the 8 cases whose keys were
    fewer than about twice the head dim, 24 points of 80)."""
    over = next((r for r in results if r.extra.get("over_write_budget")), None)
    if over is None:
        return
    for result in results:
        if result.status == "passed":
            result.status, result.score = "failed", 0.0
            result.message = (
                f"Right, but this part's points need every case within its write budget, and in case {over.name} "
                "your kernels stored more than the part allows (that case's sentence says what is counted). Stores "
                "are a property of your technique, not of a size: on small inputs the technique that budget refuses "
                "stores no more than the one it asks for. Change what that case's sentence names, and these cases "
                "pass again."
            )


def _replay_with_other_kept(part: Part, case: Case, seed: int, reply: dict, worker: Worker, replayer: Replayer,
                            seeds: Seeds, limits: Limits, result: CaseResult, pending: list[_Pending],
                            finish: Callable[[], None]) -> None:
    """For a part whose replays keep some inputs (the weights a setup step prepared from): replay the call's tape once
    more on other kept inputs of the same shapes, with what the setup step made from those (the worker runs it on
    them). The tape's launches and ops must not depend on the kept inputs' values: they stay the same in every
    ordinary replay, so anything derived from them and carried in the tape (a red team's dequantized weights, as the
    values of `fill_` calls) would answer it. Memory carried, and what setup returned, are judged by the allowance."""
    kept = ", ".join(f"`{name}`" for name in part.setup_reads)
    other = seeds.next()
    try:
        again = worker.request({"op": "case", "task": part.task, "params": case.params, "seed": seed, "fixed_seed": other},
                               limits.current, f"running {case.name} with other {kept}")  # fmt: skip
    except WorkerLost as lost:
        result.status = "timeout" if str(lost).startswith("Timed out") else "error"
        result.score, result.message = 0.0, f"Run with other {kept} of the same shapes: {lost}"
        if result.status == "timeout":
            limits.hung = limits.hung or result.name
        return
    if again.get("status") != "ok":
        result.status, result.score = "failed", 0.0
        result.message = f"Run with other {kept} of the same shapes, your call failed: {again.get('message', '')}"
        return
    # The first replay is judged before the second is sent: the replayer answers one request at a time, and a large
    # request sent while it writes a large answer would leave both processes writing, neither reading (on an H100, a
    # prepared layout of 235 MB against outputs of 0.9 MB held a grading until its time limit).
    finish()
    if result.status != "passed":
        return
    _submit_replay(replayer, part, case, reply["tape"], again.get("prepared"), other, seeds, result, pending, kept)


def _submit_replay(replayer: Replayer, part: Part, case: Case, tape: dict, prepared: Any, fixed_seed: int | None,
                   seeds: Seeds, result: CaseResult, pending: list[_Pending], other_kept: str = "") -> bool:
    """Start the replay of a case's tape on new inputs (the kept ones drawn from `fixed_seed`), to be judged when the
    grader next waits for it; False, with the case's sentence, when it could not start."""
    replay_seed = seeds.replay()  # inputs the worker never sees
    request = {"op": "case", "task": part.task, "params": case.params, "seed": replay_seed, "fixed_seed": fixed_seed,
               "tape": tape, "prepared": _load_outputs(prepared or {})}  # fmt: skip
    try:
        request_id = replayer.submit(request)
    except (WorkerLost, OSError, RuntimeError) as exc:
        result.status, result.score = "error", 0.0
        result.message = f"The grader could not start the replay of your kernels: {exc}"
        return False
    pending.append(_Pending(result, request_id, case.params, replay_seed, fixed_seed, tapes.scalar_reads(tape), other_kept))
    return True


def _not_run(result: CaseResult, hung: str) -> None:
    result.status, result.score = "skipped", 0.0
    result.message = (
        f"Not run: case {hung} ran out of time, so the rest of its part was not run (a kernel that never ends "
        "would cost every case a full time limit). Fix that case, then grade again."
    )


def _judge_reply(spec: Assignment, part: Part, case: Case, reply: dict, seed: int, device: torch.device,
                 submission_file: str, result: CaseResult) -> bool | None:
    """Judge the worker's reply into `result`; True when its tape must be replayed before the case can pass."""
    if not (isinstance(reply.get("status"), str) and reply["status"] == "ok"):
        status = reply["status"]
        result.status = status if status in ("error", "not_implemented") else "error"
        result.message = str(reply["message"])
        if reply.get("problems"):  # a refusal explains the error better than its exception
            result.message = str(reply["problems"][0])
        return None
    inputs = part.inputs(case.params, seed, device)
    reference = part.reference(inputs, case.params)
    ok, message = _judge(part, case.params, reply, reference, device, spec.forbidden_note)
    if ok:  # the worker's account holds: its tape must say the same, as data, and replay to the answer
        problem = tapes.problems(reply.get("tape"), submission_file, spec.forbidden_ops, device.type, spec.forbidden_note,
                                 part.launches_with_descriptors, part.launches)  # fmt: skip
        if problem:
            ok, message = False, problem
    result.status, result.message = ("passed" if ok else "failed"), message
    result.score = result.max_score if ok else 0.0
    return True if ok else None


def speed_points(speedup: float, target: float, points: float, zero_at: float = 1.0) -> float:
    """None at `zero_at` or slower, all at `target` or faster, log-linear in between."""
    if not math.isfinite(speedup) or speedup <= zero_at:
        return 0.0
    return points * min(1.0, math.log(speedup / zero_at) / math.log(target / zero_at))


@dataclass
class Peaks:
    """What the hardware can do, measured by the grader itself (never by the worker): the physical floor."""

    copy_gbps: float
    matmul_tflops: float


_PEAKS: dict[str, Peaks] = {}


def measured_peaks(device: torch.device) -> Peaks:
    """Copy bandwidth and matmul rate of `device`, measured once per grading process."""
    key = str(device)
    if key not in _PEAKS:
        _PEAKS[key] = Peaks(timing.copy_bandwidth_gbps(device), timing.matmul_tflops(device))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return _PEAKS[key]


def speed_verdict(sc: SpeedCase, params: Params, times: dict[str, list[float]], copy_gbps: float,
                  peaks: Peaks, reps: dict[str, int] | None = None) -> tuple[float, str, str, dict]:
    """(points, status, message, extra) for a speed case whose timed outputs were all correct.

    `extra` holds what a margin table needs: the time, the measure's value and threshold, the points."""
    ms = statistics.median(times["submission"])
    base_ms = statistics.median(times["baseline"])
    flops = sc.flops(params) if sc.flops is not None else None
    floor = physical_floor(ms, sc.bytes_moved(params), flops, peaks.copy_gbps, peaks.matmul_tflops)
    speedup = base_ms / ms if ms > 0 else float("nan")
    gbps = sc.bytes_moved(params) / (ms * 1e-3) / 1e9 if ms > 0 else float("nan")
    shown_copy = copy_gbps or peaks.copy_gbps
    pct = 100.0 * gbps / shown_copy if shown_copy else float("nan")
    value = pct / 100.0 if sc.measure == COPY else speedup
    extra = {"ms": ms, "baseline_ms": base_ms, "speedup": speedup, "gbps": gbps, "pct_copy": pct,
             "copy_gbps": shown_copy, "baseline": sc.baseline_name, "measure": sc.measure, "value": value,
             "target": sc.target, "zero_at": sc.zero_at, "margin": value / sc.target - 1 if sc.target else float("nan"),
             "floor_copy_gbps": peaks.copy_gbps, "floor_tflops": peaks.matmul_tflops,
             "reps": len(times["submission"]), "spread": timing.spread(times["submission"]),
             "baseline_spread": timing.spread(times["baseline"]), **(reps or {})}  # fmt: skip
    if flops is not None and ms > 0:
        extra["tflops"] = flops / (ms * 1e-3) / 1e12
    if floor:
        return 0.0, "failed", floor, extra
    score = speed_points(value, sc.target, sc.points, sc.zero_at)
    extra["points"] = score
    status = "passed" if score >= sc.points - 1e-9 else "failed"
    ratio = f"{speedup:.2f}x {sc.baseline_name} ({base_ms * 1e3:.1f} us)"
    if sc.measure == COPY:
        message = (f"{ms * 1e3:.1f} us, {gbps:,.0f} GB/s = {pct:.0f}% of the copy bandwidth measured now "
                   f"({shown_copy:,.0f} GB/s); {sc.describe()}. For information: {ratio}.")  # fmt: skip
    else:
        rate = f"{extra['tflops']:,.0f} TFLOP/s, {gbps:,.0f} GB/s" if "tflops" in extra else f"{gbps:,.0f} GB/s = {pct:.0f}% of copy bandwidth"
        message = f"{ms * 1e3:.1f} us, {ratio}, {rate}; {sc.describe()}"
    return score, status, message, extra


@dataclass
class _Recorded:
    """A speed case whose call the worker recorded: what the replayer needs to time it."""

    result: CaseResult
    index: int
    params: dict
    fixed_seed: int | None
    tape: Any
    prepared: dict


def _record_speed(spec: Assignment, index: int, worker: Worker, replayer: Replayer, device: torch.device, seeds: Seeds,
                  limits: Limits, selection: Selection) -> CaseResult | _Recorded:
    """The worker records one call of the speed case (after warm-up calls), and the replayer replays that call
    once, untimed, so that its kernels are compiled before the timing: a `_Recorded` ready to be timed, or the
    case's result when the recorded call cannot be timed. Nothing here is timed, so it may run beside other
    assignments' work."""
    sc = spec.speed[index]
    params = {**sc.params, **(selection.speed_params or {})}
    result = CaseResult(sc.task, Case(params, "gpu").name, "failed", 0.0, sc.points, kind="speed",
                        bonus=sc.bonus)
    part = spec.part(sc.task)
    fixed_seed = seeds.next() if part.setup_reads else None  # the weights a setup step prepares, the same in every call
    record = {"op": "record", "index": index, "task": sc.task, "params": params, "fixed_seed": fixed_seed,
              "seeds": [seeds.next() for _ in range(WARMUP_INPUTS + 1)]}  # warm-up calls, then the recorded one
    try:
        reply = worker.request(record, limits.current, f"recording a call of {result.name}")
        if reply["status"] != "ok":
            result.status = "error"
            result.message = reply["problems"][0] if reply.get("problems") else str(reply["message"])
            return result
        tape = reply.get("tape")
        problem = (
            (reply.get("problems") or [""])[0]
            or _recorded_call_problem(reply, spec.forbidden_note)
            or tapes.problems(tape, os.path.realpath(worker.submission), spec.forbidden_ops, device.type, spec.forbidden_note,
                              part.launches_with_descriptors, part.launches)
        )
        if not problem and tapes.scalar_reads(tape):
            problem = (
                f"Your call reads {tapes.scalar_reads(tape)} value(s) from tensors into Python (.item()), so its launches "
                "may depend on the values of its inputs: the grader times the launches it recorded on new inputs, which "
                "needs a sequence of launches fixed by the shapes alone. Decide launches from shapes and sizes."
            )
        if problem:
            result.message = "In the call recorded for timing: " + problem
            return result
        recorded = _Recorded(result, index, params, fixed_seed, tape, _load_outputs(reply.get("prepared") or {}))
        # The replay's verdict is the timing's to give: a replay that fails here fails there, on other inputs.
        replayer.collect(replayer.submit({**_tape_request(recorded, sc.task), "op": "warm", "seed": Seeds.secret()}),
                         limits.current, f"compiling the kernels of {result.name} for timing")  # fmt: skip
    except WorkerLost as lost:
        result.status, result.message = "error", str(lost)
        if str(lost).startswith("Timed out"):
            limits.hung = limits.hung or result.name
        return result
    except _UNREADABLE as exc:
        result.status, result.message = "error", _unreadable(exc)
        return result
    return recorded


def _tape_request(recorded: _Recorded, task: str) -> dict:
    return {"index": recorded.index, "task": task, "params": recorded.params, "tape": recorded.tape,
            "fixed_seed": recorded.fixed_seed, "prepared": recorded.prepared}  # fmt: skip


def _time_speed(spec: Assignment, recorded: _Recorded, replayer: Replayer, device: torch.device, reps: int,
                limits: Limits) -> CaseResult:
    """The replayer times the recorded call's tape against the baseline, every timed call on new inputs the
    worker never saw; the outputs of some timed calls are checked here. No code of the submission runs while
    anything is timed."""
    result, params, fixed_seed = recorded.result, recorded.params, recorded.fixed_seed
    sc = spec.speed[recorded.index]
    part = spec.part(sc.task)
    cpu = device.type != "cuda"
    if not cpu:
        # The float64 references this process computed for earlier cases (an attention score matrix at the speed
        # shape is 17 GB) are freed but still cached by PyTorch; the process that times this case needs that
        # memory on an 80 GB GPU (an H100 grading, 2026-11-25, lost four speed cases to it).
        torch.cuda.empty_cache()
    try:
        rep_seeds = [Seeds.secret() for _ in range(reps)]  # one new input set per timed call, never shown to the worker
        always = min(MIN_REPS, reps)  # timed calls that run however settled the times are
        # The replayer draws the checked calls from all the timed calls that ran (replayer._Replayer.time).
        request = {**_tape_request(recorded, sc.task), "op": "time", "seeds": rep_seeds, "check": CHECKED_TIMED_CALLS,
                   "warmup_seeds": [Seeds.secret() for _ in range(WARMUP_INPUTS)],
                   "warmup_calls": 2 if cpu else 10, "warmup_ms": 0.0 if cpu else 100.0,
                   "min_reps": always, "settled_spread": 0.0 if cpu else SETTLED_SPREAD}  # fmt: skip
        timed = replayer.collect(replayer.submit(request), limits.current, f"timing {result.name}")
        if timed.get("status") != "ok":
            result.status = "failed" if timed.get("status") == "refused" else "error"
            result.message = "Timing the call the grader recorded: " + str(timed.get("message", ""))
            return result
        worst = 0.0  # the checked outputs' largest error, as a fraction of the tolerance: a reference kernel's margin
        checked = sorted(int(r) for r in timed["outputs"])
        ran = len(timed["times"].get("submission", []))
        if len(checked) != min(CHECKED_TIMED_CALLS, ran) or not all(0 <= r < ran for r in checked):
            raise ValueError(f"the replayer kept timed calls {checked} of {ran}")
        for r in checked:
            inputs = part.inputs(params, rep_seeds[r], device, fixed_seed)
            ref = next(iter(part.reference(inputs, params).values()))
            out = timed["outputs"].get(str(r))
            problem = check_meta("output", out, tuple(ref.shape), DTYPES[params["dtype"]], "cpu")
            verdict = compare("output", out.to(ref.device), ref, part.tolerance(params)) if not problem else None
            if problem or not verdict.ok:
                result.message = wrong_timed_output(r, reps, problem, verdict)
                return result
            worst = max(worst, verdict.max_error)
        times, copy_gbps = timed["times"], float(timed["copy_gbps"])
    except WorkerLost as lost:
        result.status, result.message = "error", str(lost)
        if str(lost).startswith("Timed out"):
            limits.hung = limits.hung or result.name
        return result
    except _UNREADABLE as exc:
        result.status, result.message = "error", _unreadable(exc)
        return result
    score, status, message, extra = speed_verdict(sc, params, times, copy_gbps, measured_peaks(device), {"max_reps": reps})
    extra["checked_error"] = worst
    if device.type == "cuda" and timed.get("kernels"):  # why it is slow, from the compiled kernels (autograder/diagnose.py)
        extra["kernels"] = timed["kernels"]
        why = diagnose.report(timed["kernels"], diagnose.device_facts(device), extra, status != "passed")
        message = f"{message.rstrip('.')}.{why}" if why else message  # the verdict, then the diagnosis, as sentences
    result.score, result.status, result.message, result.extra = score, status, message, extra
    return result


# A checked timed output this near the reference is the kernel's own precision at the speed case's size, which is
# larger than the correctness cases' (longer sums): an answer kept from another call, or computed outside the
# kernels, is wrong almost everywhere. (The reference INT4 decode's one failure on 2026-12-06, 1 element of
# 32,768 outside the tolerance, was told it had kept an answer.) The wording only: the case fails either way.
PRECISION_LIKE_FRACTION = 0.01  # at most this fraction of the elements outside the tolerance
PRECISION_LIKE_ERROR = 4.0  # by at most this many times the tolerance


def wrong_timed_output(call: int, reps: int, problem: str, verdict: Verdict | None) -> str:
    """The message of a speed case whose checked timed call `call` (0-based) was wrong."""
    head = f"The output of timed call {call + 1} of {reps} was wrong: " + (problem or verdict.message)
    if not problem and verdict.wrong_fraction <= PRECISION_LIKE_FRACTION and verdict.max_error <= PRECISION_LIKE_ERROR:
        return head + (
            f" Only {fmt_percent(100 * verdict.wrong_fraction)} of its elements are outside the tolerance, by at"
            f" most {verdict.max_error:.2g} times it: this is your kernel's precision at the speed case's size"
            " (longer sums than the correctness cases'), not a missing result. Round less along the way (keep sums and products in "
            "float32, round to the output's dtype once, at the store) and grade again: every grading draws new inputs."
        )
    return head + (
        " The grader times the launches your call made, replayed on new inputs every time: an answer kept from an "
        "earlier call, or computed outside your kernels, is not reproduced."
    )


def _recorded_call_problem(reply: dict, note: str = "") -> str:
    """A sentence about how the submission behaved in the call recorded for timing, or ''."""
    if reply.get("forbidden_ops"):
        return _refusal({"forbidden_ops": reply["forbidden_ops"]}, note)
    if reply.get("launches", 1) == 0:
        return (
            "the call launched none of your Triton kernels: every call must do its own work (a result kept from an "
            "earlier call, or work done in one call for the next ones, is not allowed)."
        )
    if reply.get("missing_kernel"):
        return tapes.missing_kernel(reply["missing_kernel"])
    if reply.get("other_stream"):
        return _refusal({"other_stream": reply["other_stream"]})
    return reply.get("output_problem") or ""


def grading_device(device: torch.device) -> Device:
    """What the grader's device can do: the interpreter on a CPU, else the GPU's properties."""
    if device.type != "cuda":
        return INTERPRETER
    return cuda_device(device.index if device.index is not None else torch.cuda.current_device())


class PartQueue:
    """The parts of one assignment still to grade, taken one at a time by the gradings (shards) that share it:
    a shard that finishes a part takes the next, so the slowest part ends up alone without knowing which it is."""

    def __init__(self, tasks: list[str]) -> None:
        self._tasks = list(tasks)
        self._lock = threading.Lock()

    def take(self) -> str | None:
        with self._lock:
            return self._tasks.pop(0) if self._tasks else None


class AssignmentGrading:
    """One assignment of one submission, graded in two phases with a worker and a replayer of its own.

    `correctness()` runs every correctness case, then records each speed case's call and compiles its replay:
    nothing in it is timed, so it may run beside other assignments' (autograder/concurrent.py). `speed()` times
    the recorded calls, and must run with nothing else on the GPU. `close()` ends both child processes; after
    it, neither starts again (a grading stopped by Ctrl-C does not restart its children)."""

    def __init__(self, slug: str, kernels_file: Path, device_name: str, seed: int | None = None,
                 timeout: float | None = None, reps: int = 50, progress: Progress = lambda s: None,
                 selection: Selection | None = None, import_timeout: float | None = None,
                 shared: PartQueue | None = None) -> None:  # fmt: skip
        self.spec = spec = load_spec(slug)
        self.shared = shared  # the parts this grading takes from, when several gradings share the assignment
        self.selection = selection = selection or Selection()
        self.tier = tier = "gpu" if device_name == "cuda" else "cpu"
        self.device = torch.device(device_name)
        self.limits = Limits(timeout or (120.0 if tier == "cpu" else 180.0))
        self.seeds = Seeds(seed)
        self.reps = reps
        self.progress = progress
        self.result = AssignmentResult(slug, spec.title, tier, [])
        self.graded = {part.task: selection.cases(part, tier) for part in spec.parts}
        self.gpu = grading_device(self.device)
        self.timed = selection.speed if selection.speed is not None else tier == "gpu"
        self.recorded: dict[int, _Recorded] = {}  # speed cases recorded and ready to be timed, by index
        self.worker: Worker | None = None
        self.replayer: Replayer | None = None
        if not kernels_file.exists():
            message = f"There is no {kernels_file}: copy the starter code from assignments/{slug}/kernels.py."
            for part in spec.parts:
                for case in self.graded[part.task]:
                    self.result.cases.append(CaseResult(part.task, case.name, "error", 0.0, _points(part, tier), message,
                                                        bonus=part.bonus))  # fmt: skip
            return
        # The replayer reads the kernels from this text, read before any code of the submission runs.
        source = kernels_file.read_text(errors="replace")
        self.worker = Worker(slug, kernels_file, device_name, import_timeout=import_timeout or self.limits.timeout)
        self.replayer = Replayer(slug, kernels_file, source, device_name)

    def correctness(self) -> None:
        """Every correctness case in spec order; then, when speed is graded, each speed case recorded and compiled."""
        spec, worker, replayer, result = self.spec, self.worker, self.replayer, self.result
        if worker is None or replayer is None:
            return
        try:
            worker.start()
        except WorkerLost as lost:
            worker.import_error = f"kernels.py could not be imported. {lost}"
            if str(lost).startswith("Timed out"):
                self.limits.hung = "importing kernels.py"
        passed_tasks = set()
        mine = []  # the parts this grading graded: all of them, or those it took from the shared queue
        for part in self._parts():
            mine.append(part.task)
            graded = self.graded[part.task]
            runnable = [c for c in graded if not not_gradeable(self.gpu, c.params.get("dtype", ""))]
            cases = _correctness(spec, part, runnable, self.tier, worker, replayer, self.device, self.seeds, self.limits,
                                 self.progress)  # fmt: skip
            result.cases += cases
            if cases and all(c.status == "passed" for c in cases):
                passed_tasks.add(part.task)
            result.cases += [CaseResult(part.task, c.name, "not_gradeable", 0.0, 0.0, why, bonus=part.bonus)
                             for c in graded if (why := not_gradeable(self.gpu, c.params.get("dtype", "")))]  # fmt: skip
        if not self.timed and self.tier == "cpu":
            result.note = ("Speed was not graded: there is no GPU here, and the CPU interpreter says nothing about "
                           "GPU speed.")
        for index in self.selection.speed_cases(spec):
            sc = spec.speed[index]
            if sc.task not in mine:  # another shard's part: that shard records and times it
                continue
            why = not_gradeable(self.gpu, sc.params.get("dtype", "")) or (lacks_tma(self.gpu) if sc.needs_tma else "")
            if not self.timed:
                result.cases.append(CaseResult(sc.task, sc.name, "skipped", 0.0, 0.0, "not graded on a CPU", kind="speed",
                                               bonus=sc.bonus))  # fmt: skip
            elif why:
                result.cases.append(CaseResult(sc.task, sc.name, "not_gradeable", 0.0, 0.0, why, kind="speed",
                                               bonus=sc.bonus))  # fmt: skip
            elif sc.task not in passed_tasks:
                result.cases.append(CaseResult(sc.task, sc.name, "skipped", 0.0, sc.points,
                                               f"not timed: every correctness case of {sc.task} must pass first",
                                               kind="speed", bonus=sc.bonus))  # fmt: skip
            else:
                self.progress(f"{spec.slug} · {sc.task} · recording {sc.name}")
                recorded = _record_speed(spec, index, worker, replayer, self.device, self.seeds, self.limits,
                                         self.selection)  # fmt: skip
                if isinstance(recorded, _Recorded):
                    self.recorded[index] = recorded
                    recorded = recorded.result  # its place in the report; filled in when it is timed
                result.cases.append(recorded)
        worker.cleanup()  # every call of the submission has run: the speed phase replays and times tapes only

    def _parts(self) -> Iterator[Part]:
        if self.shared is None:
            yield from self.spec.parts
            return
        while (task := self.shared.take()) is not None:
            yield self.spec.part(task)

    def speed(self) -> None:
        """Time every recorded speed case, in spec order: alone on the GPU (nothing else of this grader runs)."""
        if self.replayer is None:
            return
        for index, recorded in self.recorded.items():
            self.progress(f"{self.spec.slug} · {recorded.result.task} · timing {recorded.result.name}")
            _time_speed(self.spec, recorded, self.replayer, self.device, self.reps, self.limits)
        self.recorded.clear()

    def abort(self) -> None:
        """From another thread than the one grading (Ctrl-C): end both children now, and start none again."""
        for child in (self.worker, self.replayer):
            if child is not None:
                child.abort()

    def close(self) -> AssignmentResult:
        """End the child processes (for good) and return the result."""
        for child in (self.worker, self.replayer):
            if child is not None:
                child.cleanup()
        lacking = sorted({c.message for c in self.result.cases if c.status == "not_gradeable"})
        if lacking and "Some cases were " not in self.result.note:
            self.result.note = " ".join(filter(None, [self.result.note, "Some cases were " + lacking[0]]))
        return self.result


def grade_assignment(slug: str, kernels_file: Path, device_name: str, seed: int | None = None,
                     timeout: float | None = None, reps: int = 50, progress: Progress = lambda s: None,
                     selection: Selection | None = None, import_timeout: float | None = None) -> AssignmentResult:
    grading = AssignmentGrading(slug, kernels_file, device_name, seed, timeout, reps, progress, selection,
                                import_timeout)
    try:
        grading.correctness()
        grading.speed()
    finally:
        result = grading.close()
    return result
