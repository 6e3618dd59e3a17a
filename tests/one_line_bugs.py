"""Wrong submissions made from a reference solution by one edit each: tests/submissions/<slug>/one_line_bugs.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

from conftest import REPO_ROOT, SUBMISSIONS


def one_line_bugs(slug: str) -> dict[str, dict]:
    path = SUBMISSIONS / slug / "one_line_bugs.toml"
    return tomllib.loads(path.read_text()) if path.exists() else {}


def write_bug(slug: str, name: str, folder: Path) -> Path:
    """folder/<slug>/kernels.py: the solution with the bug's one line replaced."""
    bug = one_line_bugs(slug)[name]
    lines = (REPO_ROOT / "solutions" / slug / "kernels.py").read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip() == bug["solution"]]
    assert len(hits) == 1, (
        f"{slug}/one_line_bugs.toml [{name}]: the solution line `{bug['solution']}` occurs {len(hits)} times in "
        f"solutions/{slug}/kernels.py; update the bug to the solution's current code."
    )
    line = lines[hits[0]]
    lines[hits[0]] = line[: len(line) - len(line.lstrip())] + bug["wrong"] + "\n"
    path = folder / slug / "kernels.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
    return path
