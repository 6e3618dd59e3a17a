"""No kernel a student reads earns graded points: every kernel of the student notebooks and of the lectures,
tried in the place of each graded kernel (and each notebook wrapper in the place of each graded function),
fails the graded part's CPU-tier cases. The controls show the transplant can pass: every graded kernel of
the solutions, moved through the same machinery into its own place, passes; and the instructor notebooks'
exercise solutions that are graded kernels in all but name pass where they are meant to.

tests/transplant.py does the work, in a child process that this module restarts after a crash.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TRANSPLANT = REPO_ROOT / "tests" / "transplant.py"

# Instructor notebook exercise solutions that are graded work under another name, and the parts they must
# pass when put in place of the graded kernel (a kernel) or of the graded function (a wrapper).
EXPECTED_PASSES: dict[tuple[str, str], set[str]] = {
    ("02_fusion", "gelu_kernel"): {"fusion.gelu"},
    ("02_fusion", "gelu_triton"): {"fusion.gelu"},
    ("02_fusion", "softmax_rows"): {"fusion.softmax"},
    ("03_coalescing", "transpose_naive"): {"coalescing.transpose"},
    ("03_coalescing", "transpose_tiled"): {"coalescing.transpose"},
    ("04_tiling", "matmul_v1"): {"tiling.matmul"},
    ("04_tiling", "matmul_v2"): {"tiling.matmul"},
    ("05_rmsnorm", "rmsnorm_v1"): {"rmsnorm.forward"},
    ("06_rope", "rope_v1"): {"rope.forward"},
    ("07_swiglu", "swiglu"): {"swiglu.forward"},
    ("08_flash_attention", "flash_forward"): {"flash_attention.forward", "flash_attention.causal",
                                              "flash_attention.gqa", "flash_attention.ragged"},
}


def transplant(*args: str) -> list[dict[str, Any]]:
    """Run tests/transplant.py to the end, restarting it after a crash. A job that crashes a fresh process
    (the first job it runs) is recorded as crashed and failed; a crash later in a process may come from an
    earlier job's stray writes, so that job is run again in a fresh process first."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO_ROOT)}
    results: dict[int, dict[str, Any]] = {}
    start, restarts = 0, 0
    while True:
        proc = subprocess.run([sys.executable, str(TRANSPLANT), *args, "--skip", str(start)],
                              cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
        last: dict[str, Any] | None = None
        done = False
        for line in proc.stdout.splitlines():
            record = json.loads(line)
            if "start" in record:
                last = record
            elif "job" in record:
                results[record["job"]] = record
            done = done or "done" in record
        if done:
            return [results[i] for i in sorted(results)]
        assert last is not None, f"tests/transplant.py failed before its first job:\n{proc.stderr[-3000:]}"
        restarts += 1
        assert restarts <= 20, f"tests/transplant.py keeps crashing:\n{proc.stderr[-3000:]}"
        i = last["start"]
        if i in results:  # it crashed between jobs
            start = i + 1
        elif i == start:  # the first job of a fresh process: this job crashes it
            results[i] = {**{k: v for k, v in last.items() if k != "start"}, "job": i, "parts": [], "passed": [],
                          "error": "crashed the interpreter"}  # fmt: skip
            start = i + 1
        else:
            start = i


def _describe(results: Iterable[dict[str, Any]]) -> str:
    return "\n".join(
        f"  {r['source']}: {r['candidate']} in place of {r['slug']}.{r['place']} ({r['how']}) passes {', '.join(r['passed'])}"
        for r in results
    )


@pytest.fixture(scope="module")
def results() -> list[dict[str, Any]]:
    only = ",".join(f"solutions/notebooks/{nb}.ipynb:{name}" for nb, name in EXPECTED_PASSES)
    return transplant("--set", "student,solution,instructor", "--only", only)


@pytest.mark.slow
def test_no_kernel_a_student_reads_passes_a_graded_part(results: list[dict[str, Any]]) -> None:
    student = [r for r in results if r["source_kind"] in ("notebook", "lecture")]
    offenders = [r for r in student if r["passed"]]
    assert not offenders, (
        "These kernels of the student's materials earn graded correctness points; teach with a neighbouring "
        "problem or make them exercises:\n" + _describe(offenders)
    )
    # Not vacuous: the kernels and wrappers of every notebook with Triton kernels were tried.
    tried = {r["source"] for r in student}
    notebooks = {str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "notebooks").glob("*.ipynb")}
    assert notebooks - tried <= {"notebooks/01_profiling.ipynb"}, f"never tried: {sorted(notebooks - tried)}"
    assert sum(r["how"] == "kernel" for r in student) >= 30 and sum(r["how"] == "wrapper" for r in student) >= 30


@pytest.mark.slow
def test_every_graded_kernel_passes_when_moved_into_its_own_place(results: list[dict[str, Any]]) -> None:
    controls = [r for r in results if r["source_kind"] == "solution"]
    failed = [r for r in controls if not r["parts"] or not all(p["passed"] for p in r["parts"])]
    assert not failed, "\n".join(f"{r['slug']}.{r['place']}: {r.get('error') or r['parts']}" for r in failed)
    assert len(controls) >= 25  # every graded kernel of the eight assignments


@pytest.mark.slow
def test_instructor_exercise_solutions_pass_where_they_are_meant_to(results: list[dict[str, Any]]) -> None:
    passed: dict[tuple[str, str], set[str]] = {}
    for r in results:
        if r["source_kind"] == "instructor":
            passed.setdefault((Path(r["source"]).stem, r["candidate"]), set()).update(r["passed"])
    missing = {k: v - passed.get(k, set()) for k, v in EXPECTED_PASSES.items() if v - passed.get(k, set())}
    assert not missing, f"these exercise solutions should pass these parts but do not: {missing}"
