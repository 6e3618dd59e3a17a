"""Benchmark results measured on a GPU and committed to results/, for readers who have no GPU.

Each file `results/<gpu>/<slug>.json` holds:
    meta: {gpu, torch, triton, cuda, date, copy_gbps, command}
    rows: [{pass, shape, dtype, impl, ms, gbps, pct_copy}, ...]
where `ms` is the median time of one call, `gbps` counts the bytes the operation must read and
write at least once, and `pct_copy` compares that with a device-to-device copy measured in the same run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"


def results_path(slug: str, gpu: str = "h200") -> Path:
    return RESULTS_DIR / gpu / f"{slug}.json"


def load_results(slug: str, gpu: str = "h200") -> dict[str, Any] | None:
    """The committed measurements for an assignment, or None when none have been committed yet."""
    path = results_path(slug, gpu)
    if not path.exists():
        return None
    return json.loads(path.read_text())


def rows(results: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    """The rows whose fields equal every keyword given, e.g. rows(r, impl="solution", dtype="bfloat16")."""
    out = []
    for row in results["rows"]:
        if all((list(row[k]) if isinstance(row[k], list) else row[k]) == v for k, v in match.items()):
            out.append(row)
    return out


# --------------------------------------------------------------------------------------------------
# Writing results: what the measurement scripts under scripts/ share
# --------------------------------------------------------------------------------------------------


def run_meta(command: str) -> dict[str, Any]:
    """Where and when a measurement ran: the header of every results JSON."""
    import datetime
    import platform

    import torch
    import triton

    return {
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU (Triton interpreter)",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
        "command": command,
    }


def markdown_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A markdown table, one string per line; columns of numbers right-aligned."""
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) for r in rows) for i in range(len(header))]
    rule = "|" + "|".join("---:" if n else "---" for n in numeric) + "|"
    return ["| " + " | ".join(header) + " |", rule, *("| " + " | ".join(map(str, r)) + " |" for r in rows)]


class Sections:
    """A script's named measurements, run in order into one JSON file that is rewritten after every section,
    so that a run cut short (a device call's time limit) keeps what finished. A section that raises is
    recorded with its traceback and the run goes on; one that needs more of the time budget than is left
    is listed as skipped."""

    def __init__(self, path: Path, meta: dict[str, Any], budget_s: float = float("inf"), merge: bool = False) -> None:
        import time

        self.path, self.budget_s, self._clock = path, budget_s, time.perf_counter
        self._start = self._clock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.results: dict[str, Any] = json.loads(path.read_text()) if merge and path.exists() else {}
        self.results.update(meta=meta, errors=[], skipped=[])  # this run's, not a merged file's

    def left_s(self) -> float:
        return self.budget_s - (self._clock() - self._start)

    def run(self, name: str, measure: Callable[[], Any], need_s: float = 0.0) -> Any:
        """results[name] = measure(), timed, saved; None (and a note) when it was skipped or failed."""
        import traceback

        if self.left_s() < need_s:
            print(f"[{name}: skipped, {self.left_s():.0f} s left of the budget, needs {need_s:.0f}]", flush=True)
            self.results["skipped"].append(name)
            return None
        t0 = self._clock()
        try:
            self.results[name] = measure()
        except Exception:  # noqa: BLE001 - one section failing must not lose the others' numbers
            self.error(section=name, error=traceback.format_exc()[-3000:])
        print(f"[{name}: {self._clock() - t0:.0f} s]", flush=True)
        self.save()
        return self.results.get(name)

    def error(self, **what: Any) -> None:
        """Record (and print) a failure that must not stop the run: a section's, or one variant's within it."""
        self.results["errors"].append(what)
        print("FAILED " + " ".join(f"{k}={v}" for k, v in what.items())[:2000], flush=True)

    def save(self) -> None:
        self.path.write_text(json.dumps(self.results, indent=1, default=str) + "\n")


def section_parser(doc: str, sections: list[str], default: list[str] | None = None, smoke: bool = True) -> Any:
    """The arguments every measurement script takes: --out DIR, --sections a,b (checked against the script's
    own) and, where the script has one, --smoke (tiny sizes on the CPU interpreter: checks the script)."""
    import argparse

    def chosen(text: str) -> list[str]:
        names = [s for s in text.split(",") if s]
        unknown = [s for s in names if s not in sections]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown section {', '.join(unknown)}: the sections are {', '.join(sections)}"
            )
        return names

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder the results are written to")
    parser.add_argument("--sections", type=chosen, default=default or sections, help=f"of: {','.join(sections)}")
    if smoke:
        parser.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU interpreter: checks the script")
    return parser
