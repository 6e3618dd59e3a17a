"""The submission's kernels, read from its source text without running it.

The replayer never imports kernels.py. It parses the text the grader read before the worker started,
and takes from it the module-level `@triton.jit` functions (keyword arguments of the decorator only
when they are literals; `@triton.autotune` and `@triton.heuristics` are dropped, since the tape holds
the configuration each launch used) and the constant globals they use (`NAME = tl.constexpr(...)` or a
plain literal, evaluated here by a small evaluator, never by Python).

Compiling a kernel runs Python: Triton's code generator calls ordinary Python functions it meets,
and under the CPU interpreter a kernel body *is* Python. So every function taken is first checked
against what a Triton kernel needs (`check_function`): names that are its parameters, its locals,
the other kernels, the constants, `tl` and a few builtins; attributes that are Triton's (no name
starting with an underscore, module attributes only inside triton.language or math); no imports,
nested functions, lambdas, comprehensions, `with`, `try`, `global`, assignments to attributes. A
function that fails is kept out of the namespace with the reason, and a launch of it is refused.
"""

from __future__ import annotations

import ast
import io
import linecache
import math
import operator
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Builtins Triton's code generator accepts in a kernel (print becomes device_print; min, max its own).
KERNEL_BUILTINS = frozenset({"range", "len", "min", "max", "int", "float", "print", "True", "False", "None"})
ALIAS = "another name for the @triton.jit function"
_REFUSED_NODES: dict[type, str] = {
    ast.Import: "an import", ast.ImportFrom: "an import", ast.Lambda: "a lambda", ast.FunctionDef: "a nested function",
    ast.AsyncFunctionDef: "a nested function", ast.ClassDef: "a class", ast.Global: "`global`", ast.Nonlocal: "`nonlocal`",
    ast.With: "`with`", ast.AsyncWith: "`with`", ast.Try: "`try`", ast.Raise: "`raise`", ast.Delete: "`del`",
    ast.Yield: "`yield`", ast.YieldFrom: "`yield`", ast.Await: "`await`", ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension", ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator expression",
    ast.Dict: "a dict", ast.Set: "a set", ast.NamedExpr: "`:=`", ast.Starred: None,
}  # fmt: skip
if hasattr(ast, "TryStar"):
    _REFUSED_NODES[ast.TryStar] = "`try`"
if hasattr(ast, "Match"):
    _REFUSED_NODES[ast.Match] = "`match`"
_REFUSED_NODES = {k: v for k, v in _REFUSED_NODES.items() if v is not None}
_SAFE_MODULE_PREFIXES = ("triton.language", "math")


class NotAKernel(Exception):
    """Why a function of kernels.py cannot be replayed, as a sentence fragment."""


@dataclass
class Kernels:
    """What the replayer takes from kernels.py: the functions, and why the others were left out."""

    filename: str
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # name -> its def, decorators removed
    jit_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # name -> why it cannot be replayed
    constants: dict[str, Any] = field(default_factory=dict)
    unevaluated: dict[str, str] = field(default_factory=dict)  # a top-level name the evaluator could not follow -> why
    modules: dict[str, Any] = field(default_factory=dict)  # alias -> module or object, from the imports
    source: str = ""


# --------------------------------------------------------------------------------------------------
# Reading the source
# --------------------------------------------------------------------------------------------------


