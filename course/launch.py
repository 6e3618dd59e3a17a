"""Launching a kernel cheaply: the grid's integer arithmetic in plain Python, and the launch itself.

`triton.cdiv` and `triton.next_power_of_2` are Triton `constexpr_function`s: they work inside a kernel and
on the host alike, and on the host each call pays for that (about 3 us on Triton 3.7, an import and the
unwrapping of its arguments), which is a good part of a decode-sized launch when a launcher calls them a
handful of times. These give the same answers for the non-negative ints a launcher passes.

`launch(kernel, grid, *args, **meta)` is `kernel[grid](*args, **meta)` that, once Triton has compiled the kernel
for a key, calls the compiled kernel directly (below).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch


def cdiv(a: int, b: int) -> int:
    """ceil(a / b): the programs needed to cover a elements with tiles of b."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n, as triton.next_power_of_2 (which also answers 0 for 0)."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


# --------------------------------------------------------------------------------------------------
# The launch itself: Triton's launcher, or the compiled kernel called directly once it is known
# --------------------------------------------------------------------------------------------------
#
# `kernel[grid](*args, **meta)` works out, on every call, what the arguments specialize (each int's value
# modulo 16, each pointer's alignment, the constexprs and launch options), hashes that into a key, looks the
# compiled kernel up, and only then launches it: 12 to 30 us of host time on an H100 or H200 host, where the
# launch alone (the compiled kernel's own `run`) takes about 9 (results/<gpu>/launch_bypass.json). `launch`
# asks Triton once per distinct key of its own, cheaper to build, and afterwards calls the compiled kernel
# directly. Its key holds everything Triton specializes on, so it never reuses a kernel compiled for other
# arguments: each tensor's dtype and 16-byte alignment, each int's value, the type of every other scalar,
# the constexprs, the launch options and the current GPU.

_DIRECT = {"on": True}
_MAX_KEYS = 4096  # distinct keys remembered per kernel before starting over (a long run of new shapes)


def direct_launches(on: bool) -> bool:
    """Turn the direct launch on or off for this process; returns the previous setting. The grader's worker
    turns it off for good: it records launches through Triton's own launcher (autograder/worker.py)."""
    before = _DIRECT["on"]
    _DIRECT["on"] = on
    return before


@contextlib.contextmanager
def plain_launches() -> Iterator[None]:
    """While open, every launch goes through Triton's `JITFunction.run`, for code that watches it (portability's
    recorder, a bench's launch capture); the setting before is restored on leaving."""
    before = direct_launches(False)
    try:
        yield
    finally:
        direct_launches(before)


class _Bound:
    """One compiled kernel, ready to run: its launcher, handle, metadata, and the constexpr arguments that
    follow the positional ones (the same for every call with this key)."""

    __slots__ = ("run", "function", "metadata", "tail")

    def __init__(self, run: Any, function: Any, metadata: Any, tail: tuple) -> None:
        self.run, self.function, self.metadata, self.tail = run, function, metadata, tail


_BOUND: dict[Any, dict[tuple, _Bound]] = {}  # kernel -> key -> its compiled kernel
_PLAIN: set[Any] = set()  # kernels that cannot be launched directly (interpreted, or not bindable)
_GPU: dict[str, Any] = {}  # Triton's driver calls, looked up on the first direct launch


def _arg_key(a: Any) -> Any:
    """What Triton specializes on for one positional argument, or _NO_KEY where launch cannot tell."""
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.data_ptr() & 15 == 0)
    if a is None:
        return None
    kind = type(a)
    if kind is int or kind is bool:
        return (kind, a)  # the value: Triton specializes ints equal to 1 or divisible by 16, and i32 / i64
    if kind is float:
        return kind
    return _NO_KEY


_NO_KEY = object()
_NONE_KNOWN: dict = {}


