"""Inline checks for the notebooks' exercises: run the student's code on small odd cases, say one sentence.

Each exercise in a notebook has an ID (`fusion.softmax_rows`), shared by the `TODO(<id>)` in its cell, the
NotImplementedError its stub raises, and the sentence the check prints. A check runs the student's function
on a few small cases whose sizes are multiples of nothing, compares with a float64 reference (with the same
comparison the grader uses), and prints one sentence: passed, or where it is wrong (the first bad index,
NaN from unwritten memory, wrong elements past a block edge), or that the exercise is still open.

Fresh memory is filled with NaN during the student's call, as in the grader, so an element the student's
kernel never writes cannot pass by luck. The course's own tests set COURSE_STRICT_EXERCISES=1: then a check
that does not pass raises AssertionError, so that CI fails when an instructor's solution is wrong.
"""

from __future__ import annotations

import math
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from course.comparison import Tolerance, compare

STRICT_ENV = "COURSE_STRICT_EXERCISES"

# float32 arithmetic lands within a few ulp of float64; 1e-5 leaves room for different summation orders
# and rejects a 16-bit computation or a formula that is merely close (the exact GeLU for the tanh one).
FLOAT32 = Tolerance(rtol=1e-5, atol=1e-5)
EXACT = Tolerance(rtol=0.0, atol=0.0)


@dataclass
class Case:
    """The arguments of one call of the student's function (and of the reference), and a name for reports."""

    args: tuple
    kwargs: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        shapes = list(dict.fromkeys(str(tuple(a.shape)) for a in self.args if isinstance(a, torch.Tensor)))
        others = [f"{k}={v}" for k, v in self.kwargs.items() if not isinstance(v, torch.Tensor)]
        return ", ".join(shapes + others) or "the case"


def case(*args: Any, label: str = "", **kwargs: Any) -> Case:
    """One call's arguments: `case(x, w, eps=1e-6)`."""
    return Case(args, kwargs, label)


class ExerciseNotPassed(AssertionError):
    """Raised in strict mode (the course's own tests) by a check that does not pass."""


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def open_exercise(exc: BaseException) -> str:
    """The exercise ID of the NotImplementedError stub behind `exc` (through causes and contexts), or ''."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        text = str(e)
        if isinstance(e, NotImplementedError) or "NotImplementedError" in text:
            start = text.find("TODO(")
            if start >= 0 and ")" in text[start:]:
                return text[start + 5:text.index(")", start)]
        stack += [e.__cause__, e.__context__]
    return ""


def _report(exercise: str, ok: bool, sentence: str) -> bool:
    print(sentence)
    if not ok and strict():
        raise ExerciseNotPassed(sentence)
    return ok


def _failure(exercise: str, exc: BaseException, where: str) -> str:
    todo = open_exercise(exc)
    if todo == exercise:
        return f"{exercise} is not implemented yet: fill in the cell marked TODO({exercise}) above, run it, then run this check again."
    if todo:
        return f"{exercise} calls {todo}, which is not implemented yet: do that exercise first."
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    detail = f": {lines[-1].strip()}" if lines else ""
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at line {frame.lineno} of {frame.name})" if frame is not None and frame.name != "<module>" else ""
    return f"{exercise} raised {type(exc).__name__}{detail} on {where}{at}."


def _poisoned_call(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
    """Call fn with torch.empty handing out NaN, so that elements fn never writes stay visibly wrong."""
    fill = torch.utils.deterministic.fill_uninitialized_memory
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    # NaN filling works only in deterministic mode. The public switch imports torch._inductor on first use
    # (seconds, in every notebook); the flag it sets is this one.
    set_mode = getattr(torch._C, "_set_deterministic_algorithms", torch.use_deterministic_algorithms)
    set_mode(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        out = fn(*args, **kwargs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return out
    finally:
        set_mode(was[0], warn_only=was[1])
        torch.utils.deterministic.fill_uninitialized_memory = fill


def _as_float64(a: Any) -> Any:
    if isinstance(a, torch.Tensor) and a.is_floating_point():
        return a.detach().to(device="cpu", dtype=torch.float64)
    return a


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one dict whose keys join the path: {"add": {"flops": 1}} -> {"add / flops": 1}."""
    if not isinstance(obj, dict):
        return {prefix: obj}
    flat: dict[str, Any] = {}
    for k, v in obj.items():
        flat.update(_flatten(v, f"{prefix} / {k}" if prefix else str(k)))
    return flat


