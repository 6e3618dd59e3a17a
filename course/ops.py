"""Register a kernels.py's calls as PyTorch operators (torch.library), so real programs can use them.

A registered op is one node to torch.compile (it traces the program around it with no graph break and
calls the op as it is), CUDA graphs capture its launches, and its fake implementation tells the compiler
the shapes and dtypes of its outputs without running a kernel. The student's Triton kernel is still what
computes: an op's implementation is the file's own launcher.

Each kernels.py makes one `OpLibrary(__file__)` and defines its ops through it. PyTorch refuses to define
one name twice in a process, and a process may hold several copies of one assignment (the solution, your
kernels.py, a file loaded again after an edit), so the namespace depends on the file:

- `course::NAME` for the course's solutions (solutions/<slug>/kernels.py);
- `course_student::NAME` for your assignments (assignments/<slug>/kernels.py);
- `course_<n>::NAME` for any other file, or a file loaded a second time.

Call an op through the module that defined it (`kernels.rmsnorm(...)`, or `kernels.OPS.namespace`), not
through a namespace you assume. Every namespace starts with "course": the grader's recorder runs a course
op's implementation under its watch (autograder/policy.py, `is_course_op`).

The dispatcher costs host time: a trip from Python into PyTorch's C++ dispatcher and back into Python (on a
CPU with Triton's launch stubbed out, 4-20 us a call over the launcher alone, more for more arguments and
outputs). So an op defined here is a `CourseOp`: called in plain eager code it runs its implementation
directly, and it goes through the dispatcher only where something is listening there: torch.compile tracing
it, or a dispatch mode (a fake-tensor mode, the grader's recorder, `run_implementations`). `op.overload` is
the registered operator itself.

Inside a compiled program an opaque op still pays that trip on every call (about 34 us of host time per op on
an H100's host, results/h100/prefill_compile_host.md). So where the kernels are compiled ones (not the CPU
interpreter), an op is also *traced*: when torch.compile's AOTAutograd reaches it, its implementation runs on
the trace's tensors, each launch is recorded with `torch.library.wrap_triton` (course/launch.py), and Inductor
puts the kernels into the program it generates and launches them itself, as it does for a
`torch.library.triton_op`. An op stays opaque where one of its launches takes an argument the graph cannot
hold as Triton would (a float unless its kernels cast floats to float32, a TMA descriptor other than Triton's
`TensorDescriptor` over a whole contiguous tensor: `course.launch.Untraceable` says why), where the compiled program's shapes are symbolic (its launcher chooses
settings by shape), where it is defined with `traced=False` (its launcher keeps state between calls), where
the launcher cannot run on a trace's tensors at all (it reads a value on the host, say), and in
`torch.export`, which keeps a triton_op whole too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

from course.env import interpreter_requested
from course.launch import traced_launches

NAMESPACE_PREFIX = "course"
_ROOT = Path(__file__).resolve().parent.parent
_TAKEN: set[str] = set()
_LIBRARIES: list[torch.library.Library] = []  # "namespace::name" defined in this process, by any OpLibrary


def base_namespace(module_file: str) -> str:
    """'course' for a solution's kernels.py, 'course_student' for an assignment's, 'course_file' otherwise."""
    path = Path(module_file).resolve()
    for folder, namespace in (("solutions", NAMESPACE_PREFIX), ("assignments", f"{NAMESPACE_PREFIX}_student")):
        if path.parent.parent == _ROOT / folder and path.name == "kernels.py":
            return namespace
    return f"{NAMESPACE_PREFIX}_file"


def _free(namespace: str, name: str) -> bool:
    if f"{namespace}::{name}" in _TAKEN:
        return False
    try:
        getattr(getattr(torch.ops, namespace), name)  # defined by a copy of this module (course.ops reloaded)
    except (AttributeError, RuntimeError):
        return True
    return False


_IMPLEMENTATIONS: dict[Any, Callable[..., Any]] = {}  # each op -> the function that launches its kernels


class run_implementations(TorchDispatchMode):
    """While open, a course op runs its own implementation on every device, the `meta` device included (where
    it would otherwise run its fake): `python -m autograder portability` sees the launches a call makes on
    tensors that have shapes and no data."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        impl = _IMPLEMENTATIONS.get(func)
        if impl is None:
            return func(*args, **(kwargs or {}))
        with self:  # the implementation's own course ops, if any, the same way
            return impl(*args, **(kwargs or {}))


