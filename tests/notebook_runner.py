"""Run a notebook's code cells in this process, one namespace, and record what each cell printed or raised.

A Jupyter kernel costs seconds to start per notebook; the student notebooks differ from the instructor ones
(which nbval runs) only in their exercise regions, so the course's tests run them here instead, in a
fraction of the time. Each cell's source is registered with linecache, as IPython does, so that Triton
can read the source of the kernels it defines.
"""

from __future__ import annotations

import contextlib
import io
import json
import linecache
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


def run_notebook(path: Path) -> list[CellRun]:
    """Execute the code cells of `path` top to bottom; a cell that raises is recorded and the run goes on."""
    nb = json.loads(Path(path).read_text())
    namespace: dict = {"__name__": "__main__"}
    runs = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
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
