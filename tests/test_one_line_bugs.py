"""Bugs students write, one line each, in an otherwise right solution: each fails the hostile cases drawn to
expose it (tests/submissions/<slug>/one_line_bugs.toml says which, and why). Each scored full marks on the
CPU tier before those cases existed; the grader now catches them on the tier Gradescope grades."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.grade import Selection, grade_assignment
from autograder.specs import SLUGS, load_spec
from conftest import SEED
from one_line_bugs import one_line_bugs, write_bug

BUGS = [(slug, name) for slug in SLUGS for name in one_line_bugs(slug)]
DEVICE = os.environ.get("AUTOGRADER_TEST_DEVICE", "cpu")  # cuda: the GPU tier's hostile cases too (gpu_run.sh, stage cheats)


@pytest.mark.slow
@pytest.mark.parametrize(("slug", "name"), BUGS, ids=[f"{s}-{n}" for s, n in BUGS])
def test_a_one_line_bug_fails_the_cases_drawn_for_it(slug: str, name: str, tmp_path: Path) -> None:
    bug = one_line_bugs(slug)[name]
    wanted = [key.split(" ", 1) for key in bug["fails"]]
    cpu = {(p.task, c.name) for p in load_spec(slug).parts for c in p.cases_for("cpu")}
    assert all((task, case) in cpu for task, case in wanted), f"[{name}] names a case the spec does not have"
    selection = Selection(tasks={t for t, _ in wanted}, names={c for _, c in wanted})
    result = grade_assignment(slug, write_bug(slug, name, tmp_path), "cpu", seed=SEED, timeout=60.0,
                              selection=selection)
    graded = {(c.task, c.name): c for c in result.cases if c.kind == "correctness"}
    for task, case in wanted:
        c = graded[(task, case)]
        assert c.status == "failed", (case, c.status, c.message)
        assert bug["says"] in c.message, c.message


@pytest.mark.slow
@pytest.mark.skipif(DEVICE != "cuda", reason="the GPU tier's cases: AUTOGRADER_TEST_DEVICE=cuda on a GPU")
@pytest.mark.parametrize(("slug", "name"), BUGS, ids=[f"{s}-{n}" for s, n in BUGS])
def test_a_one_line_bug_fails_a_hostile_case_of_the_gpu_tier(slug: str, name: str, tmp_path: Path) -> None:
    tasks = {key.split(" ", 1)[0] for key in one_line_bugs(slug)[name]["fails"]}
    result = grade_assignment(slug, write_bug(slug, name, tmp_path), "cuda", seed=SEED, selection=Selection(tasks=tasks, speed=False))
    hostile = [c for c in result.cases if c.kind == "correctness" and "dist=" in c.name]
    assert hostile and any(c.status != "passed" for c in hostile), [(c.name, c.status) for c in hostile]
