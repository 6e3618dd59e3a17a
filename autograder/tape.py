"""The tape: what a graded call did, in order, as plain data the grader can check and replay.

The worker records, during one graded call, every PyTorch op its recorder sees (name with overload,
arguments) and every Triton launch (which kernel, the grid after evaluation, every argument, the
constexprs and launch options). A tensor is written as a reference: a storage, an offset, a shape,
strides and a dtype. A storage is an input of the call, one that a recorded op created, or one the
call used without creating it (a buffer kept at module level or from an earlier call): the contents of
the last kind are carried with the tape as they were when the tape first met them.

The tape travels back with the worker's reply and is untrusted: the submission can forge it. The
grader checks it as data (`problems`) and has it replayed, in a process that runs none of the
submission's Python, on new inputs the worker never saw (autograder/replay.py). A forged tape that
replays to the right answer on those inputs is made of the submission's own kernels and allowed ops.

Layout (every key a string, every value plain data or a tensor, as torch.load(weights_only=True) reads):

    {"storages": {sid: {"nbytes": int, "origin": "input" | "created" | "carried", "device": str}},
     "inputs": {name: ref}, "outputs": {name: ref},
     "entries": [{"kind": "op", "op": "aten.empty_like.default", "args": [...], "kwargs": {...}, "out": value},
                 {"kind": "launch", "kernel": qualname, "file": path, "args": [...], "kwargs": {...},
                  "grid": [g0, g1, g2]}],
     "carried": {sid: uint8 tensor}, "unrecorded": [sentence, ...]}

A value is encoded as: a tensor {"T": [sid, offset, shape, stride, dtype, device]}, a storage {"S": sid},
{"dtype": name}, {"device": type}, {"layout": name}, {"memory_format": name}, a Triton dtype
{"tl_dtype": name}, a host TMA descriptor {"desc": {field: value}}, a tuple {"tuple": [...]}, or a plain
list, number, string, bool or None.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import Any

from autograder.policy import SCALAR_READ, is_allowed, op_name, shown

# Bytes of pre-existing buffers a tape may carry (the course's solutions carry 4 KiB); more on a GPU, where a
# workspace kept across calls at LLM sizes can be large.
CARRIED_BUDGET = {"cpu": 256 << 20, "cuda": 2 << 30}
MAX_ENTRIES = 200_000  # ops and launches per graded call


class Unrecordable(Exception):
    """A value the tape cannot write down (an object standing in for a pointer, a NumPy array ...)."""


# --------------------------------------------------------------------------------------------------
# Recording (in the worker)
# --------------------------------------------------------------------------------------------------


class Tape:
    """Records one graded call. Every storage it meets is kept alive until the call's reply is sent, so
    that no address is reused for another storage while the tape still names it."""

    def __init__(self, carried_budget: int = CARRIED_BUDGET["cpu"]) -> None:
        import torch

        self.torch = torch
        self.entries: list[dict] = []
        self.storages: dict[str, dict] = {}
        self.inputs: dict[str, Any] = {}
        self.outputs: dict[str, Any] = {}
        self.carried: dict[str, Any] = {}
        self.unrecorded: list[str] = []
        self._ids: dict[int, str] = {}  # StorageImpl address -> sid
        self._alive: list[Any] = []
        self._carried_bytes = 0
        self._carried_budget = carried_budget
        self._desc_type = tensor_descriptor_type()

    # -- storages and references ---------------------------------------------------------------

    def _sid(self, storage: Any, origin: str, device: str) -> str:
        key = storage._cdata
        sid = self._ids.get(key)
        if sid is None:
            sid = self._ids[key] = str(len(self._ids))
            self._alive.append(storage)
            self.storages[sid] = {"nbytes": int(storage.nbytes()), "origin": origin, "device": device}
            if origin == "carried":
                self._carry(sid, storage)
        return sid

    def _carry(self, sid: str, storage: Any) -> None:
        torch = self.torch
        nbytes = int(storage.nbytes())
        self._carried_bytes += nbytes
        if self._carried_bytes > self._carried_budget:
            self._note(
                f"Your call used {self._carried_bytes / 2**20:,.0f} MiB of memory it did not allocate (buffers kept "
                "from import or from earlier calls): a graded call may carry at most "
                f"{self._carried_budget >> 20} MiB of such state."
            )
            return
        view = torch.empty(0, dtype=torch.uint8, device=storage.device)
        view.set_(storage, 0, (nbytes,), (1,))
        self.carried[sid] = view.clone()

    def ref(self, t: Any, origin: str = "carried") -> dict:
        torch = self.torch
        if type(t) is not torch.Tensor and not isinstance(t, torch.Tensor):
            raise Unrecordable(type(t).__name__)
        if t.layout != torch.strided or t.device.type == "meta":
            raise Unrecordable(f"a {t.layout} tensor on {t.device.type}")
        storage = torch.Tensor.untyped_storage(t)
        sid = self._sid(storage, origin, t.device.type)
        return {"T": [sid, int(torch.Tensor.storage_offset(t)), list(t.shape), list(torch.Tensor.stride(t)),
                      str(t.dtype).replace("torch.", ""), t.device.type]}  # fmt: skip

    def encode(self, value: Any, origin: str = "carried") -> Any:
        torch = self.torch
        if value is None or type(value) in (bool, int, float, str):
            return value
        if isinstance(value, torch.Tensor):
            return self.ref(value, origin)
        if isinstance(value, (torch.UntypedStorage, torch.TypedStorage)):
            storage = value.untyped() if isinstance(value, torch.TypedStorage) else value
            return {"S": self._sid(storage, origin, storage.device.type)}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).replace("torch.", "")}
        if isinstance(value, torch.device):
            return {"device": value.type}
        if isinstance(value, torch.layout):
            return {"layout": str(value).replace("torch.", "")}
        if isinstance(value, torch.memory_format):
            return {"memory_format": str(value).replace("torch.", "")}
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise Unrecordable(type(value).__name__)
        if isinstance(value, tuple):
            return {"tuple": [self.encode(v, origin) for v in value]}
        if isinstance(value, list):
            return [self.encode(v, origin) for v in value]
        if self._desc_type is not None and type(value) is self._desc_type:
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return {"desc": {k: self.encode(v, origin) for k, v in fields.items()}}
        if type(value).__module__.startswith("triton.language") and type(value).__name__ in ("dtype", "pointer_type"):
            return {"tl_dtype": str(value)}
        if type(value).__module__.startswith("triton.language") and type(value).__name__ == "constexpr":
            return self.encode(value.value, origin)
        if type(value).__name__ in ("int64", "int32", "float64", "float32", "bool_") and hasattr(value, "item"):
            return value.item()  # a NumPy scalar
        raise Unrecordable(type(value).__name__)

    def _note(self, sentence: str) -> None:
        if sentence not in self.unrecorded:
            self.unrecorded.append(sentence)

    def _full(self) -> bool:
        if len(self.entries) >= MAX_ENTRIES:
            self._note(f"Your call ran more than {MAX_ENTRIES:,} PyTorch ops and kernel launches: the grader records at most that many.")
            return True
        return False

    # -- what the call did ----------------------------------------------------------------------

    def bind_inputs(self, inputs: dict[str, Any]) -> None:
        """The tensors the grader hands the call, by name (their storages are the call's inputs)."""
        for name, value in inputs.items():
            if isinstance(value, self.torch.Tensor):
                self.inputs[name] = self.ref(value, "input")

    def begin_op(self, func: Any, args: Any, kwargs: dict) -> dict | None:
        """Record an op's arguments before it runs (so a buffer it is the first to touch is carried as it was)."""
        if self._full():
            return None
        entry = {"kind": "op", "op": str(func)}
        try:
            entry["args"] = self.encode(list(args))
            entry["kwargs"] = {k: self.encode(v) for k, v in kwargs.items()}
        except Unrecordable as exc:
            self._note(f"Your call passed a {exc} to the PyTorch op {shown(func)}, which the grader cannot record.")
            return None
        self.entries.append(entry)
        return entry

    def end_op(self, entry: dict | None, out: Any) -> None:
        if entry is None:
            return
        try:
            entry["out"] = self.encode(out, origin="created")
        except Unrecordable as exc:
            self._note(f"The PyTorch op {shown(entry['op'])} returned a {exc}, which the grader cannot record.")

    def launch(self, fn: Any, args: Any, kwargs: dict, kernel: Any = None) -> dict | None:
        """Record a Triton launch before it runs; the grid is filled in when Triton evaluates it. `kernel`: the
        JITFunction or InterpretedFunction launched, whose constexpr parameters must get compile-time values."""
        if self._full():
            return None
        problem = launch_problem(kernel, args, kwargs) if kernel is not None else ""
        if problem:
            self._note(problem)
            return None
        code = getattr(fn, "__code__", None)
        entry = {"kind": "launch", "kernel": getattr(fn, "__qualname__", getattr(fn, "__name__", "?")),
                 "file": code.co_filename if code is not None else "", "grid": None}  # fmt: skip
        try:
            entry["args"] = self.encode(list(args))
            entry["kwargs"] = {k: self.encode(v) for k, v in kwargs.items()}
        except Unrecordable as exc:
            self._note(
                f"Your launch of {entry['kernel']} passed a {exc}, which the grader cannot record: pass tensors, "
                "numbers and constexprs to a kernel."
            )
            return None
        self.entries.append(entry)
        return entry

    def set_grid(self, entry: dict | None, grid: Any) -> None:
        if entry is None:
            return
        try:
            dims = [int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,))]
        except (TypeError, ValueError):
            self._note(f"The grid of {entry['kernel']} is not a tuple of integers.")
            return
        entry["grid"] = dims

    def set_outputs(self, outputs: dict[str, Any]) -> None:
        torch = self.torch
        for name, value in outputs.items():
            if type(value) is torch.Tensor:
                try:
                    self.outputs[name] = self.ref(value, "returned")
                except Unrecordable:
                    pass

    def data(self) -> dict:
        """The tape as plain data (tensors stay tensors; the reply moves them to the CPU)."""
        return {"storages": self.storages, "inputs": self.inputs, "outputs": self.outputs, "entries": self.entries,
                "carried": self.carried, "unrecorded": self.unrecorded}  # fmt: skip

    def release(self) -> None:
        self._alive.clear()
        self._ids.clear()


