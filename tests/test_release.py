"""assignments/ is generated from solutions/: solution regions become stubs, nothing else changes."""

from __future__ import annotations

import ast

import pytest

from autograder.release import ReleaseError, make_stub, release, released_files
from autograder.specs import SLUGS

SOURCE = '''def f(x):
    """Doc."""
    y = 1
    ### BEGIN SOLUTION demo.task
    #> Add one.
    #>
    #> Then return.
    return x + y
    ### END SOLUTION
'''


def test_release_check_passes_for_the_committed_assignments() -> None:
    assert release(SLUGS, check=True) == []


def test_a_region_becomes_a_todo_and_a_named_not_implemented_error() -> None:
    stub = make_stub(SOURCE)
    assert stub.splitlines()[3:] == [
        "    # TODO(demo.task)",
        "    #   Add one.",
        "    #",
        "    #   Then return.",
        '    raise NotImplementedError("TODO(demo.task): not implemented yet; see README.md")',
    ]
    namespace: dict = {}
    exec(stub, namespace)
    with pytest.raises(NotImplementedError, match=r"TODO\(demo\.task\)"):
        namespace["f"](1)


@pytest.mark.parametrize(
    "bad, message",
    [
        ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", "name the task"),
        ("### BEGIN SOLUTION a.b\nx = 1\n", "never closed"),
        ("x = 1\n### END SOLUTION\n", "without a BEGIN"),
        ("### BEGIN SOLUTION a.b\n### BEGIN SOLUTION a.c\n### END SOLUTION\n", "inside another"),
    ],
)
def test_malformed_regions_are_refused(bad: str, message: str) -> None:
    with pytest.raises(ReleaseError, match=message):
        make_stub(bad)


@pytest.mark.parametrize("slug", SLUGS)
def test_stub_keeps_every_signature_and_wrapper_of_the_solution(slug: str, repo_root) -> None:
    solution = ast.parse((repo_root / "solutions" / slug / "kernels.py").read_text())
    stub = ast.parse(released_files(slug)[f"kernels.py"])

    def signatures(tree: ast.Module) -> dict[str, str]:
        return {n.name: ast.unparse(n.args) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}

    assert signatures(stub) == signatures(solution)
    assert "BEGIN SOLUTION" not in released_files(slug)["kernels.py"]
