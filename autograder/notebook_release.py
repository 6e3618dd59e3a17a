"""Write the student notebooks (notebooks/) from the instructor notebooks (solutions/notebooks/).

An instructor notebook marks each exercise's answer inside a code cell, as kernels.py does:

    def softmax_rows(x):
        ### BEGIN SOLUTION fusion.softmax_rows
        #> A hint line, kept in the student's cell as a comment.
        ...the answer...
        ### END SOLUTION

The student notebook has the same cells, ids and metadata, with each region replaced by
`# TODO(fusion.softmax_rows)`, the hints, and a NotImplementedError naming the exercise; every output and
execution count is dropped. The JSON is written in one canonical form (sorted keys, indent 1), so the same
instructor notebook always releases to the same bytes and `release --check` can compare them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autograder.stubs import ReleaseError, make_stub

REPO_ROOT = Path(__file__).resolve().parent.parent

INSTRUCTOR_DIR = Path("solutions") / "notebooks"
STUDENT_DIR = Path("notebooks")
TODO_WHERE = "write it in this cell, then run the check below it"


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def student_notebook(nb: dict[str, Any], filename: str) -> dict[str, Any]:
    """The student version of an instructor notebook: regions become exercises, outputs are dropped."""
    cells = []
    for i, cell in enumerate(nb.get("cells", [])):
        if not cell.get("id"):
            raise ReleaseError(f"{filename}: cell {i} has no id; save the notebook with nbformat 4.5 or later")
        out = {k: v for k, v in cell.items() if k not in ("outputs", "execution_count")}
        if cell.get("cell_type") == "code":
            out["source"] = _lines(make_stub(_source(cell), f"{filename} cell {cell['id']}", TODO_WHERE))
            out["outputs"] = []
            out["execution_count"] = None
        else:
            out["source"] = _lines(_source(cell))
        cells.append(out)
    return {**nb, "cells": cells}


def notebook_text(nb: dict[str, Any]) -> str:
    """The canonical bytes of a notebook: sorted keys, indent 1, as nbformat writes it."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def released_notebooks(root: Path = REPO_ROOT) -> dict[str, str]:
    """notebooks/<name>.ipynb -> its content, as the release makes it from solutions/notebooks/."""
    src = root / INSTRUCTOR_DIR
    out = {}
    for path in sorted(src.glob("*.ipynb")):
        nb = json.loads(path.read_text())
        out[str(STUDENT_DIR / path.name)] = notebook_text(student_notebook(nb, str(INSTRUCTOR_DIR / path.name)))
    return out


def release_notebooks(root: Path = REPO_ROOT, check: bool = False) -> list[str]:
    """Write notebooks/ (or, with check, only compare). Returns the paths that differ or were written."""
    wanted = released_notebooks(root)
    present = {str(p.relative_to(root)) for p in (root / STUDENT_DIR).glob("*.ipynb")}
    differing = []
    for rel, text in wanted.items():
        path = root / rel
        if not path.exists() or path.read_text() != text:
            differing.append(rel)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    for rel in sorted(present - set(wanted)):
        differing.append(rel)
        if not check:
            (root / rel).unlink()
    return differing
