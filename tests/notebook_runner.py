"""Run a notebook's code cells in this process, one namespace, and record what each cell printed or raised.

A Jupyter kernel costs seconds to start per notebook; the student notebooks differ from the instructor ones
(which nbval runs) only in their exercise regions, so the course's tests run them here instead, in a
fraction of the time. Each cell's source is registered with linecache, as IPython does, so that Triton
can read the source of the kernels it defines.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import linecache
import symtable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@dataclass
class CellRun:
    id: str
    source: str
    output: str  # what the cell printed
    error: BaseException | None


def _bound(node: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds (not its comprehensions' or functions' locals)."""
    table = symtable.symtable(ast.unparse(node), "<cell>", "exec")
    return {sym.get_name() for sym in table.get_symbols() if sym.is_assigned() or sym.is_imported() or sym.is_namespace()}


def _read(node: ast.AST) -> set[str]:
    """The module-level names a statement reads, in its own code or in the functions it defines."""
    names: set[str] = set()

    def walk(table: symtable.SymbolTable, top: bool) -> None:
        for sym in table.get_symbols():
            if sym.is_referenced() and (top or sym.is_global()):
                names.add(sym.get_name())
        for child in table.get_children():
            walk(child, False)

    walk(symtable.symtable(ast.unparse(node), "<cell>", "exec"), True)
    return names - set(dir(builtins))


def exercise_slice(path: Path, marker: str = "# TODO(") -> set[str]:
    """Ids of the code cells that an exercise can reach, and of the cells those need.

    An exercise cell taints the names it binds; a later statement that reads a tainted name taints the names
    it binds (a function that calls an exercise, a result computed with one), and its cell must run. Then
    every earlier cell that last binds a name a running cell reads must run too, and the first code cell
    (imports, seeds). The other cells are the same as in the instructor notebook, which nbval runs whole.
    """
    cells = [c for c in json.loads(Path(path).read_text())["cells"] if c["cell_type"] == "code"]
    trees = [ast.parse("".join(c["source"])).body for c in cells]
    needed = {0}
    tainted: set[str] = set()
    for i, body in enumerate(trees):
        exercise = marker in "".join(cells[i]["source"])
        for node in body:
            if exercise or _read(node) & tainted:
                needed.add(i)
                tainted |= _bound(node)
    bound = [set().union(*map(_bound, body)) if body else set() for body in trees]
    # A name the cell binds itself is taken to be bound before it is read (a cell that reads an earlier
    # cell's `x` and then rebinds it would fail here with a NameError, loudly).
    read = [(set().union(*map(_read, body)) - bound[i]) if body else set() for i, body in enumerate(trees)]
    pending = sorted(needed)
    while pending:  # backward: the latest earlier cell binding each name a running cell reads
        j = pending.pop()
        for name in read[j]:
            k = next((k for k in range(j - 1, -1, -1) if name in bound[k]), None)
            if k is not None and k not in needed:
                needed.add(k)
                pending.append(k)
    return {cells[i]["id"] for i in needed}


def run_notebook(path: Path, only: set[str] | None = None) -> list[CellRun]:
    """Execute the code cells of `path` top to bottom (those in `only`, when given); a cell that raises is
    recorded and the run goes on."""
    nb = json.loads(Path(path).read_text())
    namespace: dict = {"__name__": "__main__"}
    runs = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or (only is not None and cell["id"] not in only):
            continue
        source = "".join(cell["source"])
        filename = f"<{Path(path).stem} cell {cell['id']}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        out = io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(source, filename, "exec"), namespace)  # noqa: S102  (the course's own notebooks)
        except Exception as exc:  # noqa: BLE001  (recorded: the test decides which cells may raise)
            error = exc
        finally:
            plt.close("all")
        runs.append(CellRun(cell["id"], source, out.getvalue(), error))
    return runs
