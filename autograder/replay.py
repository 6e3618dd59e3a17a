"""Replaying a tape: the call's recorded ops and launches, run again on the grader's own inputs.

Nothing of the submission runs here but its kernels, rebuilt from its source text
(autograder/kernel_source.py), and under the CPU interpreter only after they compiled for a GPU
(autograder/kernel_check.py). PyTorch ops run from PyTorch's own implementations, and only those the
policy allows. Every tensor of the tape is rebuilt from its reference: a storage of the replay (an
input, one a replayed op created, or one carried with the tape) viewed at the recorded offset, shape
and strides.

`bind` makes a replay's storages (outside any timed region); `run` replays the entries and returns
the outputs the call returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from autograder.policy import SCALAR_READ, is_allowed, op_name, shown
from autograder.tape import launch_problem

POISON = 0xFF  # a storage the tape never filled: NaN in every float format, -1 in every integer one
MAX_GRID = 1 << 31


class ReplayRefused(Exception):
    """The tape cannot be replayed, with a sentence that says why."""


# --------------------------------------------------------------------------------------------------
# Memory bounds under the interpreter: a kernel reads and writes only the replay's own storages
# --------------------------------------------------------------------------------------------------


class OutOfBounds(Exception):
    """A load, store or atomic of an interpreted kernel reached memory outside every storage of the replay."""


_BOUNDS: list[Any] = []  # [starts, ends] (sorted numpy arrays of the replay's storages) while a launch runs
_STRICT: list[bool] = [False]  # the replayer's: an interpreted access outside every bounded launch is refused too
# Bytes that interpreted kernels stored (tl.store, a descriptor's store, an atomic), counted inside `counting_writes`.
_WRITTEN: list[int] = []
_COUNT_MOVES: list[bool] = []  # [whether PyTorch's copies in one dtype count too] inside `counting_writes`


def _check_addresses(ptrs: Any, mask: Any, itemsize: int, what: str) -> None:
    import numpy as np

    if not _BOUNDS:
        if _STRICT[0]:  # a launch nobody bounded (the grader's own launch of a kernel once ran unchecked): nothing
            raise OutOfBounds(f"a {what} ran in a launch the grader did not bound to the memory of a call")
        return
    starts, ends = _BOUNDS
    addresses = np.asarray(ptrs, dtype=np.uint64)
    if mask is not None:
        addresses = addresses[np.broadcast_to(np.asarray(mask, dtype=bool), addresses.shape)]
    if addresses.size == 0:
        return
    slot = np.searchsorted(starts, addresses, side="right") - 1
    inside = (slot >= 0) & (addresses + np.uint64(itemsize) <= ends[np.maximum(slot, 0)])
    if not inside.all():
        raise OutOfBounds(
            f"a {what} reached memory outside every tensor of the call ({int((~inside).sum())} element(s)): every "
            "load and store whose offsets can run past a tensor's end needs a mask"
        )


def _count_written(mask: Any, shape: tuple[int, ...], itemsize: int) -> None:
    import numpy as np

    if not _WRITTEN:
        return
    if mask is None:
        elements = int(np.prod(shape, dtype=np.int64))
    else:
        elements = int(np.count_nonzero(np.broadcast_to(np.asarray(mask, dtype=bool), shape)))
    _WRITTEN[0] += elements * itemsize


def _count_converted(name: str, args: list, out: Any) -> None:
    """A copy into another dtype counts as a store: converting is arithmetic (int8 weights to float32 are the dequantized
    weights, less a scale), and the allowed ops would otherwise widen a tensor unseen (red team 23). Copies in one dtype
    move data and are counted only where `counting_writes(moves=True)` says (Part.write_budget_counts_moves): elsewhere
    grouped-query attention may repeat K and V that way. A fill by a Python number is never counted: its value is fixed
    in the record, so it carries nothing from the inputs a replay draws afresh (and, for kept inputs, the replay with
    other ones refuses what it carries); a vendored split-K zeroes its partials that way (red team 25). A fill by a
    tensor (`fill_.Tensor`) is a copy of that tensor. The recorder passes these ops' tensors by position, and the replay
    refuses a record that names them (`_recorded_form`), so positions are where they are."""
    if not _WRITTEN:
        return
    moves = _COUNT_MOVES[0] if _COUNT_MOVES else False
    if name in ("copy_", "fill_") and len(args) >= 2:
        dst, src = args[0], args[1]
    elif name in ("_to_copy", "clone") and args:
        dst, src = out, args[0]
    else:
        return
    if isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor) and (moves or dst.dtype != src.dtype):
        _WRITTEN[0] += dst.numel() * dst.element_size()


@contextmanager
def counting_writes(moves: bool = False) -> Iterator[list[int]]:
    """Counts the bytes interpreted kernels store while it is open: [bytes] when it closes. Every store, descriptor
    store and atomic counts the elements its mask lets through (an atomic's read-modify-write counts as a store), and
    every copy into another dtype its whole destination; with `moves`, every copy in one dtype its destination too."""
    _WRITTEN[:] = [0]
    _COUNT_MOVES[:] = [moves]
    total = [0]
    try:
        yield total
    finally:
        total[0] = _WRITTEN[0] if _WRITTEN else 0
        _WRITTEN.clear()
        _COUNT_MOVES.clear()


def out_of_bounds(exc: BaseException) -> OutOfBounds | None:
    """The OutOfBounds behind an exception the interpreter raised around it, if there is one."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, OutOfBounds):
        cause = cause.__cause__ or cause.__context__
    return cause


@contextmanager
def bounded(storages: Iterable[Any]) -> Iterator[None]:
    """Interpreted kernels launched inside may load and store only in these storages (untyped storages)."""
    import numpy as np

    spans = sorted((s.data_ptr(), s.data_ptr() + s.nbytes()) for s in storages if s.nbytes())
    _BOUNDS[:] = [np.array([a for a, _ in spans], dtype=np.uint64), np.array([b for _, b in spans], dtype=np.uint64)]
    try:
        yield
    finally:
        _BOUNDS.clear()


def install_bounds_checks(strict: bool = False) -> None:
    """Wrap the interpreter's memory operations (once per process) with _check_addresses. `strict` (the replayer): an
    access outside every `bounded` launch is refused as well, so a launch the grader forgets to bound fails closed."""
    from triton.runtime import interpreter

    _STRICT[0] = _STRICT[0] or strict

    builder = interpreter.InterpreterBuilder
    if getattr(builder, "_autograder_bounds", False):
        return
    load, store = builder.create_masked_load, builder.create_masked_store
    cas, rmw = builder.create_atomic_cas, builder.create_atomic_rmw

    def size(ptrs: Any) -> int:
        return interpreter._get_np_dtype(ptrs.get_element_ty()).itemsize

    def masked_load(self: Any, ptrs: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check_addresses(ptrs.data, mask.data, size(ptrs), "load")
        return load(self, ptrs, mask, *args, **kwargs)

    def masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check_addresses(ptrs.data, mask.data, size(ptrs), "store")
        _count_written(mask.data, ptrs.data.shape, size(ptrs))
        return store(self, ptrs, value, mask, *args, **kwargs)

    def atomic_cas(self: Any, ptr: Any, cmp: Any, val: Any, *args: Any, **kwargs: Any) -> Any:
        _check_addresses(ptr.data, None, size(ptr), "atomic")
        _count_written(None, ptr.data.shape, size(ptr))
        return cas(self, ptr, cmp, val, *args, **kwargs)

    def atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check_addresses(ptr.data, mask.data, size(ptr), "atomic")
        _count_written(mask.data, ptr.data.shape, size(ptr))
        return rmw(self, op, ptr, val, mask, *args, **kwargs)

    builder.create_masked_load, builder.create_masked_store = masked_load, masked_store
    builder.create_atomic_cas, builder.create_atomic_rmw = atomic_cas, atomic_rmw
    builder._autograder_bounds = True


@dataclass
class State:
    """One replay's storages (sid -> storage) and the tensor views made from them so far."""

    storages: dict[str, Any] = field(default_factory=dict)
    views: dict[tuple, torch.Tensor] = field(default_factory=dict)


_DTYPES = {str(v).replace("torch.", ""): v for v in vars(torch).values() if isinstance(v, torch.dtype)}
_LAYOUTS = {str(v).replace("torch.", ""): v for v in vars(torch).values() if isinstance(v, torch.layout)}
_FORMATS = {str(v).replace("torch.", ""): v for v in vars(torch).values() if isinstance(v, torch.memory_format)}


class Replay:
    """A tape, ready to replay on `device` with `kernels` (name -> launchable kernel)."""

    def __init__(self, tape: dict, kernels: dict[str, Any], refused_kernels: dict[str, str], device: torch.device,
                 check: Callable[[str, list, dict], str] | None = None, refused_ops: frozenset[str] = frozenset(),
                 memory_budget: int = 16 << 30, bounds: bool = False) -> None:  # fmt: skip
        self.tape = tape
        self.kernels = kernels
        self.refused_kernels = refused_kernels
        self.device = device
        self.check = check
        self.refused_ops = refused_ops
        self.memory_budget = memory_budget
        self.bounds = bounds  # interpreted kernels may touch only the replay's storages (install_bounds_checks)
        self.storages_info: dict[str, dict] = tape.get("storages", {}) if isinstance(tape.get("storages"), dict) else {}
        self._ops: dict[str, Any] = {}
        self._descriptor = _descriptor_type()
        self._tl_dtypes = _triton_dtypes()
        self.checked: set[int] = set()
        self.launched: dict[int, tuple[str, tuple[int, ...], Any]] = {}  # entry -> (kernel, grid, what the launch returned)

    # -- storages ------------------------------------------------------------------------------

    def _allocate(self, sid: str, state: State) -> Any:
        info = self.storages_info.get(sid)
        if not isinstance(info, dict) or not isinstance(info.get("nbytes"), int) or info["nbytes"] < 0:
            raise ReplayRefused("The record of your call names memory it never describes.")
        nbytes = info["nbytes"]
        used = sum(int(s.nbytes()) for s in state.storages.values())
        if used + nbytes > self.memory_budget:
            raise ReplayRefused(
                f"Replaying your call would need more than {self.memory_budget / 2**30:.0f} GiB: its record describes "
                "more memory than a graded call may use."
            )
        storage = torch.full((max(nbytes, 1),), POISON, dtype=torch.uint8, device=self.device).untyped_storage()
        if nbytes == 0:
            storage.resize_(0)
        state.storages[sid] = storage
        return storage

    def _storage(self, sid: str, state: State) -> Any:
        storage = state.storages.get(sid)
        return storage if storage is not None else self._allocate(sid, state)

    def tensor(self, ref: list, state: State, fresh: bool = False) -> torch.Tensor:
        """The recorded tensor as a view of the replay's memory. `fresh`: a tensor object of its own, for an op,
        which may change its shape, strides or memory in place (set_, resize_, t_ ...): such a change must reach
        only the tensor the op was given, as in the worker, and never the view that a launch or the call's output
        finds under the same record."""
        if not (isinstance(ref, list) and len(ref) == 6):
            raise ReplayRefused("The record of your call is malformed.")
        sid, offset, shape, stride, dtype, _device = ref
        key = (sid, offset, tuple(shape), tuple(stride), dtype)
        view = None if fresh else state.views.get(key)
        if view is None:
            if dtype not in _DTYPES or not isinstance(offset, int) or not all(isinstance(s, int) for s in shape + stride):
                raise ReplayRefused("The record of your call is malformed.")
            view = torch.empty(0, dtype=_DTYPES[dtype], device=self.device)
            try:
                view.set_(self._storage(str(sid), state), offset, tuple(shape), tuple(stride))
            except RuntimeError as exc:
                raise ReplayRefused(f"The record of your call describes a tensor outside its memory ({exc}).") from None
            if not fresh:
                state.views[key] = view
        return view

    def bind(self, inputs: dict[str, torch.Tensor]) -> State:
        """A fresh state: the inputs at their recorded places, carried buffers as they were, nothing else yet."""
        state = State()
        for name, encoded in self.tape.get("inputs", {}).items():
            given = inputs.get(name)
            ref = encoded.get("T") if isinstance(encoded, dict) else None
            if given is None or ref is None:
                raise ReplayRefused(f"The record of your call names an input `{name}` the call was not given.")
            sid, offset, shape, stride, dtype, _ = ref
            if list(given.shape) != list(shape) or str(given.dtype).replace("torch.", "") != dtype:
                raise ReplayRefused(f"The record of your call gives the input `{name}` another shape or dtype than it has.")
            if not _same_layout(shape, list(given.stride()), stride):
                # A copy into another layout is work done for the call (a transpose, say), by the grader.
                raise ReplayRefused(
                    f"The record of your call lays the input `{name}` out in memory otherwise than the grader gave it: "
                    "the record was changed."
                )
            storage = torch.Tensor.untyped_storage(given)
            info = self.storages_info.get(str(sid), {})
            same_place = (sid not in state.storages and given.storage_offset() == offset and list(given.stride()) == list(stride)
                          and storage.nbytes() == info.get("nbytes"))  # fmt: skip
            if same_place:
                state.storages[str(sid)] = storage
            else:  # the same layout at another offset (the worker's memory is fenced): a move, not a re-arrangement
                self.tensor(ref, state).copy_(given)
        for sid, contents in self.tape.get("carried", {}).items():
            if not isinstance(contents, torch.Tensor) or contents.dtype != torch.uint8 or contents.dim() != 1:
                raise ReplayRefused("The record of your call is malformed.")
            storage = self._allocate(str(sid), state)
            if contents.numel() != storage.nbytes():
                raise ReplayRefused("The record of your call is malformed.")
            if contents.numel():
                torch.empty(0, dtype=torch.uint8, device=self.device).set_(storage, 0, (contents.numel(),), (1,)).copy_(contents)
        return state

    # -- values ----------------------------------------------------------------------------------

    def decode(self, value: Any, state: State, fresh: bool = False) -> Any:
        """A recorded value as the replay's object; `fresh`: every tensor an object of its own (see `tensor`)."""
        if value is None or type(value) in (bool, int, float, str):
            return value
        if isinstance(value, list):
            return [self.decode(v, state, fresh) for v in value]
        if not isinstance(value, dict) or len(value) != 1:
            raise ReplayRefused("The record of your call is malformed.")
        (kind, inner), = value.items()
        if kind == "T":
            return self.tensor(inner, state, fresh)
        if kind == "tuple" and isinstance(inner, list):
            return tuple(self.decode(v, state, fresh) for v in inner)
        if kind == "S":
            return self._storage(str(inner), state)
        if kind == "dtype" and inner in _DTYPES:
            return _DTYPES[inner]
        if kind == "device":
            return self.device
        if kind == "layout" and inner in _LAYOUTS:
            return _LAYOUTS[inner]
        if kind == "memory_format" and inner in _FORMATS:
            return _FORMATS[inner]
        if kind == "tl_dtype" and inner in self._tl_dtypes:
            return self._tl_dtypes[inner]
        if kind == "desc" and isinstance(inner, dict) and self._descriptor is not None:
            fields = {k: self.decode(v, state) for k, v in inner.items()}
            if not isinstance(fields.get("base"), torch.Tensor):
                raise ReplayRefused("The record of your call holds a tensor descriptor over something that is not a tensor.")
            try:
                return self._descriptor(**fields)
            except TypeError as exc:
                raise ReplayRefused(f"The record of your call holds a tensor descriptor this Triton cannot build ({exc}).") from None
        raise ReplayRefused("The record of your call is malformed.")

    def _bind_out(self, encoded: Any, actual: Any, state: State, from_tensors: bool = True) -> None:
        """Place what a replayed op returned where the tape says its new storages were. `from_tensors`: the op read a
        tensor, so its result must be in the recorded dtype; a factory op's constants (torch.zeros under a default dtype
        the call changed and restored) may be converted into it."""
        if isinstance(encoded, dict) and "T" in encoded:
            if not isinstance(actual, torch.Tensor):
                raise ReplayRefused("A PyTorch op of your call returned something else when replayed.")
            ref = encoded["T"]
            sid = str(ref[0])
            if sid in state.storages:
                return  # a view, or an op that wrote in place
            if not (isinstance(ref, list) and len(ref) == 6) or (from_tensors and _DTYPES.get(ref[4]) != actual.dtype):
                # Placing it would convert what it read from a tensor, unseen by the write budget (red team 25).
                raise ReplayRefused(
                    "The record of your call does not match what its operations do (an op's result is recorded in "
                    "another dtype than the op makes): the record was changed."
                )
            info = self.storages_info.get(sid, {})
            storage = torch.Tensor.untyped_storage(actual)
            if any(storage._cdata == s._cdata for s in state.storages.values()):
                # The op returned memory the replay already holds (a view, set_), yet the record calls it new.
                raise ReplayRefused(
                    "The record of your call does not match what its operations do (an op said to create new memory "
                    "returns memory that exists already): the record was changed."
                )
            if (actual.storage_offset() == ref[1] and list(actual.stride()) == list(ref[3]) and list(actual.shape) == list(ref[2])
                    and storage.nbytes() == info.get("nbytes")):  # fmt: skip
                state.storages[sid] = storage
            elif _same_layout(ref[2], list(actual.stride()), ref[3]) and list(actual.shape) == list(ref[2]):
                # the worker placed it elsewhere (inside a fence, say): move it to the recorded place
                self.tensor(ref, state).copy_(actual)
            else:
                raise ReplayRefused(
                    "The record of your call does not match what its operations do (an op's result is recorded in "
                    "another shape or layout than the op makes): the record was changed."
                )
        elif isinstance(encoded, dict) and "tuple" in encoded:
            self._bind_out(encoded["tuple"], list(actual) if isinstance(actual, (tuple, list)) else actual, state,
                           from_tensors)
        elif isinstance(encoded, list):
            if not isinstance(actual, (tuple, list)) or len(actual) != len(encoded):
                raise ReplayRefused("A PyTorch op of your call returned something else when replayed.")
            for e, a in zip(encoded, actual):
                self._bind_out(e, a, state, from_tensors)

    # -- running ---------------------------------------------------------------------------------

    def _op(self, qualified: str) -> Any:
        op = self._ops.get(qualified)
        if op is None:
            if not is_allowed(qualified, self.refused_ops):
                raise ReplayRefused(
                    f"The graded call computed with PyTorch ({shown(qualified)}). Besides your Triton kernels it may only "
                    "allocate, view and copy tensors: compute the result in your kernel."
                )
            _, name, overload = qualified.split(".")  # is_allowed: exactly aten.<op>.<overload>
            try:
                packet = getattr(torch.ops.aten, name)
                op = getattr(packet, overload) if overload in packet.overloads() else None
            except (AttributeError, RuntimeError):
                op = None
            # Only an overload of that very op: its schema names it (nothing else of the op's Python object is reached).
            if not isinstance(op, torch._ops.OpOverload) or op._schema.name != f"aten::{name}" or (
                op._schema.overload_name or "default"
            ) != overload:
                raise ReplayRefused(f"The record of your call names an op PyTorch does not have ({qualified}).")
            if not _recordable(op):
                raise ReplayRefused(
                    f"The record of your call names an op that the grader's record of a call never holds ({qualified}, "
                    "which PyTorch runs as other ops): the record was changed."
                )
            written = _written_arguments(op)
            if written:
                raise ReplayRefused(
                    f"The graded call ran PyTorch's {qualified}, which writes its result into a tensor it is given "
                    f"(`{written[0]}`): that is PyTorch doing the work. Besides your Triton kernels the call may only "
                    "allocate, view and copy tensors the ordinary way (`out=` variants are not): compute the result "
                    "in your kernel."
                )
            self._ops[qualified] = op
        return op

    def run(self, state: State) -> dict[str, torch.Tensor]:
        """Replay every entry in order; the outputs the call returned, as the replay made them."""
        for index, entry in enumerate(self.tape.get("entries", [])):
            kind = entry.get("kind") if isinstance(entry, dict) else None
            if kind == "op":
                qualified = str(entry.get("op", ""))
                op = self._op(qualified)
                if op_name(qualified) == SCALAR_READ:
                    continue  # its value is already in the arguments that used it
                args = self.decode(entry.get("args", []), state, fresh=True)
                kwargs = self.decode_kwargs(entry.get("kwargs", {}), state, fresh=True)
                _recorded_form(op, args, kwargs)
                out = op(*args, **kwargs)
                _count_converted(op_name(qualified), args, out)
                self._bind_out(entry.get("out"), out, state, _holds_tensor([*args, *kwargs.values()]))
            elif kind == "launch":
                self._launch(index, entry, state)
            else:
                raise ReplayRefused("The record of your call is malformed.")
        outputs = {}
        for name, encoded in self.tape.get("outputs", {}).items():
            outputs[name] = self.decode(encoded, state)
        return outputs

    def decode_kwargs(self, kwargs: Any, state: State, fresh: bool = False) -> dict:
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise ReplayRefused("The record of your call is malformed.")
        return {k: self.decode(v, state, fresh) for k, v in kwargs.items()}

    def _launch(self, index: int, entry: dict, state: State) -> None:
        name = str(entry.get("kernel", "?"))
        kernel = self.kernels.get(name)
        if kernel is None:
            why = self.refused_kernels.get(name)
            if why:
                raise ReplayRefused(f"The grader does not run your kernel {name}: {why}. A kernel may use only Triton language.")
            raise ReplayRefused(
                f"Your call launched {name}, which is not a @triton.jit function at the top level of kernels.py: the "
                "grader replays only kernels it can read there."
            )
        grid = entry.get("grid")
        if not (isinstance(grid, list) and 1 <= len(grid) <= 3 and all(isinstance(g, int) and 0 <= g < MAX_GRID for g in grid)):
            raise ReplayRefused(f"The launch of {name} has a grid the grader cannot replay ({grid!r}).")
        args = self.decode(entry.get("args", []), state)
        kwargs = self.decode_kwargs(entry.get("kwargs", {}), state)
        problem = launch_problem(kernel, args, kwargs)  # before anything compiles the kernel with those values
        if problem:
            raise ReplayRefused(problem)
        if self.check is not None and index not in self.checked:
            problem = self.check(name, args, kwargs)
            if problem:
                raise ReplayRefused(
                    f"Your kernel {name} does not compile for a GPU with the arguments your call gave it, so the grader "
                    f"does not run it under the interpreter (a kernel body must be Triton language):\n{problem}"
                )
            self.checked.add(index)
        if any(g == 0 for g in grid):
            return  # an empty grid launches nothing
        if not self.bounds:  # compiled for a GPU, a kernel reaches only the GPU's memory
            compiled = kernel[tuple(grid)](*args, **kwargs)
            if index not in self.launched:  # the compiled kernel, for autograder/diagnose.py
                self.launched[index] = (name, tuple(grid), compiled)
            return
        try:
            with bounded(state.storages.values()):
                kernel[tuple(grid)](*args, **kwargs)
        except Exception as exc:
            cause = out_of_bounds(exc)
            if cause is None:
                raise
            raise ReplayRefused(
                f"Your kernel {name}, replayed on new inputs, made {cause} (the grader runs kernels only on the "
                "memory of the call they belong to)."
            ) from None


def _holds_tensor(values: Any) -> bool:
    if isinstance(values, torch.Tensor):
        return True
    return isinstance(values, (list, tuple)) and any(_holds_tensor(v) for v in values)


_POSITIONAL: dict[Any, tuple[int, frozenset[str]]] = {}  # op -> (its positional parameters, its keyword-only names)


def _recorded_form(op: Any, args: list, kwargs: dict) -> None:
    """Refuse an op entry that is not in the form the recorder writes: a dispatched op receives the arguments its schema
    takes by position as positional arguments, and only its keyword-only ones by name. A record that names the others
    was changed, and the change hides them from what reads the record by position (red team 25 passed `copy_`'s source
    as `src=`, and the weights' conversion went uncounted)."""
    form = _POSITIONAL.get(op)
    if form is None:
        arguments = op._schema.arguments
        form = _POSITIONAL[op] = (sum(not a.kwarg_only for a in arguments),
                                  frozenset(a.name for a in arguments if a.kwarg_only))  # fmt: skip
    positional, keyword_only = form
    if len(args) > positional or any(name not in keyword_only for name in kwargs):
        raise ReplayRefused(
            f"The record of your call does not match how the grader records an op ({op}: an argument PyTorch takes by "
            "position is recorded by name): the record was changed."
        )


def _recordable(op: Any) -> bool:
    """Whether the worker's recorder (a TorchDispatchMode) can meet this overload as one op. A composite op (`to`,
    `reshape`, `contiguous`) reaches it only as the ops it is made of, so a record that names one was written by hand,
    and replaying it would run what it is made of (a copy) unjudged: a red team's `aten.to.dtype` of a transposed
    input did a transpose in the replayer. An overload the dispatcher does not know (TorchScript's) is refused too."""
    try:
        return not op.has_kernel_for_dispatch_key(torch._C.DispatchKey.CompositeImplicitAutograd)
    except RuntimeError:
        return False


def _written_arguments(op: Any) -> list[str]:
    """The arguments an overload writes besides `self`: its `out=` tensors. An allowed name says nothing of them: a
    view's or an allocation's `.out` overload copies into the tensor it is given (a red team's
    `_unsafe_view.out(x.t(), ..., out=y)` was the transpose, under a view's name)."""
    return [a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write and a.name != "self"]


def _same_layout(shape: list, stride: list, recorded: list) -> bool:
    """Whether two strides lay a tensor of `shape` out alike: the same stride along every dimension longer than 1."""
    if not (isinstance(shape, list) and isinstance(recorded, list) and len(shape) == len(stride) == len(recorded)):
        return False
    return 0 in shape or all(n == 1 or a == b for n, a, b in zip(shape, stride, recorded))


def _descriptor_type() -> Any:
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor


def _triton_dtypes() -> dict[str, Any]:
    import triton.language as tl

    return {str(v): v for v in vars(tl).values() if isinstance(v, tl.dtype)}