def read(source: str, filename: str) -> Kernels:
    """Parse kernels.py's text; SyntaxError propagates (the worker reports it better)."""
    tree = ast.parse(source, filename=filename)
    found = Kernels(filename=filename, source=source)
    assignments: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _note_import(node, found.modules)
        elif isinstance(node, ast.Assign):
            # `A = B = value` and `A, B = value_a, value_b` bind constants too (red team 22)
            for name, value in _bound_names(node):
                assignments.pop(name, None)  # in source order, the later binding last
                assignments[name] = value
                found.functions.pop(name, None)  # a later binding hides an earlier kernel
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            assignments[node.target.id] = node.value
            found.functions.pop(node.target.id, None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assignments.pop(node.name, None)
            found.functions.pop(node.name, None)
            found.refused.pop(node.name, None)
            jit = _jit_decorator(node)
            if jit is None:
                continue
            options, problem = _literal_options(jit)
            if problem:
                found.refused[node.name] = problem
                continue
            plain = ast.FunctionDef(name=node.name, args=node.args, body=node.body, decorator_list=[],
                                    returns=node.returns, type_comment=None, **_positions(node))  # fmt: skip
            if sys.version_info >= (3, 12):
                plain.type_params = []
            found.functions[node.name] = plain
            found.jit_options[node.name] = options
        elif isinstance(node, ast.ClassDef):
            assignments.pop(node.name, None)
            found.functions.pop(node.name, None)
    # Constants: evaluated lazily, in source order, by the small evaluator below (never by Python).
    for name, expr in assignments.items():
        try:
            found.constants[name] = _evaluate(expr, {**found.modules, **found.constants})
        except NotAKernel as exc:
            aliased = expr.id if isinstance(expr, ast.Name) and expr.id in found.functions else ""
            found.unevaluated[name] = (f"{ALIAS} `{aliased}`, which the grader does not follow: call it by that name"
                                       if aliased else str(exc))  # fmt: skip
    return found


def _bound_names(node: ast.Assign) -> list[tuple[str, ast.expr]]:
    """The (name, value) pairs a top-level assignment binds that the constant reader follows: every plain name of a
    chained assignment, and the names of a tuple unpacked from a tuple of as many values."""
    pairs: list[tuple[str, ast.expr]] = []
    for target in node.targets:
        if isinstance(target, ast.Name):
            pairs.append((target.id, node.value))
        elif (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
              and len(target.elts) == len(node.value.elts) and all(isinstance(t, ast.Name) for t in target.elts)):
            pairs += [(t.id, v) for t, v in zip(target.elts, node.value.elts)]  # type: ignore[attr-defined]
    return pairs


def _positions(node: ast.AST) -> dict:
    return {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset") if hasattr(node, k)}


def _note_import(node: ast.stmt, modules: dict[str, Any]) -> None:
    """Bind the aliases kernels.py gives triton.language, its submodules and math (the only ones a kernel needs)."""
    import importlib

    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == "math" or alias.name == "triton" or alias.name.startswith("triton.language"):
                try:
                    module = importlib.import_module(alias.name)
                except ImportError:
                    continue
                if alias.asname:
                    modules[alias.asname] = module
                else:
                    top = alias.name.split(".")[0]
                    modules[top] = importlib.import_module(top)
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if not (node.module == "triton" or node.module.startswith("triton.language") or node.module == "math"):
            return
        try:
            module = importlib.import_module(node.module)
        except ImportError:
            return
        for alias in node.names:
            value = getattr(module, alias.name, None)
            if value is None:
                try:
                    value = importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    continue
            if _safe_object(value):
                modules[alias.asname or alias.name] = value


def _jit_decorator(node: ast.FunctionDef) -> ast.expr | None:
    """The `triton.jit` decorator of a function (others, autotune and heuristics, are dropped), or None."""
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if (isinstance(target, ast.Name) and target.id == "jit") or (isinstance(target, ast.Attribute) and target.attr == "jit"):
            return deco
    return None


def _literal_options(deco: ast.expr) -> tuple[dict[str, Any], str]:
    if not isinstance(deco, ast.Call):
        return {}, ""
    if deco.args:
        return {}, "its @triton.jit decorator takes positional arguments"
    options = {}
    for kw in deco.keywords:
        try:
            options[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            return {}, f"its @triton.jit argument `{kw.arg}` is not a literal"
    return options, ""


# --------------------------------------------------------------------------------------------------
# Constants: a small evaluator for numbers, strings, tuples and Triton dtypes
# --------------------------------------------------------------------------------------------------

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor,
}  # fmt: skip
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
                                            ast.Not: operator.not_}  # fmt: skip
_CONSTANT_CALLS = {"int": int, "float": float, "min": min, "max": max, "abs": abs, "round": round}


_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}  # fmt: skip


def _plain_number(value: Any) -> Any:
    """A constant's number, for a comparison: the value a tl.constexpr holds, else the value (numbers, strings)."""
    import triton.language as tl

    value = value.value if isinstance(value, tl.constexpr) else value
    if not isinstance(value, (int, float, str, bool)):
        raise NotAKernel("a comparison of values other than numbers and strings")
    return value


def _math_function(fn: Any) -> bool:
    """Whether `fn` is one of the math module's functions (which compute on numbers and nothing else)."""
    return callable(fn) and any(fn is f for f in vars(math).values())


