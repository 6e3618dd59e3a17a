"""course.validate.CheckedOnce: a public call whose signature passed its checks before skips them, so the
signature must change with everything the checks look at, and a failing call must fail every time."""

from __future__ import annotations

import pytest
import torch

from course.loader import load_kernels
from course.validate import CheckedOnce


def _x() -> torch.Tensor:
    return torch.zeros(4, 8)


@pytest.mark.parametrize(
    "other",
    [
        lambda: torch.zeros(4, 9),  # shape
        lambda: torch.zeros(4, 8, dtype=torch.float16),  # dtype
        lambda: torch.zeros(4, 8, device="meta"),  # device
        lambda: torch.zeros(8, 4).t(),  # contiguity, same shape
        lambda: torch.nn.Parameter(torch.zeros(4, 8)),  # type
        lambda: [0.0] * 8,  # not a tensor
    ],
    ids=["shape", "dtype", "device", "contiguity", "type", "not a tensor"],
)
def test_the_signature_changes_with_what_the_checks_see(other) -> None:  # noqa: ANN001 - a factory
    assert CheckedOnce.signature(_x(), 1e-6) != CheckedOnce.signature(other(), 1e-6)


@pytest.mark.parametrize("a, b", [(1, True), (1, 1.0), (128, 64), (None, 0.5), (1e-6, 1e-5)])
def test_a_scalar_signs_with_its_type_and_value(a: object, b: object) -> None:
    assert CheckedOnce.signature(_x(), a) != CheckedOnce.signature(_x(), b)
    assert CheckedOnce.signature(_x(), a) == CheckedOnce.signature(_x(), a)


def test_the_interpreter_setting_is_part_of_the_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    on = CheckedOnce.signature(_x())
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert CheckedOnce.signature(_x()) != on


def test_only_accepted_signatures_are_seen_and_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = CheckedOnce(lambda *args: None)
    key = checked.signature(_x(), 2)
    assert not checked.seen(key)
    checked.accept(key)
    assert checked.seen(key) and checked.seen(checked.signature(_x(), 2))
    unhashable = checked.signature(_x(), [1, 2])
    checked.accept(unhashable)
    assert not checked.seen(unhashable)
    monkeypatch.setattr(CheckedOnce, "LIMIT", 3)
    for n in range(5):
        checked.accept(checked.signature(_x(), n))
    assert len(checked._accepted) <= 3


def test_the_checks_run_once_per_accepted_signature_and_on_every_failing_call() -> None:
    runs: list[tuple] = []

    def checks(x: torch.Tensor, n: int) -> None:
        runs.append((tuple(x.shape), n))
        if n < 0:
            raise ValueError("n must not be negative")

    checked = CheckedOnce(checks)
    for _ in range(3):
        checked(_x(), 1)
    assert runs == [((4, 8), 1)]
    checked(torch.zeros(2, 2), 1)
    assert len(runs) == 2
    for _ in range(2):
        with pytest.raises(ValueError, match="negative"):
            checked(_x(), -1)
    assert len(runs) == 4


def test_a_call_that_fails_its_checks_fails_every_time_after_a_good_one() -> None:
    rmsnorm = load_kernels("rmsnorm", "solutions").rmsnorm
    x, w = torch.randn(3, 8), torch.ones(8)
    assert rmsnorm(x, w).shape == x.shape
    for _ in range(2):
        with pytest.raises(ValueError, match="must have x.shape"):
            rmsnorm(x, torch.ones(7))
        with pytest.raises(ValueError, match="non-negative"):
            rmsnorm(x, w, eps=-1.0)
    assert rmsnorm(x, w).shape == x.shape


def test_a_cpu_call_accepted_under_the_interpreter_is_refused_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    swiglu = load_kernels("swiglu", "solutions").swiglu
    gate = torch.randn(2, 16)
    swiglu(gate, gate)  # accepted: the interpreter runs CPU tensors
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="CUDA GPU"):
        swiglu(gate, gate)


def test_a_compiled_caller_does_not_guard_on_the_accepted_signatures() -> None:
    """While torch.compile traces, the set is not even looked up: a lookup makes Dynamo guard on every key the set
    holds, so that any new signature accepted later, by an eager call anywhere in the program, would fail those
    guards and recompile the caller (as it did until 2026-12-06, with about 100 guards on the set's contents)."""
    from torch._dynamo.utils import counters

    rmsnorm = load_kernels("rmsnorm", "solutions").rmsnorm
    w = torch.ones(8)
    torch._dynamo.reset()
    step = torch.compile(lambda x: rmsnorm(x, w) * 2.0, fullgraph=True, backend="eager")
    x = torch.randn(3, 8)
    expected = step(x)
    graphs = counters["stats"]["unique_graphs"]
    rmsnorm(torch.randn(5, 8), w)  # eager, a signature the set has not seen
    assert torch.equal(step(x), expected)
    assert counters["stats"]["unique_graphs"] == graphs
