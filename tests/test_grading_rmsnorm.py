"""Grading the RMSNorm assignment on the CPU tier: right answers score, wrong ones fail the right case,
and a submission that misbehaves loses that case alone.

Each submission is graded once per session (a worker process costs seconds); tests then read the result.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grade import AssignmentResult, Selection, grade_assignment
from conftest import REPO_ROOT, SEED, SUBMISSIONS

FORWARD = "rmsnorm.forward"
BACKWARD = "rmsnorm.backward"
LINEAR = "rmsnorm.linear"
_cache: dict[str, AssignmentResult] = {}


def graded(path: Path, timeout: float = 60.0) -> AssignmentResult:
    key = str(path)
    if key not in _cache:
        _cache[key] = grade_assignment("rmsnorm", path, "cpu", seed=SEED, timeout=timeout)
    return _cache[key]


def sub(name: str) -> Path:
    return SUBMISSIONS / "rmsnorm" / f"{name}.py"


def cases(result: AssignmentResult, task: str = FORWARD) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in result.cases if c.task == task and c.kind == "correctness"}


def test_solution_scores_full_points_and_full_bonus() -> None:
    r = graded(REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py")
    assert r.score(False) == pytest.approx(60.0) and r.max_score(False) == pytest.approx(60.0)
    assert r.score(True) == pytest.approx(35.0) and r.max_score(True) == pytest.approx(35.0)
    assert all(c.status == "skipped" and c.max_score == 0 for c in r.cases if c.kind == "speed")
    assert "Speed was not graded" in r.note


def test_untouched_stub_scores_zero_with_a_not_implemented_message_per_part() -> None:
    r = graded(REPO_ROOT / "assignments" / "rmsnorm" / "kernels.py")
    assert r.score(False) == 0 and r.score(True) == 0
    for c in r.cases:
        if c.kind == "correctness":
            task = LINEAR if c.task == LINEAR else FORWARD  # the backward runs the forward first
            assert c.status == "not_implemented"
            assert c.message == f"Not implemented yet: fill in the TODO marked {task} in kernels.py."
            assert "Traceback" not in c.message


def test_a_minimal_honest_forward_passes_every_forward_case() -> None:
    r = graded(sub("correct_minimal"))
    assert all(status == "passed" for status, _ in cases(r).values())
    # It has no backward: each backward case says so instead of crashing the grader.
    for status, message in cases(r, BACKWARD).values():
        assert status == "error" and "no autograd history: route the call through RMSNormFunction.apply" in message
    # Nor the linear bonus, written after it: those cases alone say what is missing.
    for status, message in cases(r, LINEAR).values():
        assert status == "error" and "does not define `rmsnorm_linear`: this bonus calls rmsnorm_linear(" in message


def graded_linear(name: str, names: set[str] | None = None) -> AssignmentResult:
    """Only the linear bonus's cases (its submissions share a minimal forward, graded above), or some of them."""
    key = f"linear:{name}"
    if key not in _cache:
        _cache[key] = grade_assignment("rmsnorm", sub(name), "cpu", seed=SEED, timeout=60.0,
                                       selection=Selection(tasks={LINEAR}, names=names))  # fmt: skip
    return _cache[key]


def test_a_minimal_honest_gemv_passes_every_linear_case() -> None:
    results = cases(graded_linear("correct_linear_minimal"), LINEAR)
    assert len(results) == 8 and all(status == "passed" for status, _ in results.values()), results


ALIGNED_K = "float32 M=70 K=64 N=33 eps=1e-06"  # K = 64: one whole tile of the wrong submissions' BLOCK_K
# name -> (the case that exposes it, a phrase of its message, whether it passes ALIGNED_K: the one that breaks only
# where K is no multiple of a step does; those that break wherever a row takes more than one step fail it too, in the
# grader's own launch of the kernel, whose step along K is 16 (specs/rmsnorm.py PROBE_LINEAR)). Only these two cases
# run, to keep CI short.
WRONG_LINEAR = {
    "wrong_linear_mean_over_block": ("float32 M=1 K=100 N=37 eps=1e-06", "outside the tolerance", False),
    "wrong_linear_k_tail_dropped": ("float32 M=4 K=257 N=70 eps=1e-06", "outside the tolerance", True),
    "wrong_linear_rstd_per_tile": ("float32 M=10 K=300 N=40 eps=1e-06 dist=extremes", "outside the tolerance", False),
    "wrong_linear_norm_weight_forgotten": ("float32 M=9 K=96 N=20 eps=1e-05 scale=0.001", "outside the tolerance", False),
    "wrong_linear_calls_pytorch": ("float32 M=1 K=100 N=37 eps=1e-06", "computed with PyTorch (aten.mm)", False),
}


