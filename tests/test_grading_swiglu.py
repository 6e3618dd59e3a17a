"""Grading the SwiGLU assignment on the CPU tier: the solution scores, the stub scores nothing, sigmoid in
place of silu and an unmasked last block fail every case, and a bf16 product passes here (float32 only) but
not on the GPU tier (tests/test_tolerances_rope_swiglu.py shows that half).

Each submission is graded once per session (a worker process costs seconds); tests then read the result.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder.grade import AssignmentResult, grade_assignment
from conftest import REPO_ROOT, SEED, SUBMISSIONS

FORWARD = "swiglu.forward"
BACKWARD = "swiglu.backward"
_cache: dict[str, AssignmentResult] = {}
SUBMITTED = [REPO_ROOT / "solutions" / "swiglu" / "kernels.py", REPO_ROOT / "assignments" / "swiglu" / "kernels.py"] + [
    SUBMISSIONS / "swiglu" / f"{name}.py" for name in ['correct_minimal', 'wrong_sigmoid', 'wrong_last_block_unmasked', 'wrong_bf16_product']
]


def graded(path: Path) -> AssignmentResult:
    if not _cache:  # grade them all at once: each runs in its own worker process, so they overlap
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = pool.map(lambda p: grade_assignment("swiglu", p, "cpu", seed=SEED, timeout=60.0), SUBMITTED)
            _cache.update(zip(map(str, SUBMITTED), results))
    return _cache[str(path)]


def sub(name: str) -> Path:
    return SUBMISSIONS / "swiglu" / f"{name}.py"


def cases(result: AssignmentResult, task: str = FORWARD) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in result.cases if c.task == task and c.kind == "correctness"}


def test_solution_scores_full_points_and_full_bonus() -> None:
    r = graded(REPO_ROOT / "solutions" / "swiglu" / "kernels.py")
    assert r.score(False) == pytest.approx(60.0) and r.max_score(False) == pytest.approx(60.0)
    assert r.score(True) == pytest.approx(20.0) and r.max_score(True) == pytest.approx(20.0)
    assert all(c.status == "skipped" and c.max_score == 0 for c in r.cases if c.kind == "speed")


def test_untouched_stub_scores_zero_with_a_not_implemented_message() -> None:
    r = graded(REPO_ROOT / "assignments" / "swiglu" / "kernels.py")
    assert r.score(False) == 0 and r.score(True) == 0
    for c in r.cases:
        if c.kind == "correctness":
            assert c.status == "not_implemented", c.message
            assert c.message == "Not implemented yet: fill in the TODO marked swiglu.forward in kernels.py."


def test_a_minimal_honest_forward_passes_every_forward_case() -> None:
    r = graded(sub("correct_minimal"))
    assert all(status == "passed" for status, _ in cases(r).values()), cases(r)
    for status, message in cases(r, BACKWARD).values():
        assert status == "error" and "no autograd history: route the call through SwiGLUFunction.apply" in message


def test_sigmoid_instead_of_silu_fails_every_case() -> None:
    results = cases(graded(sub("wrong_sigmoid")))
    assert all(status == "failed" and "outside the tolerance" in message for status, message in results.values())


def test_unmasked_last_block_fails_every_case_by_writing_past_the_output() -> None:
    # No CPU case has a multiple of 256 elements, so every one has a partial last block.
    results = cases(graded(sub("wrong_last_block_unmasked")))
    for status, message in results.values():
        assert status == "failed" and "Your code wrote outside a tensor allocated during the call" in message
    # 3 x 100 = 300 elements in blocks of 256: the second block's stores run 2 * 256 - 300 = 212 past the end.
    assert "memory up to 212 elements past its last element was overwritten" in results["(3x100) float32"][1]


def test_bf16_product_passes_the_float32_cpu_tier() -> None:
    # Its only fault is an extra rounding in 16-bit dtypes: float32 cannot show it; the GPU tier does.
    assert graded(sub("wrong_bf16_product")).score(False) == pytest.approx(60.0)
