"""The install is described once: pyproject.toml's pins, repeated by environment.yml, used by the README and CI."""

from __future__ import annotations

import re
import tomllib

from conftest import REPO_ROOT


def _pyproject_pins() -> dict[str, str]:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    deps = data["project"]["dependencies"] + data["project"]["optional-dependencies"]["dev"]
    return dict(d.split("==") for d in deps)


def _conda_pins() -> dict[str, str]:
    text = (REPO_ROOT / "environment.yml").read_text()
    return dict(re.findall(r"^\s+- ([\w.-]+)==([\w.+-]+)\s*$", text, flags=re.M))


def test_every_dependency_is_pinned_exactly() -> None:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    deps = data["project"]["dependencies"] + data["project"]["optional-dependencies"]["dev"]
    assert all("==" in d for d in deps), [d for d in deps if "==" not in d]


def test_environment_yml_repeats_the_pyproject_pins() -> None:
    assert _conda_pins() == _pyproject_pins()


def test_torch_and_triton_are_the_course_pair() -> None:
    pins = _pyproject_pins()
    assert (pins["torch"], pins["triton"]) == ("2.13.0", "3.7.1")


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make grade" in readme
    assert re.search(r"^\s*make test\b", ci, flags=re.M)
