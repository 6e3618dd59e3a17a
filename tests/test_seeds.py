"""The grader's seeds: a fixed base (--seed) repeats the inputs a submission's call sees, never the inputs of the
grader's replays, which a submission could otherwise compute from the base on the grader's command line (or from its
own seeds). The repo's own tests ask for repeatable replays explicitly (tests/conftest.py)."""

from __future__ import annotations

import pytest

from autograder.grade import REPRODUCIBLE_REPLAYS_ENV, Seeds


def test_a_fixed_base_repeats_the_workers_seeds() -> None:
    a, b = Seeds(12345, reproducible_replays=False), Seeds(12345, reproducible_replays=False)
    assert [a.next() for _ in range(5)] == [b.next() for _ in range(5)]


def test_a_fixed_base_leaves_the_replays_secret() -> None:
    runs = [[Seeds(12345, reproducible_replays=False).replay() for _ in range(3)] for _ in range(2)]
    assert runs[0] != runs[1]  # 62 random bits each: equal only by a 2**-186 chance
    fixed = Seeds(12345, reproducible_replays=True)
    assert set(runs[0]).isdisjoint(fixed.replay() for _ in range(3))


def test_the_repos_own_tests_get_repeatable_replays() -> None:
    a, b = Seeds(12345, reproducible_replays=True), Seeds(12345, reproducible_replays=True)
    assert [a.replay() for _ in range(3)] == [b.replay() for _ in range(3)]


@pytest.mark.parametrize("value, repeatable", [(None, False), ("0", False), ("1", True)])
def test_only_the_tests_setting_makes_replays_repeatable(monkeypatch: pytest.MonkeyPatch, value: str | None,
                                                        repeatable: bool) -> None:
    if value is None:
        monkeypatch.delenv(REPRODUCIBLE_REPLAYS_ENV, raising=False)
    else:
        monkeypatch.setenv(REPRODUCIBLE_REPLAYS_ENV, value)
    assert (Seeds(7).replay() == Seeds(7).replay()) is repeatable
