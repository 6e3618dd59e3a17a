"""Several assignments graded at once (autograder/concurrent.py): the same statuses and points as one after the
other, a hung submission costing only its own assignment, and speed timed only once every correctness phase
has ended, one assignment at a time, in course order."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder import concurrent, grade
from autograder.grade import AssignmentGrading, AssignmentResult, Selection
from conftest import REPO_ROOT, SEED, SUBMISSIONS


def _outcome(results: list[AssignmentResult]) -> list[tuple[str, str, str, str, float]]:
    return [(r.slug, c.task, c.name, c.status, round(c.score, 6)) for r in results for c in r.cases]


def test_concurrent_grading_gives_the_serial_statuses_and_points(tmp_path: Path) -> None:
    hung = tmp_path / "kernels.py"
    hung.write_text((REPO_ROOT / "solutions" / "swiglu" / "kernels.py").read_text()
                    + "\n\ndef swiglu(gate, up):\n    while True:\n        pass\n")  # fmt: skip
    files = {"rmsnorm": REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py",  # correct
             "rope": SUBMISSIONS / "rope" / "wrong_sin_sign.py",  # wrong
             "swiglu": hung}  # never ends  # fmt: skip
    # One part each, two cases: the hung one costs its time limit once per grading, whatever the others do.
    selection = Selection(tasks={"rmsnorm.forward", "rope.forward", "swiglu.forward"}, max_cases=2)
    kwargs = {"seed": SEED, "timeout": 10.0, "import_timeout": 120.0, "selection": selection}
    serial = concurrent.grade_assignments(files, "cpu", jobs=1, **kwargs)
    at_once = concurrent.grade_assignments(files, "cpu", jobs=3, **kwargs)
    assert _outcome(at_once) == _outcome(serial)
    assert [r.slug for r in at_once] == list(files)
    by_slug = {r.slug: r for r in at_once}
    assert by_slug["rmsnorm"].score(False) == by_slug["rmsnorm"].max_score(False) > 0
    rope = [c for c in by_slug["rope"].cases if c.kind == "correctness"]
    assert any(c.status == "failed" for c in rope), [(c.name, c.status) for c in rope]
    swiglu = [(c.name, c.status) for c in by_slug["swiglu"].cases]
    assert any(status == "timeout" for _, status in swiglu), swiglu


def test_shards_of_one_assignment_give_the_cases_of_one_grading_in_spec_order() -> None:
    """Several gradings taking rmsnorm's parts from one queue (as a GPU's spare cores do): every case once, in the
    order one grading lists them, the same statuses; and the speed cases (CPU-sized) each timed by one shard."""
    files = {"rmsnorm": REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py"}
    selection = Selection(max_cases=1, speed=True, max_speed_cases=2, speed_params={"shape": [5, 300], "dtype": "float32"})
    whole = concurrent.grade_assignments(files, "cpu", jobs=1, selection=selection, split=False, reps=3)
    phases = concurrent.Phases()
    sharded = concurrent.grade_assignments(files, "cpu", jobs=3, selection=selection, split=True, reps=3, phases=phases)
    assert phases.gradings == 3
    assert [(c.kind, c.task, c.name, c.status) for c in sharded[0].cases] == \
        [(c.kind, c.task, c.name, c.status) for c in whole[0].cases]  # fmt: skip
    correctness = [c for c in sharded[0].cases if c.kind != "speed"]
    timed = [c for c in sharded[0].cases if c.kind == "speed"]
    assert len(correctness) == 3 and all(c.status == "passed" for c in correctness), [(c.name, c.status) for c in correctness]
    # timed (on a CPU they fall short of the GPU's thresholds), not skipped as another shard's part would be
    assert len(timed) == 2 and all(c.status in ("passed", "failed") and " us, " in c.message for c in timed), \
        [(c.name, c.status, c.message) for c in timed]  # fmt: skip


def test_a_hung_kernel_in_shards_costs_about_one_time_limit_and_is_reported_where_it_hung(tmp_path: Path) -> None:
    """rmsnorm whose forward never returns, graded by three shards: the forward and backward shards (backward calls
    the forward) each wait out one limit side by side; the fused-linear bonus, which does not call it, passes."""
    hung = tmp_path / "kernels.py"
    hung.write_text((REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py").read_text()
                    + "\n\ndef rmsnorm(x, weight, eps=1e-6):\n    while True:\n        pass\n")  # fmt: skip
    limit = 10.0
    t0 = time.perf_counter()
    result = concurrent.grade_assignments({"rmsnorm": hung}, "cpu", jobs=3, timeout=limit, import_timeout=120.0,
                                          selection=Selection(max_cases=2), split=True)[0]  # fmt: skip
    seconds = time.perf_counter() - t0
    status = {(c.task, c.name): c.status for c in result.cases if c.kind != "speed"}
    forward = [s for (task, _), s in status.items() if task == "rmsnorm.forward"]
    assert forward[0] == "timeout" and "passed" not in forward, status
    assert all(s == "passed" for (task, _), s in status.items() if task == "rmsnorm.linear"), status
    assert seconds < 4 * limit + 60, seconds  # one limit per shard, the shards side by side; not one per case


def test_spare_slots_go_to_the_assignments_with_the_most_parts_per_shard() -> None:
    assert concurrent.shard_counts({"fusion": 2, "flash_attention": 8, "tiling": 1}, 3) == \
        {"fusion": 1, "flash_attention": 1, "tiling": 1}  # fmt: skip
    assert concurrent.shard_counts({"fusion": 2, "flash_attention": 8, "tiling": 1}, 7) == \
        {"fusion": 1, "flash_attention": 5, "tiling": 1}  # fmt: skip
    assert concurrent.shard_counts({"fusion": 2, "flash_attention": 8, "tiling": 1}, 64) == \
        {"fusion": 2, "flash_attention": 8, "tiling": 1}  # fmt: skip


def test_default_jobs_is_one_assignment_per_core_and_never_more_than_there_are() -> None:
    assert concurrent.default_jobs(8, cores=16) == 8
    assert concurrent.default_jobs(8, cores=2) == 2
    assert concurrent.default_jobs(3, cores=64) == 3
    assert concurrent.default_jobs(1, cores=16) == 1
    assert concurrent.default_jobs(8, cores=1) == 1


def test_on_a_gpu_no_more_assignments_run_at_once_than_its_free_memory_holds() -> None:
    need = concurrent.gpu_need(["fusion", "rmsnorm"])  # fusion's largest speed case moves 1 GiB
    assert need > concurrent.gpu_need(["rmsnorm"]) > concurrent.CONTEXTS_BYTES
    assert concurrent.default_jobs(8, cores=16, gpu_free=80 << 30, gpu_need=need) == 8
    assert concurrent.default_jobs(8, cores=16, gpu_free=3 * need + 1, gpu_need=need) == 3
    assert concurrent.default_jobs(8, cores=16, gpu_free=need // 2, gpu_need=need) == 1


@pytest.mark.parametrize("jobs", [1, 3])
def test_speed_is_timed_only_after_every_correctness_phase_one_assignment_at_a_time(
        jobs: int, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The phases are replaced by fakes that log when they run (no process starts): the slowest correctness phase
    ends before the first timing starts, and no two timings overlap."""
    log: list[tuple[str, str, float]] = []
    lock = threading.Lock()
    running: set[str] = set()
    overlaps: list[str] = []
    slow = {"rmsnorm": 0.3, "rope": 0.05, "swiglu": 0.15}

    def note(slug: str, event: str) -> None:
        with lock:
            log.append((slug, event, time.monotonic()))

    def correctness(self: AssignmentGrading) -> None:
        note(self.spec.slug, "correctness starts")
        time.sleep(slow[self.spec.slug])
        self.recorded[0] = grade._Recorded(grade.CaseResult("t", "speed case", "failed", 0.0, 1.0, kind="speed"),
                                           0, {}, None, None, {})  # fmt: skip
        self.result.cases.append(self.recorded[0].result)
        note(self.spec.slug, "correctness ends")

    def fake_timer(spec, recorded, replayer, device, reps, limits):  # noqa: ANN001, ANN202  (grade._time_speed's)
        with lock:
            if running:
                overlaps.append(spec.slug)
            running.add(spec.slug)
        note(spec.slug, "timing starts")
        time.sleep(0.02)
        recorded.result.status, recorded.result.score = "passed", 1.0
        note(spec.slug, "timing ends")
        with lock:
            running.discard(spec.slug)
        return recorded.result

    monkeypatch.setattr(AssignmentGrading, "correctness", correctness)
    monkeypatch.setattr(grade, "_time_speed", fake_timer)
    files = {slug: REPO_ROOT / "solutions" / slug / "kernels.py" for slug in slow}
    reported: list[str] = []
    results = concurrent.grade_assignments(files, "cpu", jobs=jobs, selection=Selection(speed=True),
                                           on_result=lambda r: reported.append(r.slug))  # fmt: skip
    last_correctness = max(t for _, event, t in log if event == "correctness ends")
    timings = [(slug, t) for slug, event, t in log if event == "timing starts"]
    assert [slug for slug, _ in timings] == list(slow), log  # course order
    assert all(t >= last_correctness for _, t in timings), log
    assert not overlaps, log
    assert reported == [r.slug for r in results] == list(slow)
    assert all(c.status == "passed" for r in results for c in r.cases)


def test_a_json_path_naming_slug_gets_one_results_file_per_assignment(tmp_path: Path) -> None:
    """As scripts/gpu_run.sh writes grade_<slug>_gpu_tier.json from one command (no kernels.py: nothing starts)."""
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", "rmsnorm", "rope", "--submission", str(tmp_path), "--device", "cpu",
         "--skip-doctor", "--json", str(tmp_path / "grade_{slug}.json")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for slug in ("rmsnorm", "rope"):
        written = json.loads((tmp_path / f"grade_{slug}.json").read_text())
        assert written["tests"] and all(t["name"].startswith(f"{slug} · ") for t in written["tests"]), written
        assert all(t["score"] == 0 for t in written["tests"])
    assert "Graded in" in proc.stderr
