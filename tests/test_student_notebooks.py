"""The student notebooks open cleanly: run top to bottom, only cells that use an unfinished exercise raise,
and they raise its NotImplementedError; every exercise's check says, in one sentence, that it is still open.
Each notebook runs the cells an exercise can reach (and the cells those need); the rest are the same as in
the instructor notebook, which nbval runs whole.

The instructor notebooks (solutions/notebooks/) run under nbval in CI with COURSE_STRICT_EXERCISES=1, so an
exercise check there that does not pass fails the run. The student notebooks are run here, in this process
(tests/notebook_runner.py): they differ from the instructor ones only in the exercises.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from notebook_runner import exercise_slice, run_notebook

from autograder.notebook_release import student_notebook
from course.exercises import STRICT_ENV, open_exercise

REPO_ROOT = Path(__file__).resolve().parent.parent
STUDENT_NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
TODO = re.compile(r"# TODO\((?P<id>[\w.]+)\)")


def exercises_in(path: Path) -> set[str]:
    return set(TODO.findall(path.read_text()))


@pytest.mark.slow
@pytest.mark.parametrize("path", STUDENT_NOTEBOOKS, ids=lambda p: p.stem)
def test_student_notebook_runs_and_every_check_says_its_exercise_is_open(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STRICT_ENV, "0")  # a student's check prints its sentence; it does not raise
    exercises = exercises_in(path)
    assert len(exercises) >= 2, f"{path.name} has {len(exercises)} exercises; every notebook has at least two"
    runs = run_notebook(path, only=exercise_slice(path))
    for run in runs:
        if run.error is not None:
            assert open_exercise(run.error) in exercises, (
                f"cell {run.id} of {path.name} raised {type(run.error).__name__}: {run.error}; only a cell that uses "
                "an unfinished exercise may raise, and only that exercise's NotImplementedError"
            )
    for exercise in sorted(exercises):
        said = [r.id for r in runs if f"{exercise} is not implemented yet" in r.output]
        assert said, f"no cell of {path.name} checks {exercise} and says it is not implemented yet"


def test_exercise_ids_are_unique_across_notebooks_and_name_their_module() -> None:
    seen: dict[str, str] = {}
    for path in STUDENT_NOTEBOOKS:
        for exercise in exercises_in(path):
            assert exercise.startswith(f"ex{path.stem[:2]}."), f"{exercise} in {path.name}: name it ex{path.stem[:2]}.<name>"
            assert exercise not in seen, f"{exercise} is in {seen.get(exercise)} and {path.name}"
            seen[exercise] = path.name


def test_notebooks_have_no_outputs_and_every_cell_has_an_id() -> None:
    import json

    for path in sorted((REPO_ROOT / "solutions" / "notebooks").glob("*.ipynb")) + STUDENT_NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        assert all(c.get("id") for c in cells), f"{path}: every cell needs an id"
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(not c["outputs"] and c["execution_count"] is None for c in code), f"{path}: clear the outputs before committing"


def test_a_solution_region_in_a_cell_becomes_an_exercise_and_outputs_are_dropped() -> None:
    nb = {"cells": [
        {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Title"]},
        {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": 3,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["7\n"]}],
         "source": ["def f(x):\n", "    ### BEGIN SOLUTION ex99.demo\n", "    #> Double it.\n", "    return 2 * x\n",
                    "    ### END SOLUTION\n"]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    out = student_notebook(nb, "demo.ipynb")
    cell = out["cells"][1]
    assert cell["outputs"] == [] and cell["execution_count"] is None and cell["id"] == "c"
    assert "".join(cell["source"]) == (
        "def f(x):\n    # TODO(ex99.demo)\n    #   Double it.\n"
        '    raise NotImplementedError("TODO(ex99.demo): not implemented yet; write it in this cell, then run the check below it")\n'
    )
    assert out["cells"][0] == nb["cells"][0]