class GridRecorder:
    """Stands in for a launch's grid callable: Triton calls it, and the tape keeps what it returned."""

    def __init__(self, grid: Any, tape: Tape, entry: dict | None) -> None:
        self.grid, self.tape, self.entry = grid, tape, entry

    def __call__(self, meta: Any) -> Any:
        result = self.grid(meta)
        self.tape.set_grid(self.entry, result)
        return result


def tensor_descriptor_type() -> type | None:
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor


# --------------------------------------------------------------------------------------------------
# What a kernel's parameters may be given (the worker's tape, and the replay, judge each launch by it)
# --------------------------------------------------------------------------------------------------

_CONSTEXPR_NAMES: dict[int, tuple[Any, tuple[str, ...], frozenset[str]]] = {}


def _parameters(kernel: Any) -> tuple[tuple[str, ...], frozenset[str]]:
    """A JITFunction's or InterpretedFunction's parameters in order, and which of them Triton treats as constexpr."""
    cached = _CONSTEXPR_NAMES.get(id(kernel))
    if cached is not None and cached[0] is kernel:
        return cached[1], cached[2]
    params = getattr(kernel, "params", None)
    if params is None:  # the interpreter's wrapper: Triton's own reading of the same function
        from triton.runtime.jit import JITFunction

        params = JITFunction(kernel.fn).params
    names = tuple(p.name for p in params)
    constexprs = frozenset(p.name for p in params if p.is_constexpr)
    _CONSTEXPR_NAMES[id(kernel)] = (kernel, names, constexprs)
    return names, constexprs


