"""The sentence a student reads when the replay of a graded call on new inputs misses: a kernel whose rounding depends
on the values (right on the worker's inputs, just outside the tolerance on the replay's) is told to look at its
precision; an answer wrong in every digit, or NaN, is told that it did not come from the kernels."""

from __future__ import annotations

import torch

from autograder.grade import _replay_verdict
from autograder.specs import load_spec

GELU = load_spec("fusion").part("fusion.gelu")
PARAMS = {"shape": [1], "dtype": "float32"}


def _verdict(got: float, x: float = 1.0) -> tuple[bool, str]:
    from autograder.specs.fusion import reference_gelu

    reference = reference_gelu({"x": torch.tensor([x])}, PARAMS)
    return _replay_verdict(GELU, PARAMS, {"status": "ok", "outputs": {"y": torch.tensor([got])}}, reference, reads=0)


def test_a_replay_just_outside_the_tolerance_is_told_to_look_at_its_precision() -> None:
    from autograder.specs.fusion import reference_gelu

    want = reference_gelu({"x": torch.tensor([1.0])}, PARAMS)["y"].item()
    ok, message = _verdict(want * 1.02)  # 2% off: a rounding error that grew, not another answer
    assert not ok
    assert "just outside the tolerance" in message and "--seed" in message
    assert "did not come from your kernels" not in message


def test_a_replay_wrong_in_every_digit_or_nan_is_told_the_answer_came_from_elsewhere() -> None:
    for got in (float("nan"), 0.0, 3.0):
        ok, message = _verdict(got)
        assert not ok
        assert "did not come from your kernels" in message, (got, message)
