"""Systematic one-edit mutations of a solution's graded regions, for mutation testing of the grader.

A mutant is the solution with one expression changed the way a student's kernel goes wrong: a comparison
flipped, a bound off by one, a mask dropped, operands swapped, a constant or an initial value wrong, a
factor or a term left out, an accumulation that overwrites, // and % confused. Only code between
`### BEGIN SOLUTION` and `### END SOLUTION` is mutated (what students write), and none that coverage
excludes with `# pragma: no cover` (GPU-only paths, which the CPU tier cannot run).

Each mutant has an id that names its function, its operator and the text it changes, so that it stays
the same while unrelated lines move: `_attn_fwd_inner | compare | offs_n[:, None] < seqlen_k -> ... | 1`
(the last field counts identical edits within the function). Nothing here imports torch or triton.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from autograder.release import BEGIN, END

PRAGMA = re.compile(r"#\s*pragma:\s*no cover")

# Comparisons and their off-by-one neighbours: the operator flipped (one more or one fewer element), and
# the bound moved the other way.
FLIPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
BOUND_SHIFT = {ast.Lt: -1, ast.LtE: +1, ast.Gt: +1, ast.GtE: -1}
SWAPPABLE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)
MIN_MAX = {"maximum": "minimum", "minimum": "maximum", "max": "min", "min": "max"}
# Calls whose arguments are compile-time shapes: changing them only makes a kernel that does not compile.
SHAPE_CALLS = {"arange": None, "zeros": 0, "full": 0, "reshape": 1, "static_range": None}

OPERATORS = {
    "compare": "comparison flipped (< and <=, > and >=, == and !=)",
    "bound": "a comparison's bound off by one",
    "range": "a loop's end off by one",
    "mask": "a mask dropped (mask= of a load or store, a condition of &, the condition of tl.where)",
    "other": "the `other` of a masked load dropped",
    "swap": "operands of a non-commutative operation swapped",
    "constant": "a constant or initial value changed (0 and 1 exchanged, others and infinities to 0)",
    "init": "an accumulator initialised to ones instead of zeros",
    "factor": "a factor or divisor dropped (a rescale or a scale left out)",
    "term": "a term of a sum or difference dropped",
    "accumulate": "an accumulation (+=) that overwrites instead",
    "divmod": "// and % exchanged",
    "minmax": "maximum and minimum exchanged",
}


@dataclass(frozen=True)
class Mutant:
    id: str  # function | operator | original -> replacement | n
    operator: str
    function: str
    task: str  # the graded region's task, e.g. "flash_attention.forward"
    line: int  # where the edit starts (1-based), in the solution it was made from
    original: str
    replacement: str
    start: int  # character offsets of the edited span in the solution's text
    end: int
    scope: tuple[int, int]  # character offsets of the function the edit is in

    def apply(self, source: str) -> str:
        """The mutated source: `source` must be the text the mutant was generated from."""
        return source[: self.start] + self.replacement + source[self.end :]

    def digest(self, source: str) -> str:
        """A hash of the mutated function: it changes with the mutant's own code, not with lines elsewhere."""
        lo, hi = self.scope
        return hashlib.sha256((source[lo : self.start] + self.replacement + source[self.end : hi]).encode()).hexdigest()[:16]


def graded_lines(source: str) -> dict[int, str]:
    """Line number (1-based) -> task, for every line inside a BEGIN/END SOLUTION region."""
    lines, task, out = source.splitlines(), None, {}
    for i, line in enumerate(lines, 1):
        begin = BEGIN.match(line)
        if begin:
            task = begin.group("task")
        elif END.match(line):
            task = None
        elif task:
            out[i] = task
    return out


