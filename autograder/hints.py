"""Hint ladders: opt in, one level at a time, and every level used is on the record.

Each assignment's stubs keep the contract and a first hint; the recipe is a ladder of hints per task in
solutions/<slug>/hints.toml, each level more specific than the last. The release writes it to
assignments/<slug>/hints.b64, the same JSON base64-encoded: not a secret (the handout says how to decode it),
only hard to read by accident. `python -m autograder hint <task> [--level N]` shows a level and records it
in hints_used.json beside the student's kernels.py, a plain file that travels with the submission; the
grade (terminal report and Gradescope's results.json) lists the levels recorded there. The record is kept
in good faith, like the rest of a student's folder: deleting it deletes it.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import tomllib
from pathlib import Path

from autograder.printable import printable

MAX_DESCRIBED = 40  # tasks named in a report's line of hints used; the course has fewer than 40 tasks

SOURCE = "hints.toml"  # in solutions/<slug>/
RELEASED = "hints.b64"  # in assignments/<slug>/
LOG = "hints_used.json"  # beside the student's kernels.py
HEADER = (
    "# Hint ladders for `python -m autograder hint <task>`, base64-encoded JSON so that they are not read by\n"
    "# accident. Each hint you ask for is recorded in hints_used.json and listed in your grade.\n"
)


class HintError(Exception):
    pass


def parse_source(text: str, where: str = SOURCE) -> dict[str, list[str]]:
    """task -> its levels, from the instructor's TOML; refuses a ladder that is not a list of texts."""
    data = tomllib.loads(text)
    ladders = {}
    for task, entry in data.items():
        levels = entry.get("levels") if isinstance(entry, dict) else None
        if not isinstance(levels, list) or not levels or not all(isinstance(t, str) and t.strip() for t in levels):
            raise HintError(f"{where}: [\"{task}\"] needs `levels = [...]`, a non-empty list of hint texts")
        ladders[task] = [t.strip() for t in levels]
    return ladders


def encode(text: str, where: str = SOURCE) -> str:
    """The released form of a hints.toml: a header, then base64 of sorted JSON (the same bytes every time)."""
    payload = json.dumps(parse_source(text, where), sort_keys=True, ensure_ascii=False).encode()
    return HEADER + base64.encodebytes(payload).decode()


def decode(text: str) -> dict[str, list[str]]:
    body = "".join(line for line in text.splitlines() if not line.startswith("#"))
    return json.loads(base64.b64decode(body))


def ladders(folder: Path) -> dict[str, list[str]]:
    """The hint ladders of an assignment folder: assignments/<slug>/ (released) or solutions/<slug>/."""
    if (folder / RELEASED).exists():
        return decode((folder / RELEASED).read_text())
    if (folder / SOURCE).exists():
        return parse_source((folder / SOURCE).read_text(), str(folder / SOURCE))
    return {}


UNREADABLE = "(unreadable hints_used.json)"
MAX_LOG_BYTES = 1 << 20  # a log of every level of every task is a few KB


def used(folder: Path) -> dict[str, list[int]]:
    """task -> the hint levels recorded in folder/hints_used.json (empty when there is none). The file is the
    student's: whatever it holds (a level of Infinity, which stopped Gradescope's entry before it wrote results.json,
    red team 15; a link, a pipe, gigabytes), it reads as a log or as unreadable, and never stops a grade."""
    try:
        fd = os.open(folder / LOG, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except OSError:
        return {UNREADABLE: []}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {UNREADABLE: []}
        data = b""
        while len(data) <= MAX_LOG_BYTES and (chunk := os.read(fd, MAX_LOG_BYTES + 1 - len(data))):
            data += chunk
        if len(data) > MAX_LOG_BYTES:
            return {UNREADABLE: []}
        return {str(task): sorted({int(level) for level in levels}) for task, levels in json.loads(data).items()}
    except Exception:  # noqa: BLE001  (anything a student's file can make json or int raise)
        return {UNREADABLE: []}
    finally:
        os.close(fd)


def record(folder: Path, task: str, level: int) -> Path:
    """Add `level` of `task` to folder/hints_used.json; returns its path."""
    log = used(folder)
    log.pop(UNREADABLE, None)
    log[task] = sorted(set(log.get(task, [])) | {level})
    path = folder / LOG
    path.write_text(json.dumps(log, indent=1, sort_keys=True) + "\n")
    return path


def describe(hints: dict[str, list[int]]) -> str:
    """'Hints used: fusion.gelu levels 1, 2; ...' or ''. The log lies beside the submission, its task names the
    student's to write: shown on one line, control characters written out, at most MAX_DESCRIBED of them (red team
    14 cleared the screen and printed a forged score from hints_used.json)."""
    if not hints:
        return ""
    parts = [f"{printable(task, one_line=True)[:80]} level{'s' if len(levels) > 1 else ''} "
             f"{', '.join(map(str, levels[:20]))}" for task, levels in sorted(hints.items())[:MAX_DESCRIBED]]
    more = f"; and {len(hints) - MAX_DESCRIBED} more" if len(hints) > MAX_DESCRIBED else ""
    return "Hints used: " + "; ".join(parts) + more + "."


def show(folder: Path, task: str, level: int | None) -> tuple[str, int, int]:
    """(the hint's text, its level, the number of levels) for `task`, and record it. Without a level, the
    next one after those already used (or the last, when all have been)."""
    all_ladders = ladders(folder)
    if task not in all_ladders:
        known = ", ".join(sorted(all_ladders)) or "none"
        raise HintError(f"There are no hints for {task} in {folder}: the hints there are for {known}.")
    levels = all_ladders[task]
    if level is None:
        level = min(max(used(folder).get(task, [0])) + 1, len(levels))
    if not 1 <= level <= len(levels):
        raise HintError(f"{task} has hint levels 1 to {len(levels)}; ask for one of those.")
    record(folder, task, level)
    return levels[level - 1], level, len(levels)
