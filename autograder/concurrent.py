"""Grade several assignments at once: their correctness phases side by side, then their speed cases one at
a time with nothing else running.

Each assignment keeps its own worker and replayer, its own seeds and its own time limits
(autograder/grade.py AssignmentGrading), so a submission that hangs or crashes costs its own assignment
what it costs alone, and nothing else. The correctness phases run on threads of this process: the
children are still forked by the one zygote (autograder/runner.py), and this process spends its time
waiting on them or in PyTorch (the references), which releases the GIL. The speed phase starts only once
every correctness phase has ended, and times one assignment after the other in course order, so that a
timing shares the GPU with nothing.

On a GPU, cores left over once every assignment has one go to the assignments with the most parts: several
gradings of the same file (shards), each with its own worker and replayer, take that assignment's parts one at a
time from a queue they share, and their results are put back together in spec order. A GPU grading's correctness
phase is mostly Triton compiling each kernel specialization once, on one core per process: flash_attention's 93
cases took 217 s on an H100 with Triton's cache empty and 20 s with it full (results/h100/NOTES.md), and it was
the last assignment to finish.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grade import WARMUP_INPUTS, AssignmentGrading, AssignmentResult, PartQueue, Progress, Selection
from autograder.specs import load_spec

# Cores per assignment graded at once. One assignment leaves cores idle (its worker waits while this process
# judges, its replayer waits for tapes), so one per core pays: every solution on the CPU tier, on 2 shared cores
# (load 1.6-4.8), took 57 s one at a time, 42 s two at once, 48 s four at once.
CORES_PER_ASSIGNMENT = 1


# GPU memory one assignment may hold while its correctness phase runs, beyond its speed cases' tensors: the CUDA
# contexts of its worker and its replayer. A budget, not a measurement: scripts/gpu_run.sh's grade stage records
# the whole course's peak (grade_gpu_peak_mib.txt) to check it against.
CONTEXTS_BYTES = 1 << 30
# Input sets of a speed case alive at once in the worker that records it: the warm-up's and the recorded call's.
RECORDED_INPUT_SETS = WARMUP_INPUTS + 1


def default_jobs(assignments: int, cores: int | None = None, gpu_free: int | None = None, gpu_need: int = 0) -> int:
    """How many assignments' correctness phases run at once: one per CORES_PER_ASSIGNMENT cores, at least one, at
    most one per assignment; on a GPU, no more than its free memory holds at `gpu_need` bytes each."""
    cores = cores or os.cpu_count() or 1
    jobs = min(assignments, cores // CORES_PER_ASSIGNMENT)
    if gpu_free is not None and gpu_need > 0:
        jobs = min(jobs, gpu_free // gpu_need)
    return max(1, jobs)


def gpu_need(slugs: list[str]) -> int:
    """Bytes of GPU memory one of these assignments may hold in its correctness phase, at most: its largest speed
    case recorded (RECORDED_INPUT_SETS input sets and an output) beside its untimed replay, and two CUDA contexts."""
    largest = max((sc.bytes_moved(sc.params) for slug in slugs for sc in load_spec(slug).speed), default=0)
    return CONTEXTS_BYTES + (RECORDED_INPUT_SETS + 1) * largest


def jobs_for(slugs: list[str], device_name: str) -> int:
    """The default of `grade --jobs` for these assignments on this device."""
    if device_name != "cuda":
        return default_jobs(len(slugs))
    import torch

    free, _ = torch.cuda.mem_get_info()
    parts = sum(len(load_spec(slug).parts) for slug in slugs)  # the most gradings that shards can make of them
    return default_jobs(parts, gpu_free=free, gpu_need=gpu_need(slugs))


def shard_counts(parts: dict[str, int], slots: int) -> dict[str, int]:
    """How many gradings (shards) each assignment gets: one each, then each free slot to the assignment with the
    most parts per shard, while it has more parts than shards. `parts`: slug -> parts with a case to grade."""
    counts = {slug: 1 for slug in parts}
    for _ in range(max(0, slots - len(parts))):
        splittable = [slug for slug in parts if counts[slug] < parts[slug]]
        if not splittable:
            break
        counts[max(splittable, key=lambda slug: (parts[slug] / counts[slug], parts[slug]))] += 1
    return counts


def merge_shards(results: list[AssignmentResult]) -> AssignmentResult:
    """One assignment's result from its shards': correctness cases part by part in spec order, then speed cases in
    spec order, as one grading would have listed them."""
    if len(results) == 1:
        return results[0]
    spec = load_spec(results[0].slug)
    parts = [p.task for p in spec.parts]
    speed = [(sc.task, sc.name) for sc in spec.speed]
    cases = [c for r in results for c in r.cases]
    correctness = sorted((c for c in cases if c.kind != "speed"), key=lambda c: parts.index(c.task))  # stable
    timed = sorted((c for c in cases if c.kind == "speed"),
                   key=lambda c: speed.index((c.task, c.name)) if (c.task, c.name) in speed else len(speed))  # fmt: skip
    notes = list(dict.fromkeys(r.note for r in results if r.note))
    first = results[0]
    return AssignmentResult(first.slug, first.title, first.tier, correctness + timed, " ".join(notes))


@dataclass
class Phases:
    """Wall time of a grading, for the report's last line."""

    correctness_s: float = 0.0
    speed_s: float = 0.0
    per_speed_s: dict[str, float] = field(default_factory=dict)
    per_correctness_s: dict[str, float] = field(default_factory=dict)
    gradings: int = 0  # assignments graded, counting each shard of one