def _compile_time_value(value: Any) -> bool:
    """What a constexpr parameter may hold: a number, a bool, a string, None, a dtype, or a tuple of these."""
    import numbers

    if value is None or isinstance(value, (bool, str, numbers.Number)):
        return not hasattr(value, "data_ptr")  # a 0-d tensor is not a Number, but be sure
    if isinstance(value, tuple):
        return all(_compile_time_value(v) for v in value)
    kind = type(value)
    if kind.__module__.startswith("triton.language") and kind.__name__ == "constexpr":
        return _compile_time_value(value.value)
    if kind.__module__.startswith("triton.language") and kind.__name__ in ("dtype", "pointer_type"):
        return True
    return kind.__module__ == "torch" and kind.__name__ == "dtype"


# Launch options a graded launch may set: how the kernel is compiled and launched, nothing that names a file, a
# compiler's command line or another target (ptx_options, ir_override, extern_libs, instrumentation_mode, arch ...),
# which in the replayer would have Triton's compilers read or write where the submission says.
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_pdl",
                            "launch_cooperative_grid", "debug", "sanitize_overflow"})  # fmt: skip


def launch_problem(kernel: Any, args: Any, kwargs: dict) -> str:
    """A sentence when a launch gives a constexpr parameter anything but a compile-time value, or sets a launch
    option outside LAUNCH_OPTIONS; else ''.

    Triton hands a constexpr argument to the kernel body untouched. A tensor there is a PyTorch tensor inside the
    kernel: its methods that share names with Triton's (sum, rsqrt, softmax, reshape ...) compute with PyTorch while
    the kernel is compiled, and under the interpreter while it runs, and no recorder sees them."""
    try:
        names, constexprs = _parameters(kernel)
    except Exception:  # noqa: BLE001  (Triton could not read the function: its launch fails on its own)
        return ""
    kernel_name = getattr(getattr(kernel, "fn", None), "__name__", "a kernel")
    for option, value in kwargs.items():
        if option not in names and option not in LAUNCH_OPTIONS and value is not None:  # None: Triton's default
            return (
                f"Your launch of {kernel_name} sets `{option}`, which is neither a parameter of the kernel nor a launch "
                f"option the grader replays ({', '.join(sorted(LAUNCH_OPTIONS))})."
            )
    given = dict(zip(names, args))
    given.update((k, v) for k, v in kwargs.items() if k in names)
    for name in names:
        if name in constexprs and name in given and not _compile_time_value(given[name]):
            what = type(given[name]).__name__
            return (
                f"Your launch of {kernel_name} passes a {what} to its constexpr parameter `{name}`. A constexpr "
                "takes a number, a bool, a string, None or a dtype, fixed when the kernel is compiled: pass tensors "
                "to pointer parameters (without tl.constexpr) and load from them in the kernel."
            )
    return ""


