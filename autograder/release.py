"""Write assignments/ from solutions/: each solution region becomes a stub that raises NotImplementedError.

A region in solutions/<slug>/kernels.py looks like

        ### BEGIN SOLUTION rmsnorm.forward
        #> A hint line, kept in the stub as a comment.
        ...the solution...
        ### END SOLUTION

and is released, at the same indentation, as

        # TODO(rmsnorm.forward)
        #   A hint line, kept in the stub as a comment.
        raise NotImplementedError("TODO(rmsnorm.forward): not implemented yet; see README.md")

Every other file in solutions/<slug>/ (the handout README.md) is copied as it is, except the hint ladders
(hints.toml), which are released base64-encoded as hints.b64 (autograder/hints.py). The student notebooks
(notebooks/) are released from solutions/notebooks/ the same way (autograder/notebook_release.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from autograder import hints

REPO_ROOT = Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^(?P<indent>\s*)### BEGIN SOLUTION(?:\s+(?P<task>[\w.]+))?\s*$")
END = re.compile(r"^\s*### END SOLUTION\s*$")
HINT = re.compile(r"^\s*#>\s?(?P<text>.*)$")
# hints_used.json is the student's record of the hints they asked for (autograder/hints.py), never released.
SKIP = {"__pycache__", ".ipynb_checkpoints", "hints_used.json"}


class ReleaseError(Exception):
    pass


def make_stub(source: str, filename: str = "kernels.py", where: str = "see README.md") -> str:
    """The student version of a solution file (or of a notebook cell); `where` ends the error's sentence."""
    out: list[str] = []
    lines = source.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        begin = BEGIN.match(lines[i])
        if END.match(lines[i]):
            raise ReleaseError(f"{filename}:{i + 1}: END SOLUTION without a BEGIN SOLUTION")
        if not begin:
            out.append(lines[i])
            i += 1
            continue
        indent, task = begin.group("indent"), begin.group("task")
        if not task:
            raise ReleaseError(f"{filename}:{i + 1}: name the task, as in `### BEGIN SOLUTION rmsnorm.forward`")
        hints: list[str] = []
        j = i + 1
        while j < len(lines) and not END.match(lines[j]):
            if BEGIN.match(lines[j]):
                raise ReleaseError(f"{filename}:{j + 1}: BEGIN SOLUTION inside another region")
            hint = HINT.match(lines[j])
            if hint:
                hints.append(hint.group("text"))
            j += 1
        if j == len(lines):
            raise ReleaseError(f"{filename}:{i + 1}: BEGIN SOLUTION {task} is never closed")
        out.append(f"{indent}# TODO({task})\n")
        out.extend(f"{indent}#   {h}\n" if h else f"{indent}#\n" for h in hints)
        out.append(f'{indent}raise NotImplementedError("TODO({task}): not implemented yet; {where}")\n')
        i = j + 1
    return "".join(out)


def released_files(slug: str, root: Path = REPO_ROOT) -> dict[str, str]:
    """File name -> content of assignments/<slug>/ as the release makes it."""
    src = root / "solutions" / slug
    if not src.is_dir():
        raise ReleaseError(f"there is no solutions/{slug}/")
    files = {}
    for path in sorted(src.rglob("*")):
        if path.is_dir() or SKIP & set(path.relative_to(src).parts) or path.suffix == ".pyc":
            continue
        rel = str(path.relative_to(src))
        text = path.read_text()
        if rel == hints.SOURCE:  # the hint ladders, encoded so that they are not read by accident
            files[hints.RELEASED] = hints.encode(text, f"solutions/{slug}/{rel}")
        else:
            files[rel] = make_stub(text, f"solutions/{slug}/{rel}") if path.suffix == ".py" else text
    return files


def release(slugs: list[str], root: Path = REPO_ROOT, check: bool = False, notebooks: bool = True) -> list[str]:
    """Write assignments/ and notebooks/ (or, with check, only compare). Returns the paths that differ or were written."""
    from autograder.notebook_release import release_notebooks

    differing = []
    for slug in slugs:
        dst = root / "assignments" / slug
        wanted = released_files(slug, root)
        present = {
            str(p.relative_to(dst))
            for p in dst.rglob("*")
            if p.is_file() and not SKIP & set(p.relative_to(dst).parts) and p.suffix != ".pyc"
        } if dst.exists() else set()
        for rel, text in wanted.items():
            path = dst / rel
            if not path.exists() or path.read_text() != text:
                differing.append(f"assignments/{slug}/{rel}")
                if not check:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text)
        for rel in sorted(present - set(wanted)):
            differing.append(f"assignments/{slug}/{rel}")
            if not check:
                (dst / rel).unlink()
    if notebooks:
        differing += release_notebooks(root, check)
    return differing