def _evaluate(node: ast.expr, env: dict[str, Any]) -> Any:
    """The value of a constant expression; NotAKernel for anything else. No Python code is run."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, float, str, bool)) or node.value is None:
            return node.value
        raise NotAKernel("a constant of an unsupported type")
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(e, env) for e in node.elts)
    if isinstance(node, ast.Name):
        if node.id in env and _plain_value(env[node.id]):
            return env[node.id]
        raise NotAKernel(f"`{node.id}`")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_evaluate(node.operand, env)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, env), _evaluate(node.right, env)
        if isinstance(node.op, (ast.Pow, ast.LShift)) and isinstance(right, (int, float)) and abs(right) > 1024:
            raise NotAKernel("an exponent too large")
        if isinstance(node.op, ast.Mult) and any(isinstance(v, (str, tuple)) for v in (left, right)):
            count = right if isinstance(left, (str, tuple)) else left
            if not isinstance(count, int) or abs(count) > 1024:
                raise NotAKernel("a repetition too long")
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Attribute):
        value = _resolve_attribute(node, env)
        if _plain_value(value):
            return value
        raise NotAKernel(f"`{ast.unparse(node)}`")
    if isinstance(node, ast.IfExp):
        return _evaluate(node.body if _evaluate(node.test, env) else node.orelse, env)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left, result = _evaluate(node.left, env), True
        for op, right_node in zip(node.ops, node.comparators):
            right = _evaluate(right_node, env)
            result = result and bool(_COMPARE[type(op)](_plain_number(left), _plain_number(right)))
            left = right
        return result
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        value = _evaluate(node.value, env)
        if isinstance(value, tuple) and -len(value) <= node.slice.value < len(value):
            return value[node.slice.value]
        raise NotAKernel(f"`{ast.unparse(node)}`")
    if isinstance(node, ast.Call) and len(node.keywords) == 1 and node.keywords[0].arg == "value" and not node.args:
        node = ast.Call(func=node.func, args=[node.keywords[0].value], keywords=[])  # tl.constexpr(value=...)
    if isinstance(node, ast.Call) and not node.keywords:
        args = [_evaluate(a, env) for a in node.args]
        if isinstance(node.func, ast.Name) and node.func.id in _CONSTANT_CALLS and node.func.id not in env:
            return _checked(_CONSTANT_CALLS[node.func.id](*args))
        fn = None
        if isinstance(node.func, ast.Attribute):
            fn = _resolve_attribute(node.func, env)
        elif isinstance(node.func, ast.Name):  # imported by name: `from math import sqrt`, `from triton.language ...`
            fn = env.get(node.func.id)
        import triton.language as tl

        if fn is tl.constexpr and len(args) == 1:
            return tl.constexpr(args[0])
        if fn is not None and _math_function(fn):
            # computed before its size is checked: factorial(10**7) takes minutes
            if fn in (math.factorial, math.comb, math.perm) and any(isinstance(a, int) and abs(a) > 4096 for a in args):
                raise NotAKernel("a factorial too large")
            return _checked(fn(*args))
    raise NotAKernel(f"`{ast.unparse(node)}`")


def _checked(value: Any) -> Any:
    if isinstance(value, int) and abs(value) > 1 << 256:
        raise NotAKernel("an integer too large")
    if isinstance(value, str) and len(value) > 10_000:
        raise NotAKernel("a string too long")
    return value


def _plain_value(value: Any) -> bool:
    import triton.language as tl

    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, tuple):
        return all(_plain_value(v) for v in value)
    if isinstance(value, tl.constexpr):
        return _plain_value(value.value)
    return isinstance(value, tl.dtype)


def _resolve_attribute(node: ast.Attribute, env: dict[str, Any]) -> Any:
    """Follow `a.b.c` from a module alias; only into triton.language, its submodules and math."""
    chain: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        chain.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name) or current.id not in env:
        raise NotAKernel(f"`{ast.unparse(node)}`")
    value = env[current.id]
    for attr in reversed(chain):
        if attr.startswith("_") or not isinstance(value, types.ModuleType):
            raise NotAKernel(f"`{ast.unparse(node)}`")
        if value.__name__ == "triton" and attr not in ("language", "cdiv", "next_power_of_2"):
            raise NotAKernel(f"`{ast.unparse(node)}`")
        try:
            value = getattr(value, attr)
        except AttributeError:
            raise NotAKernel(f"`{ast.unparse(node)}`") from None
    if not _safe_object(value):
        raise NotAKernel(f"`{ast.unparse(node)}`")
    return value


def _safe_object(value: Any) -> bool:
    """Something a kernel may name: triton.language and its parts, math, a number, a Triton dtype.

    Of the language's callables only those the code generator treats as device code are taken: its builtins, its
    own @jit and constexpr functions, its classes, and the empty stubs a backend fills in (libdevice). Every other
    function of triton.language is host-side Python (`str_to_ty` evaluates a string with eval(); `dispatch`,
    `extern`, `builtin` build functions), and the code generator would call it like any Python function, in the
    trusted replayer."""
    import triton

    if isinstance(value, types.ModuleType):
        return value.__name__ == "triton" or value.__name__.startswith(_SAFE_MODULE_PREFIXES)
    if value is triton.cdiv or value is triton.next_power_of_2:
        return True
    if _plain_value(value):
        return True
    if isinstance(value, types.BuiltinFunctionType):
        return value in vars(math).values()
    if isinstance(value, _triton_function_types()):  # Triton's own @jit and constexpr functions (tl.sum, tl.zeros ...)
        module = getattr(value.fn, "__module__", None) or ""
        return module.startswith("triton.language") and not module.startswith(_HOST_MODULES)
    module = getattr(value, "__module__", None) or ""
    if not module.startswith("triton.language") or module.startswith(_HOST_MODULES):
        return False
    if getattr(value, "__triton_builtin__", False) or isinstance(value, type):
        return True
    return isinstance(value, types.FunctionType) and _empty_stub(value)


def _triton_function_types() -> tuple[type, ...]:
    """JITFunction, the interpreter's InterpretedFunction and ConstexprFunction, as this Triton has them."""
    import triton.runtime.jit as jit

    kinds = [jit.JITFunction] + [getattr(jit, "ConstexprFunction")] * hasattr(jit, "ConstexprFunction")
    try:
        from triton.runtime.interpreter import InterpretedFunction

        kinds.append(InterpretedFunction)
    except ImportError:
        pass
    return tuple(kinds)