class OpLibrary:
    """The ops of one kernels.py, under a namespace chosen when its first op is defined."""

    def __init__(self, module_file: str) -> None:
        self.base = base_namespace(module_file)
        self.namespace: str | None = None

    def _qualified(self, name: str) -> str:
        if self.namespace is None:
            candidates = [self.base] + [f"{self.base}_{n}" for n in range(2, 1000)]
            self.namespace = next(ns for ns in candidates if _free(ns, name))
        if not _free(self.namespace, name):
            raise RuntimeError(
                f"the op {self.namespace}::{name} is defined twice in one kernels.py: give each op its own name."
            )
        _TAKEN.add(f"{self.namespace}::{name}")
        return f"{self.namespace}::{name}"

    def op(
        self, name: str, schema: str, fake: Callable[..., Any], traced: bool = True, float32_floats: bool = False
    ) -> Callable[[Callable[..., Any]], Any]:
        """Decorator: define `namespace::name` with this schema, the decorated function as its implementation
        on every device, and `fake` as its fake (meta) implementation. Returns the op, a `CourseOp`.
        `traced=False` keeps the op opaque to torch.compile everywhere: for a launcher with state that lives
        between calls (a buffer it keeps), which a traced graph would copy instead of share.
        `float32_floats=True` lets a launch with float arguments be traced: say it only where every kernel the
        op launches casts each float argument to float32 before using it (`eps = tl.cast(eps, tl.float32)`),
        so that Inductor's float64 gives what Triton's float32 gives.

        The schema is given rather than inferred from type hints so that one text means the same op on every
        torch version the course supports. Outputs are new tensors, never an input or a view of one.
        Registered with torch.library.Library rather than torch.library.custom_op: custom_op adds a Python
        autograd layer to every call (tens of microseconds of host time), and the course's gradients come
        from its autograd Functions, which call these ops with autograd off.
        """

        def define(impl: Callable[..., Any]) -> Any:
            namespace, _, op_name = self._qualified(name).partition("::")
            lib = torch.library.Library(namespace, "FRAGMENT")
            lib.define(f"{op_name}{schema}")
            lib.impl(op_name, impl, "CompositeExplicitAutograd")
            torch.library.register_fake(f"{namespace}::{op_name}", fake, lib=lib)
            if traced and _CAN_TRACE and not interpreter_requested():  # interpreted kernels cannot be recorded
                torch.library.register_torch_dispatch(
                    f"{namespace}::{op_name}", FunctionalTensorMode, _traced_rule(impl, float32_floats), lib=lib
                )
            _LIBRARIES.append(lib)  # a Library that is garbage collected takes its registrations with it
            overload = getattr(getattr(torch.ops, namespace), op_name).default
            _IMPLEMENTATIONS[overload] = impl
            return CourseOp(overload, impl)

        return define


# torch >= 2.6 has both
_CAN_TRACE = hasattr(torch.library, "wrap_triton") and hasattr(torch.library, "register_torch_dispatch")
_TRACE_INTO = {"on": True}
_TRACE_TYPES = (torch.Tensor, FunctionalTensor)


def trace_into_ops(on: bool) -> bool:
    """Whether torch.compile traces into the course's traced ops from now on (True) or keeps every op opaque;
    returns the previous setting. For measuring one against the other: the setting counts when a function is
    compiled, so reset Dynamo (`torch._dynamo.reset()`) after changing it."""
    before = _TRACE_INTO["on"]
    _TRACE_INTO["on"] = on
    return before


_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _symbolic(args: tuple, kwargs: dict) -> bool:
    """Whether a shape, stride or scalar of the call is symbolic (torch.compile with dynamic shapes): a launcher
    picks its settings and grid from the shape, so its op stays opaque rather than specialize the graph."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            if any(isinstance(d, _SYMBOLIC) for d in (*a.shape, *a.stride())):
                return True
        elif isinstance(a, _SYMBOLIC):
            return True
    return False


def _traced_rule(impl: Callable[..., Any], floats: bool) -> Callable[..., Any]:
    """What an op does under AOTAutograd's functionalization: run its implementation on the trace's tensors with
    every launch recorded (so Inductor sees the kernels), or, where a launch cannot be recorded, stay one op."""

    def rule(mode: FunctionalTensorMode, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        plain = all(issubclass(t, FakeTensor) or t in _TRACE_TYPES for t in types)  # no other tensor subclass
        # torch.export keeps ops whole, as it keeps a triton_op: an exported program holds no Triton kernels
        exporting = not getattr(torch._functorch.config, "decompose_custom_triton_ops", True)
        if _TRACE_INTO["on"] and plain and not exporting and not _symbolic(args, kwargs):
            try:
                with mode, traced_launches(floats):
                    return impl(*args, **kwargs)
            except Exception:  # noqa: BLE001 - Untraceable, or a launcher that cannot run on a trace's tensors
                pass  # the opaque op computes the same; what was traced so far is unused, and the compiler drops it
        return mode.__torch_dispatch__(func, types, args, kwargs)

    return rule


class CourseOp:
    """A registered course op, called the cheap way where nobody but the caller is watching.

    Eager code gets the implementation directly (autograd off, as the dispatcher runs it below autograd);
    torch.compile and any dispatch mode get the registered operator, so tracing, fake tensors, CUDA graph
    trees and the grader's recorder see one op as before.
    """

    def __init__(self, overload: Any, impl: Callable[..., Any]) -> None:
        self.overload, self.impl = overload, impl
        self.__name__, self.__doc__ = impl.__name__, impl.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack():
            return self.overload(*args, **kwargs)
        if not torch.is_grad_enabled():
            return self.impl(*args, **kwargs)
        torch._C._set_grad_enabled(False)  # what torch.no_grad() does, without a context manager's cost
        try:
            return self.impl(*args, **kwargs)
        finally:
            torch._C._set_grad_enabled(True)

    def __repr__(self) -> str:
        return f"CourseOp({self.overload})"


def needs_autograd(*tensors: torch.Tensor) -> bool:
    """Whether a call must record a graph for backward: grad mode is on and an input requires a gradient.
    Where not (inference, evaluation, torch.no_grad), a public call can skip its autograd Function."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)

