"""course.env.interpreter_requested: read on every check and launch, so it reads os.environ's own dict rather
than os.environ.get; it must still see every change made through os.environ, at once."""

from __future__ import annotations

import os

import pytest

from course.env import interpreter_requested


@pytest.mark.parametrize(
    "value, expected", [("1", True), (" Yes ", True), ("on", True), ("0", False), ("", False), (None, False)]
)
def test_it_follows_every_change_of_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool
) -> None:
    before = interpreter_requested()
    if value is None:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    else:
        monkeypatch.setenv("TRITON_INTERPRET", value)
    assert interpreter_requested() is expected
    monkeypatch.undo()
    assert interpreter_requested() is before


def test_it_reads_an_environ_that_was_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "environ", {"TRITON_INTERPRET": "true"})
    assert interpreter_requested() is True
    monkeypatch.setattr(os, "environ", {})
    assert interpreter_requested() is False