# --------------------------------------------------------------------------------------------------
# Checking (in the grader): the tape is data, and untrusted
# --------------------------------------------------------------------------------------------------


def tensor_refs(value: Any) -> list[list]:
    """Every tensor reference inside an encoded value."""
    found: list[list] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if "T" in v and isinstance(v["T"], list):
                found.append(v["T"])
            else:
                stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return found


# What a tensor reference's numbers may be: PyTorch's own limits (at most 64 dimensions; sizes, strides and offsets in
# int64), so that no check in the grader does arithmetic on numbers whose size the worker chose (red team 16: an
# output's shape of 50,000 dimensions, each a 4,300-digit string that int() read, made the check of the largest output
# quadratic in big integers: 31 hours).
MAX_DIMS = 64
MAX_EXTENT = 2**63 - 1


def _extents(values: Any) -> bool:
    return (isinstance(values, list) and len(values) <= MAX_DIMS
            and all(type(v) is int and 0 <= v <= MAX_EXTENT for v in values))


def malformed_ref(tape: dict) -> list | None:
    """The first tensor reference anywhere in the tape (inputs, outputs, every entry's arguments and results, every
    descriptor's shape) whose shape, strides or offset are not what a PyTorch tensor can have, or None."""
    for ref in tensor_refs(tape):
        if len(ref) != 6 or not (_extents(ref[2]) and _extents(ref[3]) and len(ref[2]) == len(ref[3])
                                 and type(ref[1]) is int and 0 <= ref[1] <= MAX_EXTENT):
            return ref
    for entry in tape.get("entries", []):
        for arg in entry.get("args", []) if isinstance(entry, dict) and isinstance(entry.get("args"), list) else []:
            desc = arg.get("desc") if isinstance(arg, dict) else None
            shape = desc.get("shape") if isinstance(desc, dict) else None
            if isinstance(shape, dict):
                shape = shape.get("tuple")
            if shape is not None and not _extents(shape):
                return [shape]
    return None