@pytest.mark.parametrize("name", list(WRONG_LINEAR))
def test_wrong_linear_submission_fails_the_case_that_exposes_it(name: str) -> None:
    case, phrase, aligned_passes = WRONG_LINEAR[name]
    results = cases(graded_linear(name, {case, ALIGNED_K}), LINEAR)
    status, message = results[case]
    assert status == "failed" and phrase in message, (status, message)
    assert (results[ALIGNED_K][0] == "passed") == aligned_passes, results[ALIGNED_K]


# name -> (the cases that must fail, a phrase the first failure's message must contain)
WRONG = {
    "wrong_no_mask_row_end": ({"(3x100) float32 eps=1e-06", "(7x1000) float32 eps=1e-06"}, "outside the tolerance"),
    "wrong_bf16_accumulation": ({"(7x1000) float32 eps=1e-06", "(3x20001) float32 eps=1e-06"}, "outside the tolerance"),
    "wrong_eps_outside_sqrt": ({"(9x96) float32 eps=1e-05 scale=0.001", "(5x300) float32 eps=0.1",
                                "(8x2500) float32 eps=1e-06 dist=extremes", "(5x16385) float32 eps=1e-06 dist=extremes"},
                               "outside the tolerance"),
    "wrong_zero_output": ({"(3x100) float32 eps=1e-06"}, "Every element is zero"),
    "wrong_passthrough": ({"(3x100) float32 eps=1e-06", "(1) float32 eps=1e-06"}, "outside the tolerance"),
    "wrong_calls_pytorch": ({"(3x100) float32 eps=1e-06"}, "computed with PyTorch (aten.pow"),
    "wrong_shape": ({"(2x5x129) float32 eps=1e-05"}, "has shape (10, 129), but should have shape (2, 5, 129)"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_submission_fails_the_case_that_exposes_it(name: str) -> None:
    must_fail, phrase = WRONG[name]
    results = cases(graded(sub(name)))
    for case in must_fail:
        status, message = results[case]
        assert status == "failed", (case, status, message)
        assert phrase in message, message
    assert graded(sub(name)).score(False) < 60 * 0.9


def test_eps_in_the_wrong_place_only_shows_where_eps_matters() -> None:
    results = cases(graded(sub("wrong_eps_outside_sqrt")))
    failing = {name for name, (status, _) in results.items() if status != "passed"}
    assert failing == {"(9x96) float32 eps=1e-05 scale=0.001", "(5x300) float32 eps=0.1",
                       "(8x2500) float32 eps=1e-06 dist=extremes",  # and its rows near zero
                       "(5x16385) float32 eps=1e-06 dist=extremes"}


def test_unmasked_row_end_is_caught_on_every_row_length_that_is_not_a_power_of_two() -> None:
    results = cases(graded(sub("wrong_no_mask_row_end")))
    assert results["(1) float32 eps=1e-06"][0] == "passed"  # one column: no row end to run past
    assert all(status != "passed" for name, (status, _) in results.items() if name != "(1) float32 eps=1e-06")


# name -> (the case it misbehaves on, its status, a phrase of the message)
MISBEHAVING = {
    "misbehave_raise": ("(70x33) float32 eps=1e-06", "error", "The call raised RuntimeError: boom (kernels.py line"),
    "misbehave_exit": ("(3x100) float32 eps=1e-06", "error", "Your code called sys.exit(0) during the call"),
    "misbehave_os_exit": ("(5x300) float32 eps=0.1", "error", "exited with code 0"),
    "misbehave_segfault": ("(7x1000) float32 eps=1e-06", "error", "crashed with SIGSEGV"),
}
HANG = "(2x5x129) float32 eps=1e-05"  # where misbehave_hang loops forever, in the forward and the backward


@pytest.mark.parametrize("name", list(MISBEHAVING))
def test_misbehaviour_costs_that_case_and_grading_goes_on(name: str) -> None:
    bad_case, status, phrase = MISBEHAVING[name]
    results = cases(graded(sub(name), timeout=8.0))
    assert results[bad_case][0] == status and phrase in results[bad_case][1], results[bad_case]
    others = {k: v for k, v in results.items() if k != bad_case}
    assert all(s == "passed" for s, _ in others.values()), others
    assert graded(sub(name), timeout=8.0).score(False) == pytest.approx(60 * 10 / 11)


@pytest.mark.parametrize("name", ["misbehave_hang", "misbehave_kernel_spin"])  # a Python loop; a kernel's own loop
def test_a_hung_kernel_costs_one_time_limit_and_the_rest_of_its_part_is_not_run(name: str) -> None:
    result = graded(sub(name), timeout=8.0)
    forward = list(cases(result).items())
    names = [name for name, _ in forward]
    hung = names.index(HANG)
    assert [s for _, (s, _) in forward[:hung]] == ["passed"] * hung  # before it: graded as usual
    assert forward[hung][1][0] == "timeout" and "took longer than 8 s" in forward[hung][1][1], forward[hung]
    for name, (status, message) in forward[hung + 1 :]:  # after it: reported at once, not run
        assert status == "skipped" and f"Not run: case {HANG} ran out of time" in message, (name, message)
    assert result.score(False) == pytest.approx(60 * hung / len(forward))
    # The backward calls the same forward and hangs too: once something hung, a case gets a quarter of the limit.
    backward = cases(result, BACKWARD)
    assert backward[HANG][0] == "timeout" and "took longer than 2 s" in backward[HANG][1], backward[HANG]
    assert sum(c.seconds for c in result.cases) < 30.0  # two limits (8 + 2 s) and the rest; one per case would be 56 s


def test_a_reply_that_never_ends_costs_one_time_limit_not_the_whole_grading() -> None:
    """A length header and nothing more in the grader's channel: the grader reads whole messages by the deadline."""
    import time

    t0 = time.perf_counter()
    result = grade_assignment("rmsnorm", sub("misbehave_partial_reply"), "cpu", seed=SEED, timeout=6.0)
    assert time.perf_counter() - t0 < 90.0
    assert result.score(False) == 0
    forward = cases(result)
    assert all(s == "error" and "Timed out" in m for s, m in forward.values()), forward


BAD = {
    "bad_syntax": "kernels.py has a syntax error on line 24: unmatched ')'.",
    "bad_missing_import": "kernels.py could not be imported: there is no module named 'tritn' (kernels.py line 5: `import tritn",
    "bad_missing_function": "kernels.py does not define `rmsnorm`: the grader calls rmsnorm(x, weight, eps=1e-6).",
    "bad_signature": "but the grader calls rmsnorm(x, weight, eps=1e-6): keep the starter code's signature.",
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_broken_file_gets_one_sentence_on_every_case(name: str) -> None:
    r = graded(sub(name))
    assert r.score(False) == 0
    for c in r.cases:
        if c.kind == "correctness":
            assert c.status == "error" and BAD[name] in c.message, c.message
            assert "Traceback" not in c.message


def test_a_missing_file_is_explained() -> None:
    r = grade_assignment("rmsnorm", SUBMISSIONS / "nowhere" / "kernels.py", "cpu", seed=SEED)
    assert r.score(False) == 0
    assert all("There is no" in c.message for c in r.cases if c.kind == "correctness")


def test_cli_writes_gradescope_results(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", "rmsnorm", "--submission", str(sub("wrong_eps_outside_sqrt")),
         "--device", "cpu", "--seed", str(SEED), "--json", str(out), "--skip-doctor"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "05 RMSNorm: 38.2/60 points" in proc.stdout
    data = json.loads(out.read_text())
    assert data["score"] == pytest.approx(60 * 7 / 11, abs=1e-3)
    forward = [t for t in data["tests"] if "rmsnorm.forward ·" in t["name"]]
    assert len(forward) == 11
    assert {t["status"] for t in forward} == {"passed", "failed"}
    assert all(set(t) >= {"name", "score", "max_score", "status", "output", "visibility"} for t in data["tests"])
    assert "Speed was not graded" in data["output"]


def test_cli_explains_bad_arguments() -> None:
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "nosuch", "--skip-doctor"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    from autograder.specs import SLUGS

    assert proc.returncode == 2 and f"Unknown assignment nosuch: the course has {', '.join(SLUGS)}." in proc.stdout
