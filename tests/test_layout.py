"""The house's shape: every kernels.py in the same order, and a scripts/ folder the README accounts for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder.specs import SLUGS
from conftest import REPO_ROOT

# A section header is a comment line between two rules of dashes; its first word says which section.
HEADER = re.compile(r"^# -{20,}\n# (?P<title>[^\n]+)\n# -{20,}$", re.M)
ORDER = ["Kernels", "Configuration", "Launchers", "Autograd", "Custom", "Module"]
REQUIRED = {"Kernels", "Configuration", "Launchers", "Module"}


def section_order(source: str) -> list[str]:
    """The sections of a kernels.py in file order, by the first word of each header ('Kernels, 2: ...' is Kernels)."""
    words = [re.split(r"[\s,:]", m.group("title"), maxsplit=1)[0] for m in HEADER.finditer(source)]
    words = ["Launchers" if w == "Launcher" else w for w in words]
    return [w for i, w in enumerate(words) if i == 0 or w != words[i - 1]]


@pytest.mark.parametrize("slug", SLUGS)
def test_every_kernels_py_has_its_sections_in_the_house_order(slug: str) -> None:
    sections = section_order((REPO_ROOT / "solutions" / slug / "kernels.py").read_text())
    assert REQUIRED <= set(sections) and set(sections) <= set(ORDER), sections
    assert sections == sorted(sections, key=ORDER.index), f"sections out of order: {sections}"


def test_the_order_check_sees_a_misplaced_section() -> None:
    bar = "# " + "-" * 40
    source = "\n".join(f"{bar}\n# {t}\n{bar}\n" for t in ("Kernels, 1: a", "Kernels, 2: b", "Launcher", "Configuration"))
    assert section_order(source) == ["Kernels", "Launchers", "Configuration"]


def test_every_script_is_named_in_the_readme_and_says_what_it_is_for() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for path in sorted((REPO_ROOT / "scripts").iterdir()):
        assert path.name in readme, f"scripts/{path.name} is not in the README's layout section"
        head = path.read_text().splitlines()[:3]
        assert any(line.startswith(('"""', "# ")) and len(line) > 20 for line in head), f"scripts/{path.name}: no purpose line"


def missing_pieces(slug: str, root: Path = REPO_ROOT) -> list[str]:
    """What an assignment lacks of the files docs/adding-an-assignment.md lists."""
    wanted = [f"solutions/{slug}/{n}" for n in ("kernels.py", "configs.json", "README.md", "hints.toml")]
    wanted += [f"autograder/specs/{slug}.py", f"tests/test_grading_{slug}.py"]
    missing = [w for w in wanted if not (root / w).exists()]
    for folder, suffix in (("solutions/notebooks", "ipynb"), ("notebooks", "ipynb"), ("lectures", "md")):
        if not list((root / folder).glob(f"[0-9][0-9]_{slug}.{suffix}")):
            missing.append(f"{folder}/NN_{slug}.{suffix}")
    if not list((root / "tests" / "submissions" / slug).glob("wrong_*.py")):
        missing.append(f"tests/submissions/{slug}/wrong_*.py")
    return missing


@pytest.mark.parametrize("slug", SLUGS)
def test_every_assignment_has_its_files_its_place_in_the_syllabus_and_a_row_in_the_readme(slug: str) -> None:
    from autograder.specs import SYLLABUS

    assert missing_pieces(slug) == []
    assert slug in SYLLABUS, f"add {slug!r} to SYLLABUS in autograder/specs/__init__.py, at its place in the course"
    assert f"(assignments/{slug}/README.md)" in (REPO_ROOT / "README.md").read_text(), "add its row to the README's syllabus"
