"""Grade several assignments at once: their correctness phases side by side, then their speed cases one at
a time with nothing else running.

Each assignment keeps its own worker and replayer, its own seeds and its own time limits
(autograder/grade.py AssignmentGrading), so a submission that hangs or crashes costs its own assignment
what it costs alone, and nothing else. The correctness phases run on threads of this process: the
children are still forked by the one zygote (autograder/runner.py), and this process spends its time
waiting on them or in PyTorch (the references), which releases the GIL. The speed phase starts only once
every correctness phase has ended, and times one assignment after the other in course order, so that a
timing shares the GPU with nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grade import WARMUP_INPUTS, AssignmentGrading, AssignmentResult, Progress, Selection

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
    from autograder.specs import load_spec

    largest = max((sc.bytes_moved(sc.params) for slug in slugs for sc in load_spec(slug).speed), default=0)
    return CONTEXTS_BYTES + (RECORDED_INPUT_SETS + 1) * largest


def jobs_for(slugs: list[str], device_name: str) -> int:
    """The default of `grade --jobs` for these assignments on this device."""
    if device_name != "cuda":
        return default_jobs(len(slugs))
    import torch

    free, _ = torch.cuda.mem_get_info()
    return default_jobs(len(slugs), gpu_free=free, gpu_need=gpu_need(slugs))


@dataclass
class Phases:
    """Wall time of a grading, for the report's last line."""

    correctness_s: float = 0.0
    speed_s: float = 0.0
    per_speed_s: dict[str, float] = field(default_factory=dict)
    per_correctness_s: dict[str, float] = field(default_factory=dict)


def grade_assignments(files: dict[str, Path], device_name: str, jobs: int | None = None, seed: int | None = None,
                      timeout: float | None = None, reps: int = 50,
                      progress: Callable[[str], Progress] = lambda slug: lambda s: None,
                      selection: Selection | None = None,
                      on_result: Callable[[AssignmentResult], None] = lambda r: None,
                      phases: Phases | None = None, import_timeout: float | None = None) -> list[AssignmentResult]:
    """Grade `files` (slug -> kernels.py), results in the order of `files`; `on_result` is called with each, in that
    order, as soon as it and those before it are done. `progress(slug)` gives each assignment's progress callback."""
    jobs = jobs or jobs_for(list(files), device_name)
    phases = phases if phases is not None else Phases()
    gradings = [AssignmentGrading(slug, path, device_name, seed, timeout, reps, progress(slug), selection,
                                  import_timeout) for slug, path in files.items()]  # fmt: skip
    results: list[AssignmentResult] = []
    start = time.perf_counter()
    # The pool's threads live until the speed phase has ended: a child started without the zygote dies with the
    # thread that started it (autograder/lifecycle.py), and the replayers started here time the speed cases.
    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="grade")
    try:
        def correctness(grading: AssignmentGrading) -> None:
            t0 = time.perf_counter()
            grading.correctness()
            phases.per_correctness_s[grading.spec.slug] = time.perf_counter() - t0

        futures: list[Future] = [pool.submit(correctness, g) for g in gradings]
        if not any(g.timed for g in gradings):  # no timing waits for a quiet GPU: each is done with its correctness
            for grading, future in zip(gradings, futures):
                future.result()
                results.append(grading.close())
                on_result(results[-1])
            phases.correctness_s = time.perf_counter() - start
            return results
        for future in futures:
            future.result()
        phases.correctness_s = time.perf_counter() - start
        for grading in gradings:
            t0 = time.perf_counter()
            grading.speed()
            phases.per_speed_s[grading.spec.slug] = time.perf_counter() - t0
            results.append(grading.close())
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
