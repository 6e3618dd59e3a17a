"""The install is described once: pyproject.toml's pins, repeated by environment.yml, used by the README and CI."""

from __future__ import annotations

import re
import tomllib

from conftest import REPO_ROOT


def _pyproject_deps() -> list[str]:
    """The dependencies and every optional extra (dev, hf ...): environment.yml installs them all."""
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    return data["project"]["dependencies"] + [d for extra in data["project"]["optional-dependencies"].values() for d in extra]


def _pyproject_pins() -> dict[str, str]:
    return dict(d.split("==") for d in _pyproject_deps())


def _conda_pins() -> dict[str, str]:
    text = (REPO_ROOT / "environment.yml").read_text()
    return dict(re.findall(r"^\s+- ([\w.-]+)==([\w.+-]+)\s*$", text, flags=re.M))


def test_every_dependency_is_pinned_exactly() -> None:
    deps = _pyproject_deps()
    assert all("==" in d for d in deps), [d for d in deps if "==" not in d]


def test_transformers_is_an_optional_extra_and_its_pin_is_the_one_the_code_names() -> None:
    from course import hf_patch

    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert not any(d.startswith("transformers") for d in data["project"]["dependencies"])
    assert data["project"]["optional-dependencies"]["hf"] == [f"transformers=={hf_patch.PINNED}"]


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