def _leaves(out: Any, names: Sequence[str] | None, like: Any = None) -> list[tuple[str, Any]]:
    if isinstance(like, dict):  # keyed outputs are matched by key, in the reference's order
        got = _flatten(out) if isinstance(out, dict) else {}
        return [(k, got.get(k, _MISSING)) for k in _flatten(like)]
    if isinstance(out, dict):
        return list(_flatten(out).items())
    if isinstance(out, (tuple, list)):
        return [(names[i] if names and i < len(names) else f"output {i}", o) for i, o in enumerate(out)]
    return [(names[0] if names else "output", out)]


_MISSING = object()


def _judge(name: str, got: Any, want: Any, tol: Tolerance) -> tuple[str, float]:
    """('', error as a fraction of the tolerance) when got matches want, else (a clause saying how not)."""
    if got is _MISSING:
        return f"`{name}` is missing", math.inf
    if got is None:
        return f"`{name}` is not filled in yet (None)", math.inf
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"`{name}` should be a tensor, but is {type(got).__name__}", math.inf
        if tuple(got.shape) != tuple(want.shape):
            return f"`{name}` has shape {tuple(got.shape)}, but should have {tuple(want.shape)}", math.inf
        verdict = compare(name, got, want.to(torch.float64), tol)
        return ("", verdict.max_error) if verdict.ok else (verdict.brief, verdict.max_error)
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return f"`{name}` should be a number, but is {type(got).__name__}", math.inf
    allowed = tol.atol + tol.rtol * abs(want)
    err = abs(got - want)
    if not err <= allowed:
        return f"`{name}` is {got:.6g}, but should be {want:.6g}", math.inf if allowed == 0 else err / allowed
    return "", 0.0 if allowed == 0 else err / allowed


def check(
    exercise: str,
    fn: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Sequence[Case],
    tol: Tolerance = FLOAT32,
    names: Sequence[str] | None = None,
) -> bool:
    """Run fn and the float64 reference on every case; print one sentence; True when every case passes.

    reference receives the same arguments with floating tensors converted to float64 on the CPU. fn may
    return a tensor, a number, or a tuple of them (named by `names` in the report).
    """
    worst = 0.0
    for c in cases:
        before = [a.clone() if isinstance(a, torch.Tensor) else None for a in c.args]
        try:
            out = _poisoned_call(fn, c.args, c.kwargs)
        except Exception as exc:  # noqa: BLE001  (a stub, or a bug in the student's code: say which)
            return _report(exercise, False, _failure(exercise, exc, c.name))
        for i, (a, b) in enumerate(zip(c.args, before)):
            if b is not None and not torch.equal(a, b):
                return _report(exercise, False, f"{exercise} changed its input {i} on {c.name}: write only to the output.")
        want = reference(*map(_as_float64, c.args), **{k: _as_float64(v) for k, v in c.kwargs.items()})
        got_leaves, want_leaves = _leaves(out, names, want), _leaves(want, names)
        if len(got_leaves) != len(want_leaves):
            return _report(exercise, False, f"{exercise} returned {len(got_leaves)} outputs on {c.name}, but should return {len(want_leaves)}.")
        for (name, got), (_, expected) in zip(got_leaves, want_leaves):
            problem, error = _judge(name, got, expected, tol)
            if problem:
                return _report(exercise, False, f"{exercise} is wrong on {c.name}: {problem}.")
            worst = max(worst, error)
    shown = "; ".join(c.name for c in cases[:4]) + ("; ..." if len(cases) > 4 else "")
    which = f"its case ({shown})" if len(cases) == 1 else f"all {len(cases)} cases ({shown})"
    return _report(exercise, True, f"{exercise} passed {which}; its largest error is {worst:.2g} of the tolerance.")


def check_that(exercise: str, attempt: Callable[[], Any], judge: Callable[[Any], str],
               success: Callable[[Any], str]) -> bool:
    """For exercises judged by a rule rather than a reference: judge(value) returns '' or a clause saying what
    is wrong; success(value) the clause printed when it passes."""
    try:
        value = attempt()
    except Exception as exc:  # noqa: BLE001
        return _report(exercise, False, _failure(exercise, exc, "the check"))
    problem = judge(value)
    if problem:
        return _report(exercise, False, f"{exercise} is not right yet: {problem}.")
    return _report(exercise, True, f"{exercise} passed: {success(value)}.")
