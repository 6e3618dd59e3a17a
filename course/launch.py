"""Launching a kernel cheaply: the grid's integer arithmetic in plain Python, and the launch itself.

`triton.cdiv` and `triton.next_power_of_2` are Triton `constexpr_function`s: they work inside a kernel and
on the host alike, and on the host each call pays for that (about 3 us on Triton 3.7, an import and the
unwrapping of its arguments), which is a good part of a decode-sized launch when a launcher calls them a
handful of times. These give the same answers for the non-negative ints a launcher passes.

`launch(kernel, grid, *args, **meta)` is `kernel[grid](*args, **meta)` that, once Triton has compiled the kernel
for a key, calls the compiled kernel directly (below). `LaunchPlan` is the same launch with everything but the
tensors fixed once per signature, for a launcher called many times with one signature (a decode step's).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import torch

_TENSOR = torch.Tensor


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
_TRACING = {"on": False, "floats": False}  # set while torch.compile traces a course op's implementation (course/ops.py)
_MAX_KEYS = 4096  # distinct keys remembered per kernel before starting over (a long run of new shapes)
_PLAN_KEYS = 64  # a LaunchPlan's keys differ only in the tensors' dtypes and alignment and the GPU: a handful


def direct_launches(on: bool) -> bool:
    """Turn the direct launch on or off for this process; returns the previous setting. The grader's worker
    turns it off for good: it records launches through Triton's own launcher (autograder/worker.py)."""
    before = _DIRECT["on"]
    _DIRECT["on"] = on
    return before


class Untraceable(Exception):
    """A launch that Inductor cannot take into a graph as it is: an argument other than a tensor, an int, a bool
    or None. The op being traced stays one opaque node.

    - A TMA descriptor made on the host, unless it is Triton's `TensorDescriptor` over a contiguous tensor, which
      is recorded as that tensor and its tile shape (`_record_descriptors`), or where this torch lacks the means.
    - A float, unless the op says its kernels cast their floats to float32 (`traced_launches(floats=True)`):
      Inductor passes a Python float to a kernel as a float64 (its `_use_fp64_for_unbacked_floats`), where
      Triton's own launch passes a float32, so the kernel would compute in float64. Measured on an H200:
      the flash attention decode kernel then failed to compile (at its dot, whose accumulator the scale turns
      float64), and a compiled training step ran 17% slower (results/h200/traced_ops.md)."""


@contextlib.contextmanager
def traced_launches(floats: bool = False) -> Iterator[None]:
    """While open, every launch is recorded for Inductor (`torch.library.wrap_triton`) instead of run: the
    tensors are a trace's, with shapes and no data. course/ops.py opens it while torch.compile traces a course
    op's implementation, so that the compiled program launches the kernels itself. `floats=True` records
    float arguments too: for kernels that cast each float argument to float32 before using it, which then
    compute the same from Inductor's float64 as from Triton's float32."""
    before = dict(_TRACING)
    _TRACING["on"], _TRACING["floats"] = True, floats
    try:
        yield
    finally:
        _TRACING.update(before)


_TRACEABLE = (_TENSOR, int, type(None))  # bool is an int
_TRACEABLE_WITH_FLOATS = (*_TRACEABLE, float)


def _record(kernel: Any, grid: Any, args: tuple, meta: dict[str, Any]) -> None:
    """The launch, recorded as a node of the graph being traced."""
    allowed = _TRACEABLE_WITH_FLOATS if _TRACING["floats"] else _TRACEABLE
    descriptor = _descriptor_type()
    if not all(isinstance(a, allowed) or (descriptor is not None and isinstance(a, descriptor)) for a in args):
        raise Untraceable(f"{getattr(kernel, '__name__', kernel)} takes an argument a graph cannot hold")
    # Inductor launches a user kernel without this option; a kernel that waits for its predecessor on the GPU
    # (`gdc_wait`) then finds none to wait for and goes on, after the predecessor as stream order has it.
    meta = {k: v for k, v in meta.items() if k != "launch_pdl"}
    if descriptor is not None and any(isinstance(a, descriptor) for a in args):
        _record_descriptors(kernel, grid, args, meta, descriptor)
        return
    torch.library.wrap_triton(kernel)[grid](*args, **meta)


def _descriptor_type() -> type | None:
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:  # a Triton without host-side descriptors: no launch passes one
        return None
    return TensorDescriptor


