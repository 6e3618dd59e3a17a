"""Every branch of every solution runs on the CPU tier: a kernel path no graded case reaches is a path a
student's bug can hide in.

Each assignment's CPU-tier cases run in this process (the spec's inputs, its call, the solution; no
worker), under coverage.py with branch measurement of solutions/<slug>/kernels.py, until everything
has run. Under the Triton
interpreter the kernels run as Python, so coverage sees their lines and their constexpr branches too
(GEMV or dot, split-K or not, one tile or a loop, the causal diagonal ...). The test fails naming each
line and each branch no case reaches. Left out, each with a `# pragma: no cover - reason` beside it:
code only a GPU runs (TMA, the tuned launch settings, 16-bit paths, padding) and paths no graded case
can take (an empty input launches nothing). Argument checks that raise are left out here as well:
tests/test_wrappers*.py call them.
"""

from __future__ import annotations

import ast
import itertools
import os
import re

import coverage
import pytest
import torch

from autograder.spec import generator
from autograder.specs import SLUGS, load_spec
from conftest import REPO_ROOT, SEED

ARGUMENT_CHECKS = r"^\s*raise (ValueError|TypeError)\("  # the wrappers' input checks
PRAGMA = re.compile(r"#\s*pragma:\s*no cover")
REASON = re.compile(r"#\s*pragma:\s*no (cover|branch) - \S.{5,}")


def _jit_exit_arcs(path: str) -> dict[int, int]:
    """-(def line) -> -(first decorator line) for each @triton.jit function.

    The interpreter compiles a kernel again from its `def` line on, so the exits it records name the
    def line, where coverage's static analysis expects the first decorator's.
    """
    tree = ast.parse(open(path).read())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.decorator_list:
            if any("jit" in ast.unparse(d) for d in node.decorator_list):
                out[-node.lineno] = -min(d.lineno for d in node.decorator_list)
    return out


def _missing(cov: coverage.Coverage, path: str, remap: dict[int, int]) -> tuple[list[str], list[str]]:
    """(lines never run, branches never taken) so far."""
    data = cov.get_data()
    data.add_arcs({path: {(a, remap.get(b, b)) for a, b in data.arcs(path) or ()}})
    analysis = cov._analyze(path)
    source = open(path).read().splitlines()
    lines = [f"line {n}: {source[n - 1].strip()}" for n in sorted(analysis.statements - analysis.executed)]
    branches = [
        f"line {a} -> {'exit' if b < 0 else f'line {b}'}: {source[a - 1].strip()}"
        for a, dests in sorted(analysis.missing_branch_arcs().items()) for b in dests
    ]
    return lines, branches


def _measure(slug: str) -> tuple[list[str], list[str]]:
    """(lines never run, branches never taken) of solutions/<slug>/kernels.py over the CPU-tier cases.

    The cases run, each part's first, then each part's second and so on, until every line and branch
    has run (the rest can add nothing) or all have: a line that no case reaches is named only after
    every case has had its chance.
    """
    from course.loader import load_module

    path = str(REPO_ROOT / "solutions" / slug / "kernels.py")
    cov = coverage.Coverage(branch=True, include=[path], data_file=None)
    cov.exclude(ARGUMENT_CHECKS)
    spec = load_spec(slug)
    device = torch.device("cpu")
    remap = _jit_exit_arcs(path)
    # round robin over the parts (each part's first case, then each part's second ...): every kernel runs early
    per_part = [[(part, i, case) for i, case in enumerate(part.cases_for("cpu"))] for part in spec.parts]
    cases = [c for rank in itertools.zip_longest(*per_part) for c in rank if c is not None]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        cov.start()
        module = load_module(path, name=f"coverage_{slug}")
        cov.stop()
        for part, i, case in cases:
            inputs = part.make_inputs(case.params, generator(SEED + i, device), device)
            cov.start()
            try:
                if part.setup is not None:
                    inputs = {**inputs, **part.setup(module, inputs, case.params)}
                part.call(module, inputs, case.params)
            finally:
                cov.stop()
            lines, branches = _missing(cov, path, remap)
            if not lines and not branches:
                break
    finally:
        torch.set_num_threads(threads)
    return lines, branches


@pytest.mark.slow
@pytest.mark.parametrize("slug", SLUGS)
def test_the_cpu_tier_reaches_every_line_and_branch_of_the_solution(slug: str) -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("measured under the Triton interpreter, where kernels run as Python")
    lines, branches = _measure(slug)
    assert not lines and not branches, (
        f"solutions/{slug}/kernels.py has code no CPU-tier case runs. Add a case to autograder/specs/{slug}.py "
        "that reaches it, or, for code only a GPU can run, a `# pragma: no cover - reason` beside it.\n"
        + "\n".join(lines + branches)
    )


@pytest.mark.parametrize("slug", SLUGS)
def test_every_left_out_path_says_why(slug: str) -> None:
    source = (REPO_ROOT / "solutions" / slug / "kernels.py").read_text().splitlines()
    bare = [f"line {i}: {line.strip()}" for i, line in enumerate(source, 1)
            if PRAGMA.search(line) and not REASON.search(line)]  # fmt: skip
    assert not bare, "each `# pragma: no cover` needs ` - the reason` after it:\n" + "\n".join(bare)