def scalar_reads(tape: dict) -> int:
    return sum(1 for e in tape.get("entries", []) if e.get("kind") == "op" and op_name(e.get("op", "")) == SCALAR_READ)


def problems(tape: Any, submission_file: str, refused: Collection[str] = (), device: str = "cpu", note: str = "",
             required_kernel: str = "", launches: Sequence[str] = ()) -> str:
    """The first thing the grader refuses in a tape, as a sentence, or ''.

    The same rules the worker's recorder applies, checked again on the data: only allowed ops, launches
    only of kernels from kernels.py, at least one of them, no copy from the GPU to the CPU; and where the part
    names a kernel (Part.launches_with_descriptors), a launch of it with descriptors spanning at least the largest
    output; where it names the kernels the call may launch (Part.launches), no other kernel, and the first of them.
    The replay then runs these launches, so a launch the tape claims is one that really computes.
    """
    if not isinstance(tape, dict) or not isinstance(tape.get("entries"), list):
        return "The grader received no readable record of your call (something changed what the worker sends back)."
    if tape.get("unrecorded"):
        return str(tape["unrecorded"][0])
    if malformed_ref(tape) is not None:
        return ("The record of your call is malformed (a tensor no PyTorch call makes: something changed what the "
                "worker sends back).")
    forbidden: dict[str, None] = {}  # in the order met, each once (a list's look-up made 80,000 names quadratic)
    launched = 0
    for entry in tape["entries"]:
        if not isinstance(entry, dict):
            return "The record of your call is malformed."
        if entry.get("kind") == "op":
            op = str(entry.get("op", ""))
            if not is_allowed(op, refused):
                forbidden.setdefault(shown(op))
            elif device == "cuda" and op_name(op) in ("_to_copy", "copy_", "to") and _device_to_host(entry):
                forbidden.setdefault("a copy from the GPU to the CPU (.cpu(), .to('cpu'), .tolist())")
        elif entry.get("kind") == "launch":
            if entry.get("file") != submission_file:
                where = str(entry.get("file", "")).rsplit("/", 1)[-1] or "elsewhere"
                forbidden.setdefault(f"the Triton kernel {entry.get('kernel')} from {where}, not from your kernels.py")
            else:
                launched += 1
            if entry.get("grid") is None:
                return f"The launch of {entry.get('kernel')} in your call has no grid the grader could record."
        else:
            return "The record of your call is malformed."
    if forbidden:
        return (
            f"The graded call computed with PyTorch ({', '.join(list(forbidden)[:6])}). Besides your Triton kernels it "
            "may only allocate, view and copy tensors: compute the result in your kernel."
            + (f" {note}" if note else "")
        )
    if launched == 0:
        return "The graded call launched none of the Triton kernels in your kernels.py: the result must come from your kernel."
    if required_kernel and descriptor_span(tape, submission_file, required_kernel) < _largest_output(tape):
        return missing_kernel(required_kernel)
    if launches:
        kernels = [str(e.get("kernel")) for e in tape["entries"] if e.get("kind") == "launch"]
        other = next((name for name in kernels if name not in launches), None)
        if other is not None or launches[0] not in kernels:
            return outside_kernels(launches, other)
    return _output_problem(tape)


def missing_kernel(name: str) -> str:
    """The sentence for a call that did not compute its result with the kernel its part grades."""
    return (
        f"The graded call did not launch `{name}` with tensor descriptors: this part grades that kernel, so its "
        f"result must come from it (another kernel of yours computing the same result earns the other part's "
        f"points, not these). Keep the given launcher, which makes the descriptors and launches `{name}`, and fill "
        "in the kernel's body."
    )


