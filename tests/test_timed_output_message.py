"""What the grader tells a student whose checked timed call was wrong: its precision at the speed case's size, or an
answer that did not come from the launches it timed. The case fails either way; the sentence says what to do next."""

from __future__ import annotations

import pytest
import torch

from autograder.grade import PRECISION_LIKE_ERROR, wrong_timed_output
from course.comparison import Tolerance, compare

TOL = Tolerance(atol=1e-2, rtol=1e-2)


def _reference(seed: int) -> torch.Tensor:
    return torch.randn(64, 512, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)  # (M, N)


def test_a_few_elements_just_outside_the_tolerance_are_called_the_kernels_precision() -> None:
    """The reference INT4 decode's failure of 2026-12-06 (1 element of 32,768 outside the tolerance) was told that its
    answer was kept from an earlier call or computed outside its kernels."""
    ref = _reference(0)
    out = ref.clone()
    allowed = TOL.atol * ref.abs().mean() + TOL.rtol * ref[3, 7].abs()
    out[3, 7] += 1.5 * allowed
    verdict = compare("output", out.float(), ref, TOL)
    assert not verdict.ok and verdict.wrong_fraction == pytest.approx(1 / ref.numel())
    message = wrong_timed_output(2, 50, "", verdict)
    assert message.startswith("The output of timed call 3 of 50 was wrong: ")
    assert "your kernel's precision at the speed case's size" in message and "not reproduced" not in message


@pytest.mark.parametrize("wrong", ["another input's answer", "never written", "far off in one place"])
def test_an_output_wrong_almost_everywhere_or_far_off_is_not_called_precision(wrong: str) -> None:
    ref = _reference(0)
    out = {"another input's answer": _reference(1), "never written": torch.full_like(ref, float("nan")),
           "far off in one place": ref.clone()}[wrong]  # fmt: skip
    if wrong == "far off in one place":
        out[0, 0] += 10 * PRECISION_LIKE_ERROR * (TOL.atol * ref.abs().mean() + TOL.rtol * ref[0, 0].abs())
    verdict = compare("output", out.float(), ref, TOL)
    assert not verdict.ok
    message = wrong_timed_output(0, 50, "", verdict)
    assert "not reproduced" in message and "precision" not in message


def test_a_wrong_shape_is_not_called_precision() -> None:
    message = wrong_timed_output(0, 50, "`output` should have shape (64, 512), but has (64, 511).", None)
    assert message.startswith("The output of timed call 1 of 50 was wrong: `output` should have shape")
    assert "not reproduced" in message


@pytest.mark.parametrize(
    ("wrong", "share"),
    [(64 * 512, "100%"), (64 * 512 - 1, "99.99%"), (12_000, "37%"), (100, "0.31%"), (1, "0.0031%")],
)
def test_the_share_of_wrong_elements_is_written_as_a_student_reads_it(wrong: int, share: str) -> None:
    """An H100 grading told a student that "14,336 of 14,336 elements (1e+02%)" were wrong (2026-12-07)."""
    ref = _reference(0)
    out = ref.clone().reshape(-1)
    out[:wrong] += 1.0 + ref.reshape(-1)[:wrong].abs()  # past atol * mean|ref| + rtol * |ref| everywhere
    verdict = compare("output", out.reshape(ref.shape).float(), ref, TOL)
    assert f"{wrong:,} of {ref.numel():,} elements ({share}) are outside the tolerance" in verdict.message


@pytest.mark.parametrize(("pct", "text"), [(0.0, "0%"), (99.6, "99.60%"), (99.4, "99%"),
                                           (2.2, "2.2%"), (0.00005, "less than 0.0001%"), (100.0, "100%")])
def test_a_percentage_never_reads_as_an_exponent_or_as_more_than_it_is(pct: float, text: str) -> None:
    """A passing case's "max error 99.6% of the tolerance" was written "1e+02%", which reads as a failure."""
    from course.comparison import fmt_percent

    assert fmt_percent(pct) == text