def excluded_lines(source: str, tree: ast.Module | None = None) -> set[int]:
    """Lines coverage leaves out: a `# pragma: no cover` line and, when it opens a block, the block (a
    function or class with its decorators; an `if`, loop or `except` with its body, not its `else`)."""
    tree = tree or ast.parse(source)
    marked = {i for i, line in enumerate(source.splitlines(), 1) if PRAGMA.search(line)}
    out = set(marked)

    def block(first: int, body: list[ast.stmt]) -> None:
        out.update(range(first, (body[-1].end_lineno or body[-1].lineno) + 1))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if any(line in marked for line in range(first, node.lineno + 1)):
                block(first, node.body)
        elif isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.ExceptHandler)) and node.lineno in marked:
            block(node.lineno, node.body)
        elif isinstance(node, ast.stmt) and node.lineno in marked:
            out.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        orelse = getattr(node, "orelse", None)
        if isinstance(node, (ast.If, ast.For, ast.While, ast.Try)) and orelse and not isinstance(orelse[0], ast.If):
            if orelse[0].lineno - 1 in marked:  # a pragma on the `else:` line
                block(orelse[0].lineno - 1, orelse)
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute):
            return f.attr
        if isinstance(f, ast.Name):
            return f.id
    return ""


def _is_infinity(node: ast.AST) -> bool:
    """float("inf"), float("-inf"), -float("inf")."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return (isinstance(node, ast.Call) and _call_name(node) == "float" and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).lstrip("+-") == "inf")


class _Offsets:
    """Character offsets of (line, column) positions in a source text."""

    def __init__(self, source: str) -> None:
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.source = source

    def span(self, node: ast.AST) -> tuple[int, int]:
        # ast columns count UTF-8 bytes; the solutions are ASCII inside their regions
        return self.starts[node.lineno - 1] + node.col_offset, self.starts[node.end_lineno - 1] + node.end_col_offset

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]


def _edits(node: ast.AST, text) -> Iterator[tuple[str, ast.AST, str]]:
    """(operator, node to replace, replacement text) for every mutation of one node."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = type(node.ops[0])
        left, right = text(node.left), text(node.comparators[0])
        if op in FLIPS:
            sym = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
            yield "compare", node, f"{left} {sym[FLIPS[op]]} {right}"
            if op in BOUND_SHIFT:
                shift = " + 1" if BOUND_SHIFT[op] > 0 else " - 1"
                yield "bound", node, f"{left} {sym[op]} ({right}){shift}"
    elif isinstance(node, ast.BinOp):
        left, right = text(node.left), text(node.right)
        sym = _BINOP_SYMBOLS.get(type(node.op))
        if isinstance(node.op, SWAPPABLE):
            yield "swap", node, f"({right}) {sym} ({left})"
        if isinstance(node.op, ast.Mult):
            yield "factor", node, left
            yield "factor", node, right
        if isinstance(node.op, ast.Div):
            yield "factor", node, left
        if isinstance(node.op, ast.Add):
            yield "term", node, left
            yield "term", node, right
        if isinstance(node.op, ast.Sub):
            yield "term", node, left
        if isinstance(node.op, ast.FloorDiv):
            yield "divmod", node, f"{left} % {right}"
        if isinstance(node.op, ast.Mod):
            yield "divmod", node, f"{left} // {right}"
        if isinstance(node.op, ast.BitAnd):
            yield "mask", node, left
            yield "mask", node, right
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        yield "accumulate", node, f"{text(node.target)} = {text(node.value)}"
    elif isinstance(node, ast.Call):
        name = _call_name(node)
        if name == "range":  # range(...) and tl.range(...)
            if len(node.args) >= 2:
                stop = node.args[1]
                yield "range", stop, f"({text(stop)}) + 1"
                yield "range", stop, f"({text(stop)}) - 1"
            elif len(node.args) == 1:
                yield "range", node.args[0], f"({text(node.args[0])}) + 1"
                yield "range", node.args[0], f"({text(node.args[0])}) - 1"
        if name in ("load", "store"):
            kws = {k.arg: k for k in node.keywords}
            if "mask" in kws:
                kept = [text(a) for a in node.args] + [
                    f"{k.arg}={text(k.value)}" for k in node.keywords if k.arg not in ("mask", "other")
                ]
                yield "mask", node, f"{text(node.func)}({', '.join(kept)})"
            if "other" in kws:
                kept = [text(a) for a in node.args] + [f"{k.arg}={text(k.value)}" for k in node.keywords if k.arg != "other"]
                yield "other", node, f"{text(node.func)}({', '.join(kept)})"
        if name == "where" and len(node.args) == 3:
            cond, a, b = (text(x) for x in node.args)
            yield "mask", node, a
            yield "swap", node, f"{text(node.func)}({cond}, {b}, {a})"
        if name in MIN_MAX and isinstance(node.func, ast.Attribute):
            swapped = text(node.func)[: -len(name)] + MIN_MAX[name]
            yield "minmax", node.func, swapped
        if name == "zeros" and isinstance(node.func, ast.Attribute) and node.args:
            rest = [text(a) for a in node.args[1:]] + [f"{k.arg}={text(k.value)}" for k in node.keywords]
            full = text(node.func)[: -len("zeros")] + "full"
            yield "init", node, f"{full}({', '.join([text(node.args[0]), '1.0', *rest])})"
    if _is_infinity(node):
        yield "constant", node, "0.0"
    elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        v = node.value
        new = {0: 1, 1: 0}.get(v, 0) if isinstance(v, int) else {0.0: 1.0, 1.0: 0.0}.get(v, 0.0)
        yield "constant", node, repr(new)