def grade_assignments(files: dict[str, Path], device_name: str, jobs: int | None = None, seed: int | None = None,
                      timeout: float | None = None, reps: int = 50,
                      progress: Callable[[str], Progress] = lambda slug: lambda s: None,
                      selection: Selection | None = None,
                      on_result: Callable[[AssignmentResult], None] = lambda r: None,
                      phases: Phases | None = None, import_timeout: float | None = None,
                      split: bool | None = None) -> list[AssignmentResult]:
    """Grade `files` (slug -> kernels.py), results in the order of `files`; `on_result` is called with each, in that
    order, as soon as it and those before it are done. `progress(slug)` gives each assignment's progress callback.
    `split`: share an assignment's parts among several gradings when `jobs` leaves cores over (default: on a GPU,
    when no seed is fixed)."""
    jobs = jobs or jobs_for(list(files), device_name)
    phases = phases if phases is not None else Phases()
    # Shards only with unpredictable seeds: a fixed --seed reproduces a grading case for case, whatever the cores.
    split = device_name == "cuda" and seed is None if split is None else split
    shards = _plan(files, device_name, jobs if split else len(files), selection)
    gradings = []
    for slug, path in files.items():
        queue = PartQueue([p.task for p in load_spec(slug).parts]) if shards[slug] > 1 else None
        gradings += [AssignmentGrading(slug, path, device_name, seed, timeout, reps, progress(slug), selection,
                                       import_timeout, queue) for _ in range(shards[slug])]  # fmt: skip
    phases.gradings = len(gradings)
    results: list[AssignmentResult] = []
    start = time.perf_counter()
    # The pool's threads live until the speed phase has ended: a child started without the zygote dies with the
    # thread that started it (autograder/lifecycle.py), and the replayers started here time the speed cases.
    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="grade")
    try:
        def correctness(grading: AssignmentGrading) -> None:
            t0 = time.perf_counter()
            grading.correctness()
            slug = grading.spec.slug
            phases.per_correctness_s[slug] = max(phases.per_correctness_s.get(slug, 0.0), time.perf_counter() - t0)

        def finished(slug: str) -> AssignmentResult:
            return merge_shards([g.close() for g in gradings if g.spec.slug == slug])

        futures: list[Future] = [pool.submit(correctness, g) for g in gradings]
        if not any(g.timed for g in gradings):  # no timing waits for a quiet GPU: each is done with its correctness
            for slug in files:
                for grading, future in zip(gradings, futures):
                    if grading.spec.slug == slug:
                        future.result()
                results.append(finished(slug))
                on_result(results[-1])
            phases.correctness_s = time.perf_counter() - start
            return results
        for future in futures:
            future.result()
        phases.correctness_s = time.perf_counter() - start
        for slug in files:
            t0 = time.perf_counter()
            for grading in gradings:
                if grading.spec.slug == slug:
                    grading.speed()
            phases.per_speed_s[slug] = time.perf_counter() - t0
            results.append(finished(slug))
            on_result(results[-1])
        phases.speed_s = time.perf_counter() - start - phases.correctness_s
        return results
    except BaseException:
        # Ctrl-C or an error: every child ends now, none starts again, so the threads still grading fail each of
        # their remaining cases at once and end; then each grading is closed by this thread alone.
        for grading in gradings:
            grading.abort()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for grading in gradings:
            grading.close()


def _plan(files: dict[str, Path], device_name: str, slots: int, selection: Selection | None) -> dict[str, int]:
    """How many gradings share each assignment (shard_counts); one where kernels.py is missing (nothing runs)."""
    chosen = selection or Selection()
    tier = "gpu" if device_name == "cuda" else "cpu"
    parts = {slug: sum(1 for p in load_spec(slug).parts if chosen.cases(p, tier)) if path.exists() else 1
             for slug, path in files.items()}  # fmt: skip
    return shard_counts(parts, slots)
