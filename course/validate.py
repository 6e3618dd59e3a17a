"""Input checks shared by every kernel wrapper, with errors that tell the caller what to do."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from course.env import interpreter_requested

FLOAT_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16)


def check_tensor(
    fn: str,
    name: str,
    t: object,
    *,
    ndim: int | None = None,
    min_ndim: int | None = None,
    dtypes: Sequence[torch.dtype] = FLOAT_DTYPES,
    contiguous: bool = True,
) -> torch.Tensor:
    """Check one tensor argument of `fn` and return it.

    Raises TypeError or ValueError with a sentence that names the argument and says how to fix it.
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{fn}: `{name}` must be a torch.Tensor, got {type(t).__name__}.")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{fn}: `{name}` must have {ndim} dimensions, got shape {tuple(t.shape)}.")
    if min_ndim is not None and t.dim() < min_ndim:
        raise ValueError(
            f"{fn}: `{name}` must have at least {min_ndim} dimension(s), got shape {tuple(t.shape)}."
        )
    if t.dtype not in dtypes:
        names = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"{fn}: `{name}` must have dtype {names}; got {str(t.dtype).replace('torch.', '')}.")
    # is_cuda / is_cpu / is_meta rather than t.device.type: a decode step checks a dozen tensors, and
    # building a torch.device each time costs more than the rest of the check
    if interpreter_requested():
        if not t.is_cpu:
            raise ValueError(
                f"{fn}: `{name}` is on {t.device}, but TRITON_INTERPRET=1 runs kernels on the CPU: "
                "move it with .cpu(), or unset TRITON_INTERPRET to use the GPU."
            )
    # meta: shapes without data, which `python -m autograder portability` passes to see what a call launches.
    elif not (t.is_cuda or t.is_meta):
        raise ValueError(
            f"{fn}: `{name}` is on {t.device}, but Triton kernels run on a CUDA GPU: move it with "
            ".cuda(), or set TRITON_INTERPRET=1 (before importing triton) to use the CPU interpreter."
        )
    if contiguous and not t.is_contiguous():
        raise ValueError(
            f"{fn}: `{name}` must be contiguous (its strides are {t.stride()}): pass `{name}.contiguous()`."
        )
    return t


def check_same(fn: str, what: str, **tensors: torch.Tensor) -> None:
    """Check that the named tensors agree on `what` ('dtype' or 'device')."""
    tensors_in_turn = iter(tensors.values())
    first = getattr(next(tensors_in_turn), what)
    if all(getattr(t, what) == first for t in tensors_in_turn):
        return
    listed = ", ".join(f"`{n}` is {str(getattr(t, what)).replace('torch.', '')}" for n, t in tensors.items())
    raise ValueError(f"{fn}: the arguments must share one {what}, but {listed}.")


class CheckedOnce:
    """A public function's checks, run once per argument signature: a decode step makes the same calls, with
    new tensors of the same shapes, thousands of times, and the checks took 1-7 us of a public call's 20-90 us
    of host time on an H100's and an H200's host (results/<gpu>/checked_once.md).

    A signature holds everything the checks look at: each tensor's type, shape, dtype, device and contiguity,
    every other argument's type and value, and whether the CPU interpreter is asked for. Only signatures that
    passed are remembered: a call that fails its checks fails again, with the same message, every time.

        def _check_f(x: torch.Tensor, eps: float) -> None:
            check_tensor("f", "x", x)  # and every other check of f's arguments

        _CHECKED_F = CheckedOnce(_check_f)

        def f(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
            _CHECKED_F(x, eps)  # the same arguments the checks take, so that they are what is signed
            ...
    """

    LIMIT = 4096  # signatures remembered before starting over (a long run of new shapes)

    def __init__(self, checks: Callable[..., None]) -> None:
        self.checks = checks
        self._accepted: set[tuple] = set()

    def __call__(self, *args: object) -> None:
        key = self.signature(*args)
        if not self.seen(key):
            self.checks(*args)
            self.accept(key)

    @staticmethod
    def signature(*args: object) -> tuple | None:
        """The call's signature; None while torch.compile traces the call (a remembered set is no state to trace:
        the checks run while tracing, so a wrong call fails with their sentence). That is not free once compiled:
        every global the checks read becomes one of Dynamo's guards, checked on every call. On a CPU, the
        module 10 block's guards (TINY config; RMSNorm, RoPE, attention and SwiGLU the course's) took 18.4 us
        a call to check with the checks traced and 12.5 with them skipped, against 7.4 for PyTorch's block
        (232, 124 and 62 guards)."""
        if torch.compiler.is_compiling():
            return None
        key: list[object] = [interpreter_requested()]
        add = key.append
        for a in args:
            add(type(a))
            if isinstance(a, torch.Tensor):
                add(a.shape)
                add(a.dtype)
                add(a.device)
                add(a.is_contiguous())
            else:
                add(a)
        return tuple(key)

    def seen(self, key: tuple | None) -> bool:
        """Whether key was accepted before. While torch.compile traces (key None) the set is not looked up at all:
        a lookup, even of None, makes Dynamo guard on the contents of every key the set holds. Until 2026-12-06 it
        did: the compiled module 10 decode step (fused W4A16 projections, every course kernel, TINY config) carried
        558 guards against 293 without them and 107 for PyTorch's block, and took 24.6-25.4 us a call against
        19.4-19.9 to enter on a CPU (results/provenance/guard_cost.py, three runs); and any eager call of a new
        signature anywhere in the program failed those guards and recompiled the caller (tests/test_checked_once.py)."""
        if key is None:
            return False
        try:
            return key in self._accepted
        except TypeError:  # an argument that cannot be hashed (a list, say): checked every time
            return False

    def accept(self, key: tuple | None) -> None:
        if key is None:
            return
        if len(self._accepted) >= self.LIMIT:
            self._accepted.clear()
        try:
            self._accepted.add(key)
        except TypeError:
            pass
