"""Grading the fusion assignment on the CPU tier: right answers score, and each wrong submission fails
exactly the cases that expose its bug, with a message that points at it.

Each submission is graded once per session (a worker process costs seconds); tests then read the result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.grade import AssignmentResult, grade_assignment
from conftest import REPO_ROOT, SEED, SUBMISSIONS

GELU = "fusion.gelu"
SOFTMAX = "fusion.softmax"
_cache: dict[str, AssignmentResult] = {}


def graded(path: Path) -> AssignmentResult:
    key = str(path)
    if key not in _cache:
        _cache[key] = grade_assignment("fusion", path, "cpu", seed=SEED, timeout=60.0)
    return _cache[key]


def sub(name: str) -> Path:
    return SUBMISSIONS / "fusion" / f"{name}.py"


def cases(result: AssignmentResult, task: str) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in result.cases if c.task == task and c.kind == "correctness"}


def failing(result: AssignmentResult, task: str) -> set[str]:
    return {name for name, (status, _) in cases(result, task).items() if status != "passed"}


def test_solution_scores_full_points() -> None:
    r = graded(REPO_ROOT / "solutions" / "fusion" / "kernels.py")
    assert r.score(False) == pytest.approx(60.0) and r.max_score(False) == pytest.approx(60.0)
    assert len(cases(r, GELU)) == 10 and len(cases(r, SOFTMAX)) == 13
    assert all(c.status == "skipped" and c.max_score == 0 for c in r.cases if c.kind == "speed")
    assert "Speed was not graded" in r.note


def test_untouched_stub_scores_zero_and_names_each_task() -> None:
    r = graded(REPO_ROOT / "assignments" / "fusion" / "kernels.py")
    assert r.score(False) == 0
    for c in r.cases:
        if c.kind == "correctness":
            assert c.status == "not_implemented"
            assert c.message == f"Not implemented yet: fill in the TODO marked {c.task} in kernels.py."


def test_a_minimal_honest_submission_passes_every_case() -> None:
    r = graded(sub("correct_minimal"))
    assert r.score(False) == pytest.approx(60.0), [c.message for c in r.cases if c.status != "passed"]


def test_exact_gelu_fails_the_float32_cases_and_nothing_in_softmax() -> None:
    r = graded(sub("wrong_gelu_exact"))
    # Only tiny inputs (|x| ~ 0.01, where the two forms agree to 1e-8) and huge ones (where both are x, or
    # 0) let the exact GeLU through.
    assert failing(r, GELU) == set(cases(r, GELU)) - {"(5x300) float32 scale=0.01", "(7x300) float32 dist=huge"}
    assert failing(r, SOFTMAX) == set()
    status, message = cases(r, GELU)["(1000) float32"]
    assert status == "failed" and "outside the tolerance" in message


def test_softmax_without_the_max_fails_exactly_the_large_logit_cases() -> None:
    r = graded(sub("wrong_softmax_no_max"))
    # ... and the hostile rows, whose logits near -1e4 and near the largest float32 are larger still
    assert failing(r, SOFTMAX) == {"(5x300) float32 offset=100.0", "(4x77) float32 offset=-100.0",
                                   "(10x3000) float32 dist=hostile", "(5x36865) float32 dist=hostile"}
    overflow = cases(r, SOFTMAX)["(5x300) float32 offset=100.0"][1]
    assert "1,500 of 1,500 elements" in overflow and "elements are NaN" in overflow  # exp(x) = inf, inf / inf
    assert failing(r, GELU) == set()


def test_a_masked_lane_counted_in_the_sum_fails_every_row_that_is_not_a_power_of_two() -> None:
    r = graded(sub("wrong_softmax_masked_zero"))
    expected = {"(3x100) float32", "(2x5x129) float32", "(70x33) float32", "(7x1000) float32", "(2x3x4097) float32",
                "(2x10000) float32", "(3x40000) float32", "(4x77) float32 offset=-100.0"}  # fmt: skip
    assert expected <= failing(r, SOFTMAX)
    # One column leaves no lane to mask; logits near +100 make exp(0 - max) vanish, hiding the bug.
    assert cases(r, SOFTMAX)["(1) float32"][0] == "passed"
    assert cases(r, SOFTMAX)["(5x300) float32 offset=100.0"][0] == "passed"
    assert "outside the tolerance" in cases(r, SOFTMAX)["(3x100) float32"][1]


def test_computing_gelu_with_pytorch_earns_nothing_for_gelu() -> None:
    r = graded(sub("wrong_calls_pytorch"))
    for status, message in cases(r, GELU).values():
        assert status == "failed" and "computed with PyTorch (aten.gelu" in message
    assert failing(r, SOFTMAX) == set()
    assert r.score(False) == pytest.approx(30.0)
