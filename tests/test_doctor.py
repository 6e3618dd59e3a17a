"""The install check runs a known kernel and says where kernels run."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO_ROOT


def test_doctor_reports_a_working_install() -> None:
    proc = subprocess.run([sys.executable, "-m", "autograder", "doctor"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Triton computed a known kernel (vector add) correctly" in proc.stdout
    assert ("No GPU" in proc.stdout) or ("GPU:" in proc.stdout)


def test_a_missing_triton_gets_a_sentence_not_a_traceback(tmp_path) -> None:
    # A Python where `import triton` fails: a sitecustomize that hides it.
    (tmp_path / "sitecustomize.py").write_text(
        "import sys, importlib.abc\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'triton' or name.startswith('triton.'):\n"
        "            raise ModuleNotFoundError(\"No module named 'triton'\", name='triton')\n"
        "sys.meta_path.insert(0, Hide())\n"
        "import importlib.metadata as m\n"
        "_v = m.version\n"
        "def version(name):\n"
        "    if name == 'triton':\n"
        "        raise m.PackageNotFoundError(name)\n"
        "    return _v(name)\n"
        "m.version = version\n"
    )
    env = {"PYTHONPATH": f"{tmp_path}:{REPO_ROOT}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "autograder", "doctor"], cwd=REPO_ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2
    assert "Triton is not installed" in proc.stdout and "make grade" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
