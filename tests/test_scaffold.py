"""`python -m autograder new SLUG` in a copy of the repo: the released stub scores nothing, the template it
writes scores full points, and its files have every piece the layout tests ask for."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.scaffold import KERNELS, adaptor_line, custom_ops_line, scaffold
from conftest import REPO_ROOT
from test_layout import ORDER, missing_pieces, section_order

GRADE_ALL = """
import importlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import autograder.specs
from autograder.cli import main
from autograder.grade import grade_assignment

assert main(["new", "scale_shift"]) == 0
importlib.reload(autograder.specs)  # the slugs were listed before the new spec existed
files = ["solutions/scale_shift/kernels.py", "assignments/scale_shift/kernels.py"]
with ThreadPoolExecutor(2) as pool:  # each grading runs its own worker process, so they overlap
    results = list(pool.map(lambda f: grade_assignment("scale_shift", Path(f).resolve(), "cpu", seed=1, timeout=120.0), files))
notebook = json.loads(next(Path("notebooks").glob("*_scale_shift.ipynb")).read_text())
namespace = {}
for cell in notebook["cells"]:  # top to bottom, on the CPU, with the stub in assignments/
    if cell["cell_type"] == "code":
        exec("".join(cell["source"]), namespace)
print(json.dumps([[r.score(False), r.max_score(False)] for r in results]))
"""


@pytest.mark.slow
def test_a_new_assignment_grades_its_stub_zero_and_its_template_full(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for package in ("autograder", "course"):
        shutil.copytree(REPO_ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    # the student notebook runs as a student's would: an open exercise's check says so, and does not raise
    env = {**os.environ, "PYTHONPATH": str(root), "TRITON_INTERPRET": "1", "COURSE_STRICT_EXERCISES": "0"}
    proc = subprocess.run([sys.executable, "-c", GRADE_ALL], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (solution, max_points), (stub, _) = json.loads(proc.stdout.strip().splitlines()[-1])
    assert max_points == 60 and solution == 60 and stub == 0
    assert "next, to make scale_shift a course assignment" in proc.stdout.lower()
    assert "Next: fill in scale_shift.forward in assignments/scale_shift/kernels.py." in proc.stdout  # the notebook ran
    assert proc.stdout.count("is not implemented yet") >= 2  # its two placeholder exercises, each checked
    assert missing_pieces("scale_shift", root) == []
    sections = section_order((root / "solutions" / "scale_shift" / "kernels.py").read_text())
    assert sections == sorted(sections, key=ORDER.index) and {"Kernels", "Configuration", "Launchers", "Module"} <= set(sections)
    notebook = json.loads(next((root / "notebooks").glob("*_scale_shift.ipynb")).read_text())
    assert all(c.get("id") for c in notebook["cells"]) and not any(c.get("outputs") for c in notebook["cells"])


def test_new_refuses_a_bad_slug_and_one_that_is_taken(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lower-case letters"):
        scaffold("Scale-Shift", tmp_path)
    (tmp_path / "assignments" / "rmsnorm").mkdir(parents=True)
    with pytest.raises(ValueError, match="`rmsnorm` is taken"):
        scaffold("rmsnorm", tmp_path)


def test_the_adaptor_line_is_one_python_call_naming_the_slug_and_a_cpu_case() -> None:
    call = ast.parse(adaptor_line("scale_shift"), mode="exec").body[0].value.elts[0]
    assert call.func.id == "Adaptor" and [a.value for a in call.args[:2]] == ["scale_shift", "(3x100) float32"]


def test_the_custom_ops_line_names_the_slug_and_the_templates_op() -> None:
    entry = ast.parse(custom_ops_line("scale_shift"), mode="exec").body[0].value.elts[0]
    slug, op = (e.value for e in entry.elts[:2])
    assert slug == "scale_shift" and f"def {op}(" in KERNELS.substitute(slug="scale_shift", nn="99")