def _record_descriptors(kernel: Any, grid: Any, args: tuple, meta: dict[str, Any], descriptor: type) -> None:
    """A launch that takes host-side TMA descriptors, recorded the way torch.compile records one it meets in a
    program it compiles itself: each descriptor becomes the tensor it describes plus its tile shape, and the
    compiled program makes the descriptor again before each launch (`TensorDescriptor.from_tensor`). The
    recording of `torch.library.wrap_triton` does not do this (it would keep the descriptor, and the trace's tensor
    in it, as a constant), so this goes one level below it, to torch's own tracing of Triton kernels: private
    names, which a torch that lacks them turns into an opaque op (Untraceable)."""
    for a in args:
        if isinstance(a, descriptor):
            base, shape, strides = a.base, list(a.shape), list(a.strides)
            contiguous = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
            if (getattr(a, "padding", "zero") != "zero" or getattr(a, "round_f32_to_tf32", False)
                    or not base.is_contiguous() or strides != contiguous or base.numel() != math.prod(shape)):  # fmt: skip
                raise Untraceable("a TMA descriptor other than one over a whole contiguous tensor, zero-padded")
    try:
        hopifier = _descriptor_hopifier(descriptor)
    except (ImportError, AttributeError) as error:
        raise Untraceable(f"this torch cannot record a TMA descriptor: {error}") from error
    hopifier.call_triton_kernel(torch.library.wrap_triton(kernel)[grid], args, meta, None)


_HOPIFIER: list[Any] = []


def _descriptor_hopifier(descriptor: type) -> Any:
    """torch's tracer of Triton launches (what wrap_triton calls), with descriptors recorded as tensors."""
    if _HOPIFIER:
        return _HOPIFIER[0]
    from torch._higher_order_ops import triton_kernel_wrap as wrap

    class DescriptorHOPifier(wrap.TracingTritonHOPifier):
        def call_HOP(self, variable: Any, grids: Any, combined_args: dict[str, Any], tx: Any) -> Any:
            args, tma = {}, {}
            for name, value in combined_args.items():
                if isinstance(value, descriptor):
                    args[name] = value.base.view(list(value.shape))
                    tma[name] = wrap.create_tma_stable_metadata(list(value.block_shape))
                else:
                    args[name] = value
            graphable, constants = self.store_non_graphable_args(args)
            return wrap.triton_kernel_wrapper_mutation(
                kernel_idx=variable.kernel_idx, constant_args_idx=constants, grid=grids,
                tma_descriptor_metadata=tma, kwargs=graphable,
            )  # fmt: skip

    _HOPIFIER.append(DescriptorHOPifier())
    return _HOPIFIER[0]


def aligned(t: torch.Tensor, n_bytes: int) -> bool:
    """Whether t's first element sits on an n_bytes boundary (n_bytes <= 16). A trace's tensors have no
    address, so while launches are recorded the answer comes from the offset into storage: the compiled
    program copies any input whose address is misaligned where its offset is not (Inductor's
    `copy_misaligned_inputs`), and its own buffers start 16-byte aligned."""
    if _TRACING["on"]:
        return t.storage_offset() * t.element_size() % n_bytes == 0
    return t.data_ptr() % n_bytes == 0


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


# Kept by id(kernel): a JITFunction hashes itself in Python, under a lock, and every launch would pay for that
# twice. Each entry holds the kernel itself, so that its id is not reused while the entry is here.
_BOUND: dict[int, tuple[Any, dict[tuple, _Bound]]] = {}  # id(kernel) -> (kernel, key -> its compiled kernel)
_PLAIN: dict[int, Any] = {}  # id(kernel) -> kernel, where a direct launch cannot work (interpreted, unbindable)
_GPU: dict[str, Any] = {}  # Triton's driver calls, looked up on the first direct launch


_NONE_KNOWN: dict = {}
_BOOL = object()  # marks a bool in a key, so that True never finds the kernel compiled for the int 1
_FLOAT = object()  # a float's value is not specialized on: only that it is a float


def launch(kernel: Any, grid: tuple[int, ...] | Callable[..., tuple[int, ...]], *args: Any, **meta: Any) -> None:
    """`kernel[grid](*args, **meta)`, with the compiled kernel called directly after the first launch of
    the same key. Positional arguments are the kernel's leading parameters (tensors and scalars); keywords
    are its remaining parameters (constexprs) and launch options (num_warps, num_stages, ...)."""
    # a grid computed from the arguments (a callable, as an autotuned launch passes) is Triton's to evaluate
    if _TRACING["on"]:
        _record(kernel, grid, args, meta)
        return
    ident = id(kernel)
    if not _DIRECT["on"] or _PLAIN.get(ident) is kernel or callable(grid):
        kernel[grid](*args, **meta)
        return
    # The key, one flat tuple built inline: every launch builds it, and a tuple per argument from a helper
    # made a W4A16 launch (14 arguments) cost 16.7 us of host time against 13.8 now (results/h100/launch_key.md).
    # A tensor adds its dtype and its alignment, an int its value, a bool a marker and its value, a float a
    # marker: no entry of one kind equals one of another, so two argument lists share a key only when
    # Triton would specialize them alike.
    gpu = _GPU.get("device")
    device = gpu() if gpu is not None else None
    key = [device]
    add = key.append
    for a in args:
        if isinstance(a, _TENSOR):
            add(a.dtype)
            add(a.data_ptr() & 15 == 0)
            continue
        kind = type(a)
        if kind is int:
            add(a)  # the value: Triton specializes ints equal to 1 or divisible by 16, and i32 / i64
        elif kind is float:
            add(_FLOAT)
        elif a is None:
            add(None)
        elif kind is bool:
            add(_BOOL)
            add(a)
        else:  # a TMA descriptor, say: Triton's own launch, which knows what it specializes
            kernel[grid](*args, **meta)
            return
    key.extend(meta.items())
    key = tuple(key)
    entry = _BOUND.get(ident)
    known = entry[1] if entry is not None and entry[0] is kernel else _NONE_KNOWN
    try:
        bound = known.get(key)  # hashes the key, even where nothing is known yet
    except TypeError:  # a constexpr that cannot be hashed: Triton's own launch, every time
        kernel[grid](*args, **meta)
        return
    if bound is None:
        _first_launch(kernel, grid, key, args, meta)
        return
    if _GPU["hooked"]():  # a profiler's launch hooks want Triton's metadata
        kernel[grid](*args, **meta)
        return
    n = len(grid)
    bound.run(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1, _GPU["stream"](device), bound.function,
              bound.metadata, None, None, None, *args, *bound.tail)


