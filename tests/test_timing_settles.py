"""Timing ends early once times have settled, never before its minimum, and runs every rep while they have not."""

from __future__ import annotations

import time

import torch

from autograder import timing

CPU = torch.device("cpu")


def _sleeper(ms_of: callable) -> callable:
    def fn(r: int) -> None:
        time.sleep(ms_of(r) / 1e3)

    return fn


def test_steady_times_stop_at_the_minimum_number_of_reps() -> None:
    times = timing.time_calls({"a": _sleeper(lambda r: 2.0), "b": _sleeper(lambda r: 2.0)}, [0], lambda r: r, 40, CPU,
                              warmup_ms=0.0, min_warmup_calls=1, min_reps=6, settled_spread=0.5)  # fmt: skip
    assert len(times["a"]) == len(times["b"]) == 6


def test_scattered_times_run_every_rep() -> None:
    times = timing.time_calls({"a": _sleeper(lambda r: 1.0 + 3.0 * (r % 2))}, [0], lambda r: r, 10, CPU,
                              warmup_ms=0.0, min_warmup_calls=1, min_reps=4, settled_spread=0.03)  # fmt: skip
    assert len(times["a"]) == 10


def test_without_a_minimum_every_rep_runs() -> None:
    times = timing.time_calls({"a": _sleeper(lambda r: 1.0)}, [0], lambda r: r, 7, CPU, warmup_ms=0.0, min_warmup_calls=1)
    assert len(times["a"]) == 7
