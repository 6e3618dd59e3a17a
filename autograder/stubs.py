"""Solution regions into stubs: the markers, and the function that turns a region into a TODO that raises.

Shared by the release of kernels.py files (autograder/release.py) and of notebooks
(autograder/notebook_release.py).
"""

from __future__ import annotations

import re

BEGIN = re.compile(r"^(?P<indent>\s*)### BEGIN SOLUTION(?:\s+(?P<task>[\w.]+))?\s*$")
END = re.compile(r"^\s*### END SOLUTION\s*$")
HINT = re.compile(r"^\s*#>\s?(?P<text>.*)$")


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
