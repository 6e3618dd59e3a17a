"""No kernel a student reads earns graded points: every kernel of the student notebooks and of the lectures,
tried in the place of each graded kernel (and each notebook wrapper in the place of each graded function),
fails the graded part's CPU-tier cases. The controls show the transplant can pass: every graded kernel of
the solutions, moved through the same machinery into its own place, passes; and the instructor notebooks'
exercise solutions that are graded kernels in all but name pass where they are meant to.

tests/transplant.py does the work, in a child process that bounds every interpreted launch to its own tensors (an
unmasked kernel fails its case with OutOfBounds; before that bound, a GeGLU kernel without masks once corrupted the
heap and hung a fresh CI run for 900 s in a dict lookup). This module restarts that process after a crash, or after a
job silent for JOB_SECONDS, and counts the job as failed, as the grader's time limit would.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TRANSPLANT = REPO_ROOT / "tests" / "transplant.py"
# Silence after which a job counts as hung: the longest (a correct flash attention forward over every CPU case of four
# parts) takes far less.
JOB_SECONDS = 180.0

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
    """Run tests/transplant.py to the end, restarting it after a crash or a hang. A job that crashes a fresh process
    (the first job it runs) is recorded as crashed and failed; a crash later in a process may come from an
    earlier job's stray writes, so that job is run again in a fresh process first."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO_ROOT)}
    results: dict[int, dict[str, Any]] = {}
    start, restarts = 0, 0
    while True:
        stdout, stderr = _run_watched([sys.executable, str(TRANSPLANT), *args, "--skip", str(start)], env)
        last: dict[str, Any] | None = None
        done = False
        for line in stdout.splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # the last line of a process killed as it wrote
                continue
            if "start" in record:
                last = record
            elif "job" in record:
                results[record["job"]] = record
            done = done or "done" in record
        if done:
            return [results[i] for i in sorted(results)]
        assert last is not None, f"tests/transplant.py failed before its first job:\n{stderr[-3000:]}"
        restarts += 1
        assert restarts <= 20, f"tests/transplant.py keeps crashing:\n{stderr[-3000:]}"
        i = last["start"]
        if i in results:  # it crashed between jobs
            start = i + 1
        elif i == start:  # the first job of a fresh process: this job crashes it
            results[i] = {**{k: v for k, v in last.items() if k != "start"}, "job": i, "parts": [], "passed": [],
                          "error": "crashed or hung the interpreter"}  # fmt: skip
            start = i + 1
        else:
            start = i


def _run_watched(command: list[str], env: dict[str, str]) -> tuple[str, str]:
    """Run the transplant process to its end, or until it prints nothing for JOB_SECONDS (a hung job: killed, and the
    caller restarts from there as after a crash). Its stdout and stderr."""
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = bytearray(), bytearray()
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, out)
    selector.register(proc.stderr, selectors.EVENT_READ, err)
    heard = time.monotonic()
    open_streams = 2
    while open_streams:
        events = selector.select(timeout=5.0)
        for key, _ in events:
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                selector.unregister(key.fileobj)
                open_streams -= 1
            else:
                key.data.extend(chunk)
                if key.data is out:
                    heard = time.monotonic()
        if open_streams and time.monotonic() - heard > JOB_SECONDS:
            proc.kill()
            heard = time.monotonic()  # the pipes close as it dies
    proc.wait()
    return out.decode(errors="replace"), err.decode(errors="replace")


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


UNMASKED = '''
import sys
import torch
import triton
import triton.language as tl

sys.path.insert(0, "tests")
from transplant import bound_every_launch


@triton.jit
def double_unmasked(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, 2 * tl.load(x_ptr + offsets))


bound_every_launch()
x = torch.ones(3)
y = torch.empty(3)
double_unmasked[(1,)](x, y, BLOCK=4)
print("no error")
'''


def test_a_transplanted_launch_may_touch_only_its_own_tensors() -> None:
    """The bound that turns an unmasked kernel's stray accesses into a failed case (in a fresh process: it patches the
    interpreter's launch for the whole process)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", UNMASKED], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert "OutOfBounds" in done.stderr and "needs a mask" in done.stderr, done.stdout + done.stderr[-2000:]
    assert "no error" not in done.stdout
    inside = subprocess.run([sys.executable, "-c", UNMASKED.replace("torch.ones(3)", "torch.ones(4)")
                             .replace("torch.empty(3)", "torch.empty(4)")], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert inside.stdout.strip() == "no error", inside.stderr[-2000:]