class LaunchPlan:
    """One launch that a launcher works out once per signature (shapes, strides, dtypes, settings): the kernel,
    its grid, its scalar arguments and its constexprs and options are the plan's, and a call passes only the
    tensors, which come first among the kernel's parameters.

    A call's key is the tensors' part of `launch`'s (each one's dtype and 16-byte alignment) and the current
    GPU: the ints, constexprs and options that `launch` adds to its key on every call are fixed for the plan's
    life. The first call of a key goes through Triton, later ones call the compiled kernel directly, and every
    call goes through Triton where `launch` would (direct launches off, the interpreter, a launch hook).

        plan = LaunchPlan(_kernel, grid, (m, n, stride), {"BLOCK": 128, "num_warps": 4})  # once per signature
        plan(x, y, out)  # every call
    """

    __slots__ = ("kernel", "grid", "scalars", "meta", "_known")

    def __init__(self, kernel: Any, grid: tuple[int, ...], scalars: tuple, meta: dict[str, Any]) -> None:
        self.kernel, self.grid, self.scalars, self.meta = kernel, tuple(grid), tuple(scalars), dict(meta)
        self._known: dict[tuple, _Bound] = {}

    def __call__(self, *tensors: torch.Tensor) -> None:
        kernel, grid = self.kernel, self.grid
        if _TRACING["on"]:
            _record(kernel, grid, (*tensors, *self.scalars), self.meta)
            return
        if not _DIRECT["on"] or _PLAIN.get(id(kernel)) is kernel:
            kernel[grid](*tensors, *self.scalars, **self.meta)
            return
        gpu = _GPU.get("device")
        device = gpu() if gpu is not None else None
        key = [device]
        add = key.append
        for t in tensors:
            add(t.dtype)
            add(t.data_ptr() & 15 == 0)
        key = tuple(key)
        bound = self._known.get(key)
        if bound is None:
            _first_launch(kernel, grid, key, (*tensors, *self.scalars), self.meta, self._known, _PLAN_KEYS)
            return
        if _GPU["hooked"]():
            kernel[grid](*tensors, *self.scalars, **self.meta)
            return
        n = len(grid)
        bound.run(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1, _GPU["stream"](device), bound.function,
                  bound.metadata, None, None, None, *tensors, *self.scalars, *bound.tail)  # fmt: skip


def _hooks_set() -> bool:
    """Whether a launch hook is installed (a profiler such as proton): Triton 3.7 keeps them in HookChains,
    earlier Tritons as a function or None."""
    runtime = _GPU["knobs"]
    enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
    return _live(enter) or _live(leave)


def _live(hook: Any) -> bool:
    if hook is None:
        return False
    calls = getattr(hook, "calls", None)
    return calls is None or bool(calls)


def _first_launch(
    kernel: Any, grid: tuple[int, ...], key: tuple, args: tuple, meta: dict[str, Any],
    known: dict[tuple, _Bound] | None = None, limit: int = _MAX_KEYS,
) -> None:  # fmt: skip
    """Launch through Triton, and remember the compiled kernel it returns when it can be called directly: in
    `known` (a LaunchPlan's keys), else among the kernel's keys for `launch`."""
    compiled = kernel[grid](*args, **meta)
    bound = _bindable(kernel, compiled, args, meta)
    if bound is None:
        _PLAIN[id(kernel)] = kernel  # the interpreter (no compiled kernel), or a Triton this cannot call directly
        return
    if key[0] is None:  # the first direct-capable launch: the device is part of every key from now on
        return
    if known is None:
        known = _BOUND.setdefault(id(kernel), (kernel, {}))[1]
    if len(known) >= limit:
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
