"""The Gradescope bundle: built from the repo, run as Gradescope runs it, on a submission laid out as it lays it out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.gradescope import CPU_NOTE, build_bundle, find_submission
from conftest import REPO_ROOT, SUBMISSIONS


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bundle(["rmsnorm"], tmp_path_factory.mktemp("dist") / "autograder.zip")


def test_the_bundle_holds_the_grader_and_not_the_solutions(bundle: Path) -> None:
    names = zipfile.ZipFile(bundle).namelist()
    assert {"setup.sh", "run_autograder", "pyproject.toml", "autograder/grade.py", "autograder/specs/rmsnorm.py"} <= set(names)
    assert not [n for n in names if n.startswith(("solutions/", "tests/", "notebooks/"))]
    # of assignments/, only the launch settings that a kernels.py uploaded on its own falls back on
    assert [n for n in names if n.startswith("assignments/")] == ["assignments/rmsnorm/configs.json"]
    setup = zipfile.ZipFile(bundle).read("setup.sh").decode()
    assert "torch==2.13.0" in setup and "triton==3.7.1" in setup


def test_the_same_sources_give_the_same_bundle(bundle: Path, tmp_path: Path) -> None:
    again = build_bundle(["rmsnorm"], tmp_path / "again.zip")
    assert again.read_bytes() == bundle.read_bytes()


def _run_autograder(bundle: Path, root: Path) -> dict:
    source = root / "source"
    zipfile.ZipFile(bundle).extractall(source)
    (root / "results").mkdir()
    script = source / "run_autograder"
    script.chmod(0o755)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads((root / "results" / "results.json").read_text())


@pytest.mark.slow
def test_run_autograder_grades_a_gradescope_submission_on_the_cpu_tier(bundle: Path, tmp_path: Path) -> None:
    # Gradescope puts the student's upload in /autograder/submission; a zip of their rmsnorm/ folder lands as is.
    (tmp_path / "submission" / "rmsnorm").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py", tmp_path / "submission" / "rmsnorm" / "kernels.py")
    results = _run_autograder(bundle, tmp_path)
    assert CPU_NOTE in results["output"]
    correctness = [t for t in results["tests"] if "speed" not in t["tags"]]
    assert correctness and all(t["status"] == "passed" for t in correctness)
    # Each test's points are rounded to 4 decimals (autograder/report.py): their sum may be off by 1e-4 a test.
    tests = results["tests"]
    assert results["score"] == pytest.approx(sum(t["max_score"] for t in tests), abs=1e-4 * len(tests))
    assert results["score"] == pytest.approx(95.0)  # 60 forward + 20 bonus backward + 15 bonus linear on the CPU tier


@pytest.mark.slow
def test_run_autograder_explains_an_upload_without_kernels(bundle: Path, tmp_path: Path) -> None:
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "notes.txt").write_text("forgot the code")
    results = _run_autograder(bundle, tmp_path)
    assert results["score"] == 0
    assert "No rmsnorm/kernels.py was found" in results["tests"][0]["output"]


def test_a_lone_kernels_py_is_taken_when_one_assignment_is_graded(tmp_path: Path) -> None:
    (tmp_path / "kernels.py").write_text("")
    assert find_submission(tmp_path, ["rmsnorm"]) == {"rmsnorm": tmp_path / "kernels.py"}
    assert find_submission(tmp_path, ["rmsnorm", "rope"]) == {}
