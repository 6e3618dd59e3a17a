"""Proof that a kernel is Triton language before the CPU interpreter runs it as Python.

Under the interpreter a `@triton.jit` body is executed as ordinary Python, so a body that calls plain
Python, or hides Python behind a constexpr branch, would run it. Before the replayer interprets a
launch, it generates Triton IR for that exact specialization (the same constexprs, the same argument
types) for a GPU target, which is what compiling on a GPU does first: Python that is not Triton does
not get through. Results are cached per specialization. On a GPU no check is needed: the launch compiles.

Under TRITON_INTERPRET Triton's own library functions (tl.sum, tl.zeros ...) are interpreter objects,
which the code generator cannot call, and the interpreter leaves parts of triton.language patched after
it ran: while a check runs, the language is put back as it was imported (this module must be imported
before any kernel is interpreted), with compiled twins of those functions.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import triton.language  # noqa: F401  (the snapshot below needs the language imported, before any interpretation)

# GPU targets tried in turn (compute capability, warp size): a kernel is Triton if one of them takes it.
TARGETS = ((90, 32), (100, 32), (80, 32))


class CompileCheck:
    """Caches, per kernel and specialization, '' when it generates Triton IR, else the compiler's message."""

    def __init__(self, compiled: dict[str, Any]) -> None:
        self.compiled = compiled  # name -> JITFunction twin of each kernel
        self.results: dict[tuple, str] = {}
        self._backends: dict[tuple, Any] = {}
        self._binders: dict[tuple, Any] = {}
        self.unavailable = _unavailable()

    def check(self, name: str, args: list, kwargs: dict) -> str:
        jf = self.compiled.get(name)
        if jf is None:
            return f"{name} is not a @triton.jit function the grader could read from kernels.py"
        if self.unavailable:
            # A Triton without the internals the check uses (the pinned one has them): the static check of
            # the kernel's source (kernel_source.check_function) is then what stands before the interpreter.
            return ""
        first_error = ""
        for cc, warp in TARGETS:
            try:
                key, make = self._specialize(jf, name, cc, warp, args, kwargs)
            except Exception as exc:  # noqa: BLE001  (the arguments do not fit the kernel's signature)
                return f"its arguments do not fit its signature ({type(exc).__name__}: {exc})"
            if key not in self.results:
                self.results[key] = make()
            if not self.results[key]:
                return ""
            first_error = first_error or self.results[key]
        return first_error

    def _specialize(self, jf: Any, name: str, cc: int, warp: int, args: list, kwargs: dict) -> tuple[tuple, Any]:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource, make_backend
        from triton.runtime.jit import create_function_from_signature

        target = GPUTarget("cuda", cc, warp)
        if (cc, warp) not in self._backends:
            self._backends[(cc, warp)] = make_backend(target)
        backend = self._backends[(cc, warp)]
        if (name, cc, warp) not in self._binders:
            self._binders[(name, cc, warp)] = create_function_from_signature(jf.signature, jf.params, backend)
        binder = self._binders[(name, cc, warp)]
        bound_args, specialization, options = binder(*args, **kwargs)
        key = (name, cc, warp, repr(specialization), repr(sorted(kwargs.items(), key=lambda kv: kv[0]))[:4000])

        def make() -> str:
            try:
                opts, signature, constexprs, attrs = jf._pack_args(backend, dict(kwargs), bound_args, specialization, options)
                with _compiled_language():
                    _make_ir(ASTSource(jf, signature, constexprs, attrs), target, opts, backend)
            except Exception as exc:  # noqa: BLE001  (any failure to generate IR is the verdict)
                return _describe(exc)
            return ""

        return key, make


def _unavailable() -> str:
    """Why this Triton cannot run the check ('' when it can), said once in the replayer's log."""
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource, make_backend  # noqa: F401
        from triton.runtime.jit import JITFunction, create_function_from_signature

        if len(inspect.signature(create_function_from_signature).parameters) != 3 or not hasattr(JITFunction, "_pack_args"):
            raise ImportError("create_function_from_signature or JITFunction._pack_args differ")
    except ImportError as exc:
        print(f"autograder: the compile check is not available with this Triton ({exc})", file=sys.stderr)
        return str(exc)
    return ""


def _make_ir(src: Any, target: Any, options: Any, backend: Any) -> Any:
    """Triton's first compilation stage (Python AST to TTIR), called as this Triton version spells it."""
    from triton._C.libtriton import ir

    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    named = {"target": target, "options": options, "codegen_fns": backend.get_codegen_implementation(options),
             "module_map": backend.get_module_map(), "context": context}  # fmt: skip
    params = [p for p in inspect.signature(src.make_ir).parameters if p != "self"]
    return src.make_ir(*[named[p] for p in params])


def _language_members() -> list[tuple[Any, str, Any]]:
    """(owner, name, value) for every attribute of triton.language's modules and of the classes they define."""
    found = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("triton.language"):
            continue
        owners = [module] + [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module_name]
        for owner in owners:
            found += [(owner, attr, value) for attr, value in list(vars(owner).items())]
    return found


# triton.language as imported, before any kernel was interpreted: the interpreter patches the language
# while it runs, and its nested calls (tl.sum inside a kernel, say) leave some of those patches behind.
_PRISTINE = _language_members()


@contextmanager
def _compiled_language() -> Iterator[None]:
    """For the length of a check: triton.language as imported, with its library jit functions compiled
    (JITFunction twins of the interpreter's objects); then exactly as it was."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        InterpretedFunction = None  # noqa: N806
    from triton.runtime.jit import JITFunction

    changed: list[tuple[Any, str, Any]] = []
    for owner, attr, pristine in _PRISTINE:
        wanted = pristine
        if InterpretedFunction is not None and isinstance(pristine, InterpretedFunction):
            wanted = _TWINS.get(id(pristine))
            if wanted is None:
                wanted = _TWINS[id(pristine)] = JITFunction(pristine.fn)
        current = vars(owner).get(attr, _MISSING)
        if current is not wanted:
            changed.append((owner, attr, current))
            setattr(owner, attr, wanted)
    try:
        yield
    finally:
        for owner, attr, current in reversed(changed):
            if current is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, current)


_TWINS: dict[int, Any] = {}
_MISSING = object()


def _describe(exc: BaseException) -> str:
    """The compiler's complaint: the innermost error of the chain (a nested @jit function's), with its source line."""
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 20:
        chain.append(chain[-1].__cause__)
    inner = next((e for e in reversed(chain) if type(e).__name__ == "CompilationError"), exc)
    text = _first_lines(str(inner))
    if inner is not chain[-1] and str(chain[-1]) and str(chain[-1]) not in text:
        text += f"\n{type(chain[-1]).__name__}: {_first_lines(str(chain[-1]), 3)}"
    return text


def _first_lines(text: str, n: int = 8) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-n:]) if len(lines) > n else "\n".join(lines)
