"""The notebooks' exercise checks say one sentence: passed, still open, or where the answer is wrong."""

from __future__ import annotations

import pytest
import torch

from course.exercises import EXACT, STRICT_ENV, ExerciseNotPassed, case, check, check_that


def _stub(x: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError("TODO(ex99.double): not implemented yet; write it in this cell")


def _unwritten_tail(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)  # the check fills fresh memory with NaN
    out[..., :64] = 2 * x[..., :64]
    return out


@pytest.fixture(autouse=True)
def lenient(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STRICT_ENV, "0")


def _said(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1, lines  # one sentence, one line
    return lines[0]


def test_a_right_answer_passes_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert check("ex99.double", lambda x: 2 * x, lambda x: 2 * x, [case(torch.randn(7)), case(torch.randn(3, 5))])
    assert _said(capsys).startswith("ex99.double passed all 2 cases")


def test_an_open_exercise_says_it_is_not_implemented(capsys: pytest.CaptureFixture[str]) -> None:
    assert not check("ex99.double", _stub, lambda x: 2 * x, [case(torch.randn(7))])
    assert _said(capsys) == ("ex99.double is not implemented yet: fill in the cell marked TODO(ex99.double) above, "
                             "run it, then run this check again.")


def test_unwritten_elements_are_named_with_the_first_index_and_the_block_edge(capsys: pytest.CaptureFixture[str]) -> None:
    assert not check("ex99.double", _unwritten_tail, lambda x: 2 * x, [case(torch.randn(3, 100))], tol=EXACT)
    said = _said(capsys)
    assert "ex99.double is wrong on (3, 100)" in said and "the first at (0, 64)" in said
    assert "NaN (never written" in said and "past a multiple of 64" in said


def test_a_changed_input_and_a_wrong_shape_are_sentences(capsys: pytest.CaptureFixture[str]) -> None:
    assert not check("ex99.double", lambda x: x.mul_(2), lambda x: 2 * x, [case(torch.randn(4))])
    assert "changed its input 0" in _said(capsys)
    assert not check("ex99.double", lambda x: 2 * x[:3], lambda x: 2 * x, [case(torch.randn(4))])
    assert "has shape (3,), but should have (4,)" in _said(capsys)


def test_a_rule_check_and_strict_mode(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert check_that("ex99.rule", lambda: 5.0, lambda v: "" if v == 5.0 else "off", lambda v: f"{v} ms")
    assert _said(capsys) == "ex99.rule passed: 5.0 ms."
    monkeypatch.setenv(STRICT_ENV, "1")  # the course's own runs of the instructor notebooks
    with pytest.raises(ExerciseNotPassed, match="not implemented yet"):
        check("ex99.double", _stub, lambda x: 2 * x, [case(torch.randn(7))])
