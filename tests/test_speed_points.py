"""The speed rubric: no points at the floor, all at the target, log-linear in between."""

from __future__ import annotations

import math

import pytest

from autograder.grade import speed_points
from autograder.spec import Case


@pytest.mark.parametrize(
    ("speedup", "target", "zero_at", "expected"),
    [
        (1.0, 8.0, 1.0, 0.0),  # as fast as eager PyTorch earns nothing
        (0.5, 8.0, 1.0, 0.0),
        (8.0, 8.0, 1.0, 10.0),
        (20.0, 8.0, 1.0, 10.0),  # capped
        (math.sqrt(8.0), 8.0, 1.0, 5.0),  # halfway on a log scale
        (0.5, 0.9, 0.5, 0.0),  # against cuBLAS: nothing at half its speed
        (0.9, 0.9, 0.5, 10.0),
        (math.sqrt(0.45), 0.9, 0.5, 5.0),
        (float("nan"), 8.0, 1.0, 0.0),
    ],
)
def test_speed_points_follow_the_log_linear_rule(speedup: float, target: float, zero_at: float, expected: float) -> None:
    assert speed_points(speedup, target, 10.0, zero_at) == pytest.approx(expected)


def test_case_names_work_without_a_shape_parameter() -> None:
    assert Case({"M": 1, "K": 4096, "dtype": "bfloat16"}, "gpu").name == "bfloat16 M=1 K=4096"
    assert Case({"shape": [3, 5], "dtype": "float32", "eps": 0.1}, "cpu").name == "(3x5) float32 eps=0.1"
