"""Text a submission chose, made safe to show in a terminal.

A case's message can quote the submission's own words (an exception, a name it chose), and a class folder's entries
are named by students. rich passes ESC through, so `\\x1b[1A\\x1b[2K` in an exception moved up and erased the report's
lines, and a forged total could be printed in their place. Control characters but the newline and the tab, DEL, the
C1 controls and the bidirectional overrides (which reorder what is shown) are written out instead: `\\x1b`, `\\u202e`.
"""

from __future__ import annotations

_WRITTEN_OUT = {c: f"\\x{c:02x}" for c in [*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}
_WRITTEN_OUT.update({c: f"\\u{c:04x}" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]})
_ONE_LINE = {**_WRITTEN_OUT, 0x09: "\\t", 0x0A: "\\n"}


def printable(text: str, one_line: bool = False) -> str:
    """`text` with every character a terminal would act on, rather than show, written out; with `one_line`, the newline
    and the tab too, for what must stay on its line (a student's name: red team 13 put a leaderboard's row in one)."""
    return text.translate(_ONE_LINE if one_line else _WRITTEN_OUT)