def launch(kernel: Any, grid: tuple[int, ...] | Callable[..., tuple[int, ...]], *args: Any, **meta: Any) -> None:
    """`kernel[grid](*args, **meta)`, with the compiled kernel called directly after the first launch of
    the same key. Positional arguments are the kernel's leading parameters (tensors and scalars); keywords
    are its remaining parameters (constexprs) and launch options (num_warps, num_stages, ...)."""
    # a grid computed from the arguments (a callable, as an autotuned launch passes) is Triton's to evaluate
    if not _DIRECT["on"] or kernel in _PLAIN or callable(grid):
        kernel[grid](*args, **meta)
        return
    parts = []
    for a in args:
        part = _arg_key(a)
        if part is _NO_KEY:  # a TMA descriptor, say: Triton's own launch, which knows what it specializes
            kernel[grid](*args, **meta)
            return
        parts.append(part)
    gpu = _GPU.get("device")
    device = gpu() if gpu is not None else None
    key = (device, tuple(parts), tuple(meta.items()))
    try:
        bound = _BOUND.get(kernel, _NONE_KNOWN).get(key)  # hashes the key, even where nothing is known yet
    except TypeError:  # a constexpr that cannot be hashed: Triton's own launch, every time
        kernel[grid](*args, **meta)
        return
    if bound is None:
        _first_launch(kernel, grid, key, args, meta)
        return
    if _GPU["hooked"]():  # a profiler's launch hooks want Triton's metadata
        kernel[grid](*args, **meta)
        return
    g = (tuple(grid) + (1, 1))[:3]
    bound.run(g[0], g[1], g[2], _GPU["stream"](device), bound.function, bound.metadata, None, None, None,
              *args, *bound.tail)


def _hooks_set() -> bool:
    """Whether a launch hook is installed (a profiler such as proton): Triton 3.7 keeps them in HookChains."""
    runtime = _GPU["knobs"]
    return any(h is not None and bool(getattr(h, "calls", True))
               for h in (runtime.launch_enter_hook, runtime.launch_exit_hook))  # fmt: skip


def _first_launch(kernel: Any, grid: tuple[int, ...], key: tuple, args: tuple, meta: dict[str, Any]) -> None:
    """Launch through Triton, and remember the compiled kernel it returns when it can be called directly."""
    compiled = kernel[grid](*args, **meta)
    bound = _bindable(kernel, compiled, args, meta)
    if bound is None:
        _PLAIN.add(kernel)  # the interpreter (no compiled kernel), or a Triton whose kernels this cannot call
        return
    if key[0] is None:  # the first direct-capable launch: the device is part of every key from now on
        return
    known = _BOUND.setdefault(kernel, {})
    if len(known) >= _MAX_KEYS:
        known.clear()
    known[key] = bound


def _bindable(kernel: Any, compiled: Any, args: tuple, meta: dict[str, Any]) -> _Bound | None:
    """The compiled kernel as a _Bound, or None where it cannot be called directly: no compiled kernel (the
    interpreter), or a Triton whose compiled kernels do not look as this expects."""
    if compiled is None or not hasattr(compiled, "packed_metadata") or not hasattr(kernel, "signature"):
        return None
    params = {k: v for k, v in meta.items() if k in kernel.signature.parameters}  # the rest: launch options
    try:  # what JITFunction.run passes to the compiled kernel, in order
        bound = kernel.signature.bind(*args, **params)
        bound.apply_defaults()
        compiled._init_handles()
        run, function, metadata = compiled.run, compiled.function, compiled.packed_metadata
        if not _GPU:
            from triton import knobs
            from triton.runtime import driver

            _GPU["device"], _GPU["stream"] = driver.active.get_current_device, driver.active.get_current_stream
            _GPU["knobs"], _GPU["hooked"] = knobs.runtime, _hooks_set
    except (TypeError, AttributeError, RuntimeError):
        return None
    tail = tuple(bound.arguments.values())[len(args):]
    return _Bound(run, function, metadata, tail)