# Modules of triton.language that are the code generator's own machinery, never named by a kernel.
_HOST_MODULES = ("triton.language.semantic",)


def _empty_stub(fn: types.FunctionType) -> bool:
    """A function whose body is only `...` or a docstring (libdevice's, which a backend replaces): it calls nothing."""
    import dis

    idle = {"RESUME", "NOP", "LOAD_CONST", "RETURN_CONST", "RETURN_VALUE", "CACHE", "POP_TOP"}
    return all(i.opname in idle for i in dis.get_instructions(fn))


# --------------------------------------------------------------------------------------------------
# Checking a kernel's body
# --------------------------------------------------------------------------------------------------


def _value_attributes() -> frozenset[str]:
    """Attributes a kernel may read on a Triton value (a tensor, a dtype, a descriptor, a constexpr)."""
    import triton.language as tl

    classes = [tl.tensor, tl.dtype, tl.pointer_type, tl.block_type, tl.constexpr]
    for name in ("tensor_descriptor", "tensor_descriptor_base", "tuple", "block_type"):
        cls = getattr(tl, name, None) or getattr(getattr(tl, "core", None), name, None)
        if isinstance(cls, type):
            classes.append(cls)
    names = {n for cls in classes for n in dir(cls) if not n.startswith("_")}
    names |= {"dtype", "shape", "numel", "type", "element_ty", "primitive_bitwidth", "value", "block_shape", "strides",
              "name", "T", "int_bitwidth", "fp_mantissa_width", "exponent_bias", "load", "store", "base"}  # fmt: skip
    return frozenset(names - {"handle", "to_ir", "codegen_name", "mangle", "cache_key_part"})


