"""Imports run downhill: course/ is the floor, autograder/ stands on it, and no two modules need each other.

Every import counts, those inside functions too: a lazy import still ties the two modules together.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("course", "autograder")


def repo_modules(root: Path = REPO_ROOT) -> dict[str, Path]:
    """Dotted name -> file, for every module of the repo's packages."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_modules(path: Path, known: dict[str, Path]) -> set[str]:
    """The repo modules a file imports: `import a.b`, `from a import b` (module b or a name in a), at any depth."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from a import b`: module a.b when there is one, else the name b defined in a
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                     for alias in node.names]  # fmt: skip
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def import_graph(root: Path = REPO_ROOT) -> dict[str, set[str]]:
    known = repo_modules(root)
    return {name: imported_modules(path, known) - {name} for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_course_imports_nothing_from_the_autograder() -> None:
    graph = import_graph()
    upward = {m: sorted(d for d in deps if d.startswith("autograder")) for m, deps in graph.items() if m.startswith("course")}
    assert {m: d for m, d in upward.items() if d} == {}, "course/ is the floor: move what it needs from autograder/ into course/"


def test_no_two_repo_modules_import_each_other() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle_and_the_graph_sees_lazy_imports(tmp_path: Path) -> None:
    (tmp_path / "course").mkdir()
    (tmp_path / "autograder").mkdir()
    (tmp_path / "course" / "__init__.py").write_text("")
    (tmp_path / "autograder" / "__init__.py").write_text("")
    (tmp_path / "course" / "a.py").write_text("def f():\n    from autograder import b\n")
    (tmp_path / "autograder" / "b.py").write_text("import course.a\n")
    (tmp_path / "autograder" / "c.py").write_text("from autograder.b import thing\n")
    graph = import_graph(tmp_path)
    assert graph["course.a"] == {"autograder.b"} and graph["autograder.c"] == {"autograder.b"}
    assert cycles(graph) == [["autograder.b", "course.a"]]
