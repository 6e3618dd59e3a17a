"""Grading results as terminal tables and as Gradescope's results.json."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from autograder.grade import AssignmentResult
from autograder.hints import describe
from autograder.printable import printable

STYLE = {
    "passed": ("PASS", "green"),
    "failed": ("FAIL", "red"),
    "error": ("ERROR", "red"),
    "timeout": ("TIMEOUT", "red"),
    "not_implemented": ("TODO", "yellow"),
    "skipped": ("-", "dim"),
    "not_gradeable": ("N/A", "yellow"),  # the GPU lacks what the case needs (bfloat16 on sm_75): no points either way
}


# The most of one case's message a report shows. Honest sentences are a few lines; a message can quote the
# submission's own words (an exception, a name it chose), and a table cell of a million lines took rich minutes to lay
# out, after every time limit (red team 10).
MESSAGE_LINES, MESSAGE_CHARS = 60, 6000


def clip(message: str) -> str:
    """`message` as it may be shown: control characters written out (`\x1b`), cut to MESSAGE_LINES lines and
    MESSAGE_CHARS characters, saying how much was left out."""
    message = printable(message)
    if len(message) <= MESSAGE_CHARS and message.count("\n") < MESSAGE_LINES:
        return message
    kept = "\n".join(message[:MESSAGE_CHARS].split("\n")[:MESSAGE_LINES])
    return f"{kept}\n... ({len(message) - len(kept):,} more characters not shown)"


def _pts(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def print_result(console: Console, result: AssignmentResult, verbose: bool = False) -> None:
    table = Table(title=f"{result.title}  [{result.tier.upper()} tier]", title_justify="left", expand=False)
    table.add_column("task")
    table.add_column("case")
    table.add_column("result")
    table.add_column("points", justify="right")
    table.add_column("details", overflow="fold", max_width=90)
    said_first_by: dict[str, str] = {}  # message -> the row that showed it whole
    previous = None
    for c in result.cases:
        label, style = STYLE.get(c.status, (c.status, ""))
        task = c.task + (" (bonus)" if c.bonus else "") + (" speed" if c.kind == "speed" else "")
        message = clip(c.message)
        # The same sentence for every case (not implemented, no import) is said once. "(as above)" only where the
        # row just above said it: a timeout in a part that otherwise raised points back to the case that timed out.
        if not verbose and message in said_first_by and c.status not in ("passed", "skipped") and c.kind != "speed":
            message = "(as above)" if previous == c.message else f"(as for {said_first_by[c.message]})"
        else:
            said_first_by.setdefault(c.message, f"{task} {c.name}")
        previous = c.message
        points = "-" if c.max_score == 0 else f"{_pts(c.score)}/{_pts(c.max_score)}"
        # Text, not markup: a message may quote the submission's own words ("[/bold]" in an exception stopped rich).
        table.add_row(Text(task), Text(c.name), Text(label, style=style), points, Text(message))
    console.print(table)
    line = f"{result.title}: {_pts(result.score(False))}/{_pts(result.max_score(False))} points"
    if result.max_score(True):
        line += f", bonus {_pts(result.score(True))}/{_pts(result.max_score(True))}"
    console.print(Text(line, style="bold"))
    if result.note:
        console.print(Text(result.note, style="dim"))
    console.print()


def _rounded_parts(values: list[float], digits: int = 4) -> list[float]:
    """Each value rounded so that the rounded values add up to the rounded total (of cases worth 60/27 points
    each, one shows 2.2222 and another 2.2223): Gradescope's tests then add up to the score it shows."""
    out, before, running = [], 0.0, 0.0
    for v in values:
        running += v
        after = round(running, digits)
        out.append(round(after - before, digits))
        before = after
    return out


def grading_header(device: str, slugs: list[str]) -> str:
    """Where the grade was made and by which thresholds, so that two students on two GPUs see why their points differ."""
    if device != "cuda":
        return ("Graded on the CPU tier: Triton's interpreter on this CPU, float32 cases only (correct results, "
                "no speed): speed is not graded here.")  # fmt: skip
    import torch

    from autograder.grade import grading_device, measured_peaks
    from autograder.specs import load_spec

    gpu = grading_device(torch.device("cuda"))
    peaks = measured_peaks(torch.device("cuda"))
    lines = [f"Graded on the GPU tier: {gpu.name} (sm_{gpu.arch}, {gpu.sms} SMs, {gpu.smem_per_block // 1024} KB of shared "
             f"memory per block), measured now: copy bandwidth {peaks.copy_gbps:,.0f} GB/s, matmul {peaks.matmul_tflops:,.0f} TFLOP/s.",
             "Speed thresholds: memory-bound cases are scored on the fraction of the copy bandwidth, compute-bound ones on "
             "the ratio to the library (cuBLAS, SDPA), both measured in this run:"]  # fmt: skip
    for slug in slugs:
        for sc in load_spec(slug).speed:
            lines.append(f"  {slug} {sc.task} {sc.name}: {sc.describe()}")
    return "\n".join(lines)


def gradescope_json(results: list[AssignmentResult], header: str = "",
                    hints: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """Gradescope's results.json: one test per case, speed-ups on the leaderboard, and the hint levels the
    student asked for (task -> levels) in the output and in extra_data."""
    tests = []
    leaderboard = []
    shown = [(r, c) for r in results for c in r.cases if not (c.max_score == 0 and c.status in ("skipped", "not_gradeable"))]
    for (r, c), max_score in zip(shown, _rounded_parts([c.max_score for _, c in shown])):
        score = max_score if c.score >= c.max_score else round(c.score * max_score / c.max_score, 4) if c.max_score else 0.0
        tests.append({
            "name": f"{r.slug} · {c.task}{' (bonus)' if c.bonus else ''}{' speed' if c.kind == 'speed' else ''} · {c.name}",
            "score": score,
            "max_score": max_score,
            "status": "passed" if c.status == "passed" else "failed",
            "output": clip(c.message),
            "visibility": "visible",
            "tags": [r.slug, c.task, c.kind],
            **({"extra_data": c.extra} if c.kind == "speed" and c.extra else {}),  # time, measure, threshold, points
        })  # fmt: skip
        if c.kind == "speed" and "speedup" in c.extra:
            leaderboard.append({"name": f"{r.slug} {c.name} speed-up", "value": round(c.extra["speedup"], 3)})
    notes = [r.note for r in results if r.note]
    return {
        "score": round(sum(t["score"] for t in tests), 4),  # what the tests add up to, as Gradescope shows them
        "output": "\n".join([header, *sorted(set(notes)), describe(hints or {})]).strip(),
        "extra_data": {"hints_used": hints or {}},
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "leaderboard": leaderboard,
    }


def write_json(path: Path, results: list[AssignmentResult], header: str = "",
               hints: dict[str, list[int]] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # A new file moved into place: a link or a file left at `path` beforehand is replaced, never written through.
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(gradescope_json(results, header, hints), indent=2) + "\n")
    os.chmod(temp, 0o644)
    os.replace(temp, path)
