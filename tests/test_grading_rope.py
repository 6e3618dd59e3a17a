"""Grading the RoPE assignment on the CPU tier: the solution scores, the stub scores nothing, and each wrong
pairing, sign, position axis or unmasked edge fails exactly the cases that can expose it.

Each submission is graded once per session (a worker process costs seconds); tests then read the result.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder.grade import AssignmentResult, grade_assignment
from autograder.specs.rope import CPU_FORWARD
from conftest import REPO_ROOT, SEED, SUBMISSIONS

FORWARD = "rope.forward"
BACKWARD = "rope.backward"
_cache: dict[str, AssignmentResult] = {}
SUBMITTED = [REPO_ROOT / "solutions" / "rope" / "kernels.py", REPO_ROOT / "assignments" / "rope" / "kernels.py"] + [
    SUBMISSIONS / "rope" / f"{name}.py" for name in ['correct_minimal', 'wrong_interleaved', 'wrong_sin_sign', 'wrong_position_axis', 'wrong_head_dim_unmasked']
]


def graded(path: Path) -> AssignmentResult:
    if not _cache:  # grade them all at once: each runs in its own worker process, so they overlap
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = pool.map(lambda p: grade_assignment("rope", p, "cpu", seed=SEED, timeout=60.0), SUBMITTED)
            _cache.update(zip(map(str, SUBMITTED), results))
    return _cache[str(path)]


def sub(name: str) -> Path:
    return SUBMISSIONS / "rope" / f"{name}.py"


def cases(result: AssignmentResult, task: str = FORWARD) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in result.cases if c.task == task and c.kind == "correctness"}


def name_of(shape: list[int]) -> str:
    return f"({'x'.join(map(str, shape))}) float32"


def test_solution_scores_full_points_and_full_bonus() -> None:
    r = graded(REPO_ROOT / "solutions" / "rope" / "kernels.py")
    assert r.score(False) == pytest.approx(60.0) and r.max_score(False) == pytest.approx(60.0)
    assert r.score(True) == pytest.approx(20.0) and r.max_score(True) == pytest.approx(20.0)
    assert all(c.status == "skipped" and c.max_score == 0 for c in r.cases if c.kind == "speed")


def test_untouched_stub_scores_zero_with_a_not_implemented_message() -> None:
    r = graded(REPO_ROOT / "assignments" / "rope" / "kernels.py")
    assert r.score(False) == 0 and r.score(True) == 0
    for c in r.cases:
        if c.kind == "correctness":
            assert c.status == "not_implemented", c.message
            assert c.message == "Not implemented yet: fill in the TODO marked rope.forward in kernels.py."


def test_a_minimal_honest_forward_passes_every_forward_case() -> None:
    r = graded(sub("correct_minimal"))
    assert all(status == "passed" for status, _ in cases(r).values()), cases(r)
    for status, message in cases(r, BACKWARD).values():
        assert status == "error" and "no autograd history: route the call through RoPEFunction.apply" in message


HALF_IS_POWER_OF_TWO = {name_of(p["shape"]) for p in CPU_FORWARD if (p["shape"][3] // 2) & (p["shape"][3] // 2 - 1) == 0}
ONE_HEAD = {name_of(p["shape"]) for p in CPU_FORWARD if p["shape"][0] * p["shape"][1] == 1 or p["shape"][1] == 1}
D_IS_TWO = {name_of(p["shape"]) for p in CPU_FORWARD if p["shape"][3] == 2}

# name -> (the cases that pass because they cannot expose the bug, a phrase every failure's message holds)
WRONG = {
    # With D = 2 there is one pair: both pairings agree.
    "wrong_interleaved": (D_IS_TWO, "outside the tolerance"),
    # Every case has positions past 0 (or a first position past 0), where sin is not zero.
    "wrong_sin_sign": (set(), "outside the tolerance"),
    # With one head per batch element the (B, S, H, D) reading gives the right position.
    "wrong_position_axis": (ONE_HEAD, "outside the tolerance"),
    # When D/2 is a power of two the tile has no lanes past the edge.
    "wrong_head_dim_unmasked": (HALF_IS_POWER_OF_TWO, "Your code wrote outside a tensor allocated during the call"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_submission_fails_exactly_the_cases_that_expose_it(name: str) -> None:
    may_pass, phrase = WRONG[name]
    results = cases(graded(sub(name)))
    passed = {case for case, (status, _) in results.items() if status == "passed"}
    assert passed == may_pass, passed ^ may_pass
    for case, (status, message) in results.items():
        if case not in may_pass:
            assert status == "failed" and phrase in message, (case, status, message)
    assert graded(sub(name)).score(False) <= 60 * 5 / 9


def test_position_axis_bug_is_reported_as_rows_past_the_first() -> None:
    status, message = cases(graded(sub("wrong_position_axis")))[name_of([2, 8, 20, 32])]
    assert status == "failed" and "The first is at index (0, 0, 1, 0)" in message  # position 0 is right by luck


def test_unmasked_head_dim_edge_names_how_far_past_the_end_it_wrote() -> None:
    status, message = cases(graded(sub("wrong_head_dim_unmasked")))[name_of([1, 2, 33, 96])]
    # D/2 = 48 in tiles of 64: the last row's second half writes 64 - 48 = 16 elements past the end.
    assert "shape (1, 2, 33, 96), float32): memory up to 16 elements past its last element was overwritten" in message