def outside_kernels(launches: Sequence[str], other: str | None) -> str:
    """The sentence for a call whose result did not come from the kernels its part grades (Part.launches)."""
    named = ", ".join(f"`{k}`" for k in launches)
    what = (f"launched `{other}`, which is not one of this part's kernels ({named})" if other is not None
            else f"did not launch `{launches[0]}`")
    return (
        f"The graded call {what}: this part grades its own kernels, so its result must come from them (another kernel "
        "of yours that computes the same result earns its own part's points, not these). Keep the given launcher, "
        "which launches them, and fill in their bodies."
    )


def descriptor_span(tape: dict, submission_file: str, kernel: str) -> int:
    """The most elements one tensor descriptor spans among the recorded launches of `kernel` from kernels.py
    (-1 where it was not launched with any)."""
    best = -1
    for entry in tape.get("entries", []):
        if entry.get("kind") != "launch" or entry.get("file") != submission_file:
            continue
        if str(entry.get("kernel", "")).rsplit(".", 1)[-1] != kernel:
            continue
        for arg in entry.get("args", []):
            shape = arg.get("desc", {}).get("shape") if isinstance(arg, dict) else None
            if isinstance(shape, dict):  # a torch.Size or tuple, encoded as {"tuple": [...]}
                shape = shape.get("tuple")
            if isinstance(shape, list) and all(isinstance(s, int) for s in shape):
                best = max(best, _prod(shape))
    return best


def _largest_output(tape: dict) -> int:
    refs = [r for value in tape.get("outputs", {}).values() for r in tensor_refs(value)]
    return max((_prod(r[2]) for r in refs if isinstance(r[2], list)), default=0)


def _prod(shape: list) -> int:
    """The elements of a shape malformed_ref() passed (at most 64 sizes, each within int64)."""
    n = 1
    for s in shape:
        n = min(n * s, MAX_EXTENT) if type(s) is int else 0  # saturates: no big integers, whatever the record says
    return n


def _output_problem(tape: dict) -> str:
    """An output the record places in an input's memory (the replay binds inputs by name: their storages are
    real), or in the same place as another output."""
    inputs = {str(r[0]): name for name, value in tape.get("inputs", {}).items() for r in tensor_refs(value)}
    seen: dict[str, str] = {}
    for name, value in tape.get("outputs", {}).items():
        refs = tensor_refs(value)
        if len(refs) != 1:
            return f"The record of your call does not say where its output `{name}` is."
        ref = refs[0]
        if str(ref[0]) in inputs:
            return (
                f"`{name}` shares memory with the input `{inputs[str(ref[0])]}`: return a new tensor that your kernel "
                "writes, not a view of (or the memory of) something the grader gave you."
            )
        if not _row_major(ref[2], ref[3]):
            return (
                f"`{name}` is not laid out row-major (shape {tuple(ref[2])}, strides {tuple(ref[3])}): return a "
                "contiguous tensor, as the PyTorch op does. The layout of the result is part of the answer (a "
                "transpose returned as a view of its input's layout has done none of its work)."
            )
        key = repr(ref)
        if key in seen:
            return f"`{name}` is the same memory as the output `{seen[key]}`: each output needs its own tensor."
        seen[key] = name
    return ""


def _row_major(shape: Any, stride: Any) -> bool:
    """Whether strides are the contiguous row-major ones for `shape`, along every dimension longer than 1."""
    if not (isinstance(shape, list) and isinstance(stride, list) and len(shape) == len(stride)):
        return False
    expected = 1
    for n, st in zip(reversed(shape), reversed(stride)):
        if n != 1 and st != expected:
            return n == 0 or 0 in shape
        expected *= n
    return True


def _device_to_host(entry: dict) -> bool:
    refs = tensor_refs(entry.get("args", []))
    out = tensor_refs(entry.get("out"))
    devices_in = {r[5] for r in refs if len(r) > 5}
    if op_name(entry["op"]) == "copy_":
        return len(refs) >= 2 and refs[0][5] == "cpu" and refs[1][5] == "cuda"
    return "cuda" in devices_in and any(len(r) > 5 and r[5] == "cpu" for r in out)