def check_function(fn: ast.FunctionDef, kernels: Kernels) -> None:
    """Raise NotAKernel when the body uses anything a Triton kernel cannot (see the module's docstring)."""
    allowed_attributes = _value_attributes()
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    if fn.args.vararg or fn.args.kwarg:
        raise NotAKernel("it takes *args or **kwargs")
    for arg in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
        if arg.annotation is not None:
            _check_annotation(arg.annotation, f"its parameter `{arg.arg}`", kernels)
    if fn.returns is not None:
        _check_annotation(fn.returns, "its return value", kernels)
    if getattr(fn, "type_params", None):
        raise NotAKernel("it has type parameters")
    for default in fn.args.defaults + [d for d in fn.args.kw_defaults if d is not None]:
        try:
            _evaluate(default, {**kernels.modules, **kernels.constants})
        except NotAKernel as exc:
            raise NotAKernel(f"a default value, {exc}, is not a constant") from None
    local = set(params)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    known = local | set(kernels.functions) | set(kernels.constants) | set(kernels.modules) | KERNEL_BUILTINS
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        kind = _REFUSED_NODES.get(type(node))
        if kind:
            raise NotAKernel(f"it uses {kind} (line {getattr(node, 'lineno', '?')})")
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in kernels.unevaluated and node.id not in local:
                why = kernels.unevaluated[node.id]
                if why.startswith(ALIAS):
                    raise NotAKernel(f"it uses `{node.id}` (line {node.lineno}), {why}")
                raise NotAKernel(
                    f"it uses `{node.id}` (line {node.lineno}), a top-level value the grader could not evaluate: it "
                    f"uses {why}. The grader reads constants from the source without running it; write this one with "
                    "numbers, `math` and `triton.language` only (as modules or names imported)"
                )
            if node.id not in known or (node.id.startswith("__") and node.id.endswith("__")):
                raise NotAKernel(
                    f"it uses `{node.id}` (line {node.lineno}), which is neither one of its arguments or variables, "
                    "another @triton.jit function of kernels.py, a constant (NAME = tl.constexpr(...)), nor part of "
                    "triton.language"
                )
            if node.id in kernels.refused:
                raise NotAKernel(f"it calls {node.id}, which cannot be replayed: {kernels.refused[node.id]}")
        elif isinstance(node, ast.Attribute):
            if not isinstance(node.ctx, ast.Load):
                raise NotAKernel(f"it assigns to an attribute (line {node.lineno})")
            if node.attr.startswith("_"):
                raise NotAKernel(f"it reads `{ast.unparse(node)}` (line {node.lineno})")
            root = _root_name(node)
            if root is not None and root in kernels.modules and root not in local:
                try:
                    _resolve_attribute(node, kernels.modules)
                except NotAKernel:
                    raise NotAKernel(f"it reads `{ast.unparse(node)}` (line {node.lineno}), which is not part of triton.language") from None
            elif node.attr not in allowed_attributes:
                raise NotAKernel(f"it reads `.{node.attr}` (line {node.lineno}), which is not an attribute of a Triton value")


# Plain Python types a parameter may be annotated with (Triton reads an annotation's text: "constexpr" in it marks
# a compile-time parameter, a type name like "i32" fixes the argument's type).
ANNOTATION_TYPES = frozenset({"int", "float", "bool", "str"})


def _check_annotation(node: ast.expr, what: str, kernels: Kernels) -> None:
    """An annotation is a name: a string, a plain type, or something of triton.language (tl.constexpr, tl.tensor,
    tl.int32). Triton's code generator evaluates a parameter's annotation expression, with its own builtins (getattr
    among them), when it compiles the kernel in the replayer: any other expression there would be Python the
    grader runs (a red team's annotation called exec())."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return
    if isinstance(node, ast.Name) and node.id in ANNOTATION_TYPES:
        return
    try:
        if isinstance(node, ast.Name) and node.id in kernels.modules and _safe_object(kernels.modules[node.id]):
            return
        if isinstance(node, ast.Attribute):
            _resolve_attribute(node, kernels.modules)  # a chain of modules' attributes only, into a safe object
            return
    except NotAKernel:
        pass
    raise NotAKernel(
        f"{what} is annotated with `{_short(ast.unparse(node))}`, which is not a type: annotate with "
        "tl.constexpr (or a type such as tl.int32), or not at all"
    )


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _root_name(node: ast.Attribute) -> str | None:
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        current = current.value
    return current.id if isinstance(current, ast.Name) else None


# --------------------------------------------------------------------------------------------------
# Building the functions
# --------------------------------------------------------------------------------------------------


def check(kernels: Kernels) -> None:
    """Move every function that fails check_function, or calls one that does, into kernels.refused."""
    for name, fn in list(kernels.functions.items()):
        if name in kernels.refused:
            continue
        try:
            check_function(fn, kernels)
        except NotAKernel as exc:
            kernels.refused[name] = str(exc)
    _refuse_callers(kernels)


def _refuse_callers(kernels: Kernels) -> None:
    changed = True
    while changed:  # a kernel that calls a refused one is refused too
        changed = False
        for name, fn in kernels.functions.items():
            if name in kernels.refused:
                continue
            called = sorted({n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} & set(kernels.refused))
            if called:
                kernels.refused[name] = f"it calls {called[0]}, which cannot be replayed: {kernels.refused[called[0]]}"
                changed = True


# Builtins of Triton's code generator that no kernel needs (the check refuses them in a kernel's text, and none of
# triton.language's own @jit functions uses one), and that reach any Python object: getattr(tl, "core") and on.
HOST_BUILTINS = ("getattr", "hasattr", "isinstance", "list")


def narrow_code_generator() -> None:
    """Take HOST_BUILTINS out of the code generator's namespace, for the rest of this process (the replayer's): should
    text the check never saw ever reach the code generator (two red teams' routes did, an annotation and a shifted
    line), it could not reach Python's objects from there."""
    from triton.compiler import code_generator

    namespace = getattr(code_generator.CodeGenerator, "builtin_namespace", None)
    if isinstance(namespace, dict):
        for name in HOST_BUILTINS:
            namespace.pop(name, None)