_BINOP_SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
    ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.MatMult: "@",
}  # fmt: skip


def _shape_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside compile-time shape arguments (tl.arange's bounds, tl.zeros' shape ...)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        name = _call_name(node)
        if name in SHAPE_CALLS and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            which = SHAPE_CALLS[name]
            args = node.args if which is None else node.args[which : which + 1]
            for arg in args:
                out.update(id(n) for n in ast.walk(arg))
    return out


def _is_infinity_part(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """The pieces of float("-inf") are not mutated on their own (the whole is)."""
    parent = parents.get(id(node))
    while parent is not None:
        if _is_infinity(parent):
            return True
        parent = parents.get(id(parent))
    return False


def mutants(source: str) -> list[Mutant]:
    """Every mutant of the graded regions of `source`, in source order, without duplicates."""
    tree = ast.parse(source)
    graded = graded_lines(source)
    skipped = excluded_lines(source, tree)
    offsets = _Offsets(source)
    shapes = _shape_nodes(tree)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def function_of(line: int) -> tuple[str, tuple[int, int]]:
        inside = [f for f in functions if f.lineno <= line <= (f.end_lineno or f.lineno)]
        if not inside:
            return "<module>", (0, len(source))
        f = min(inside, key=lambda f: (f.end_lineno or 0) - f.lineno)
        return f.name, offsets.span(f)

    found: list[tuple[int, int, Mutant]] = []
    seen: set[str] = set()
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or id(node) in shapes or _is_infinity_part(node, parents):
            continue
        if node.lineno not in graded or any(line in skipped for line in range(node.lineno, node.end_lineno + 1)):
            continue
        for operator, target, replacement in _edits(node, offsets.text):
            start, end = offsets.span(target)
            original = source[start:end]
            if _squash(original) == _squash(replacement):
                continue
            mutated = source[:start] + replacement + source[end:]
            key = hashlib.sha256(mutated.encode()).hexdigest()
            if key in seen:
                continue
            seen.add(key)
            function, scope = function_of(target.lineno)
            stem = f"{function} | {operator} | {_squash(original)} -> {_squash(replacement)}"
            counts[stem] = counts.get(stem, 0) + 1
            mutant = Mutant(f"{stem} | {counts[stem]}", operator, function, graded[target.lineno], target.lineno,
                            original, replacement, start, end, scope)  # fmt: skip
            found.append((start, end, mutant))
    # ast.walk is breadth-first: number duplicates in source order instead, so ids do not depend on nesting
    found.sort(key=lambda t: (t[0], -t[1], t[2].operator, t[2].replacement))
    counts.clear()
    ordered = []
    for _, _, m in found:
        stem = m.id.rsplit(" | ", 1)[0]
        counts[stem] = counts.get(stem, 0) + 1
        ordered.append(Mutant(f"{stem} | {counts[stem]}", m.operator, m.function, m.task, m.line, m.original,
                              m.replacement, m.start, m.end, m.scope))  # fmt: skip
    return ordered
