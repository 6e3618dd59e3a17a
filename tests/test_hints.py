"""Hints are opt-in: the stubs keep the contract and a first hint, the recipe is a ladder the student asks
for one level at a time, and every level asked for is recorded and listed in the grade."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from autograder import hints
from autograder.cli import main
from autograder.release import release, released_files
from autograder.report import gradescope_json
from autograder.specs import SLUGS

REGION = re.compile(r"### BEGIN SOLUTION (?P<task>[\w.]+)\n(?P<hints>(?:\s*#>.*\n)*)")


@pytest.mark.parametrize("slug", SLUGS)
def test_every_graded_task_has_a_ladder_released_encoded(slug: str, repo_root: Path) -> None:
    source = (repo_root / "solutions" / slug / hints.SOURCE).read_text()
    ladders = hints.parse_source(source)
    tasks = {m.group("task") for m in REGION.finditer((repo_root / "solutions" / slug / "kernels.py").read_text())}
    assert tasks <= set(ladders), f"tasks without a hint ladder: {tasks - set(ladders)}"
    assert all(len(levels) >= 2 for levels in ladders.values())
    released = released_files(slug)[hints.RELEASED]
    assert hints.decode(released) == ladders
    assert not any(line in released for levels in ladders.values() for level in levels for line in level.splitlines()
                   if len(line) > 20)  # nothing readable by accident


@pytest.mark.parametrize("slug", SLUGS)
def test_stub_hints_stay_short_and_point_to_the_ladder(slug: str, repo_root: Path) -> None:
    text = (repo_root / "solutions" / slug / "kernels.py").read_text()
    regions = list(REGION.finditer(text))
    assert regions
    for m in regions:
        n_lines = len(m.group("hints").splitlines())
        assert 1 <= n_lines <= 5, f"{m.group('task')}: {n_lines} hint lines in a stub; move the recipe to hints.toml"
    assert any("python -m autograder hint" in m.group("hints") for m in regions)


def test_hint_command_shows_the_next_level_and_records_each(tmp_path: Path, repo_root: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "fusion"
    shutil.copytree(repo_root / "assignments" / "fusion", folder)
    levels = hints.ladders(folder)["fusion.gelu"]
    assert main(["hint", "fusion.gelu", "--submission", str(folder)]) == 0
    assert "Hint 1 of" in capsys.readouterr().out
    assert main(["hint", "fusion.gelu", "--submission", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "Hint 2 of" in out and levels[1].splitlines()[0] in out
    assert main(["hint", "fusion.softmax", "--level", "3", "--submission", str(folder)]) == 0
    assert json.loads((folder / hints.LOG).read_text()) == {"fusion.gelu": [1, 2], "fusion.softmax": [3]}
    assert main(["hint", "fusion.gelu", "--level", "9", "--submission", str(folder)]) == 2
    assert main(["hint", "fusion.nothing", "--submission", str(folder)]) == 2
    assert "no hints for fusion.nothing" in capsys.readouterr().out


def test_the_grade_json_lists_the_hints_used() -> None:
    data = gradescope_json([], "header", {"fusion.gelu": [1, 2]})
    assert data["extra_data"]["hints_used"] == {"fusion.gelu": [1, 2]}
    assert "Hints used: fusion.gelu levels 1, 2." in data["output"]
    assert "Hints used" not in gradescope_json([], "header")["output"]


def test_release_check_ignores_the_students_hint_record(tmp_path: Path, repo_root: Path) -> None:
    for top in ("solutions", "assignments"):
        shutil.copytree(repo_root / top / "fusion", tmp_path / top / "fusion")
    (tmp_path / "assignments" / "fusion" / hints.LOG).write_text('{"fusion.gelu": [1]}\n')
    assert release(["fusion"], root=tmp_path, check=True, notebooks=False) == []
    release(["fusion"], root=tmp_path, notebooks=False)
    assert (tmp_path / "assignments" / "fusion" / hints.LOG).exists()


def test_a_hint_log_cannot_write_on_the_terminal(tmp_path: Path) -> None:
    """hints_used.json lies beside the submission and its task names are the student's to write: red team 14's cleared
    the screen and printed a forged green score under the report. Names are shown on one line, written out."""
    import json

    from autograder.hints import describe, used

    forged = "\x1b[2J\x1b[H\x1b[1;32mrmsnorm: 100/100 points\x1b[0m\n[bold]x[/bold]"
    (tmp_path / "hints_used.json").write_text(json.dumps({forged: [1], **{f"t{i}": [1] for i in range(100)}}))
    line = describe(used(tmp_path))
    assert "\x1b" not in line and "\n" not in line
    assert "\\x1b[2J\\x1b[H" in line and "and 61 more" in line


@pytest.mark.parametrize("log", ["infinity", "nested", "not_a_dict", "link", "pipe", "huge"])
def test_a_hint_log_the_student_wrote_reads_as_unreadable_and_never_stops_a_grade(tmp_path: Path, log: str) -> None:
    """Red team 15: `{"x": [Infinity]}` raised OverflowError in Gradescope's entry, which then wrote no results.json.
    Whatever hints_used.json holds or is, it reads as a log or as unreadable."""
    path = tmp_path / hints.LOG
    if log == "infinity":
        path.write_text('{"rmsnorm.forward": [Infinity]}')
    elif log == "nested":
        path.write_text("[" * 100_000 + "]" * 100_000)  # past json's recursion limit
    elif log == "not_a_dict":
        path.write_text('["rmsnorm.forward"]')
    elif log == "link":
        path.symlink_to("/proc/self/mem")  # read whole, an I/O error
    elif log == "pipe":
        os.mkfifo(path)  # read, a wait for a writer that never comes
    else:
        with path.open("wb") as fh:
            fh.truncate(4 << 30)
    assert hints.used(tmp_path) == {hints.UNREADABLE: []}
    assert "unreadable" in hints.describe(hints.used(tmp_path))


def test_gradescope_writes_its_results_whatever_the_hint_log_holds(tmp_path: Path) -> None:
    from autograder.gradescope import run_autograder

    folder = tmp_path / "submission" / "rmsnorm"
    folder.mkdir(parents=True)
    (folder / "kernels.py").write_text("raise ImportError('not yet')\n")
    (folder / hints.LOG).write_text('{"rmsnorm.forward": [Infinity]}')
    assert run_autograder(tmp_path, ["rmsnorm"]) == 0
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["score"] == 0 and "unreadable" in json.dumps(results)