def _reads_back(fn: types.FunctionType, checked: ast.FunctionDef) -> bool:
    """Triton compiles (and its interpreter re-executes) a kernel from the text `inspect` finds for it, not from the
    function object: that text must be the function that was checked, or nothing of it is built."""
    import inspect
    import textwrap

    try:
        text = textwrap.dedent("".join(inspect.getsourcelines(fn)[0]))
        tree = ast.parse(text)
    except (OSError, SyntaxError, TypeError):
        tree = None
    found = tree.body[0] if tree is not None and len(tree.body) == 1 else None
    if isinstance(found, ast.FunctionDef):
        found.decorator_list = []
    return found is not None and ast.dump(found) == ast.dump(checked)


def build(kernels: Kernels, interpret: bool) -> dict[str, Any]:
    """name -> each checked function as Triton makes it: an InterpretedFunction under the interpreter, a
    JITFunction otherwise (also under the interpreter, for the compile check). Each call makes a namespace
    of its own, holding only the kernels, the constants and the module aliases."""
    import __future__
    import builtins

    from triton.runtime.jit import JITFunction

    good = {n: f for n, f in kernels.functions.items() if n not in kernels.refused}
    # Triton reads a kernel's source through linecache: it must read the text the grader read, not the file, and in
    # the parser's lines (str.splitlines also breaks at form feeds and U+2028, which would shift every line after one
    # and hand Triton another function's text than the one checked).
    lines = io.StringIO(kernels.source, newline="").readlines()
    linecache.cache[kernels.filename] = (len(kernels.source), None, lines, kernels.filename)
    namespace: dict[str, Any] = {"__name__": "kernels", **kernels.modules, **kernels.constants}
    # What a kernel may call (KERNEL_BUILTINS), and what a constant default may (_CONSTANT_CALLS).
    namespace["__builtins__"] = {k: getattr(builtins, k) for k in ("range", "len", "min", "max", "int", "float", "print",
                                                                    "abs", "round")}  # fmt: skip
    code = compile(ast.Module(body=list(good.values()), type_ignores=[]), kernels.filename, "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)  # fmt: skip
    exec(code, namespace)  # only def statements, whose defaults are checked constants and annotations strings
    unreadable = [name for name in good if not _reads_back(namespace[name], good[name])]
    if unreadable:
        for name in unreadable:
            kernels.refused[name] = "its source text does not read back as the function the grader checked"
        _refuse_callers(kernels)
        good = {n: f for n, f in good.items() if n not in kernels.refused}
        for name in kernels.refused:
            namespace.pop(name, None)
    wrapped: dict[str, Any] = {}
    for name in good:
        options = kernels.jit_options.get(name, {})
        if interpret:
            from triton.runtime.interpreter import InterpretedFunction

            wrapped[name] = InterpretedFunction(namespace[name], **options)
        else:
            wrapped[name] = JITFunction(namespace[name], **options)
    namespace.update(wrapped)  # a kernel calls the others through this namespace
    return wrapped
