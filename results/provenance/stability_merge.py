"""Fold newer five-grading runs of some assignments (`python scripts/stability.py SLUG --runs 5 --out X.json`) into a
GPU's results/<gpu>/stability.json, assignment by assignment, and write its stability.md again: one table, each
assignment's rows from its latest runs, with the date and command of each in the header.

    python results/provenance/stability_merge.py results/h200/stability.json NEW.json [NEW.json ...] --note "why"

The replaced runs are not lost: the JSON before the merge is in git."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from stability import markdown  # noqa: E402

# The assignments in the course's order, as the table lists them.
from autograder.specs import SLUGS  # noqa: E402
from autograder.bench import gpu_slug  # noqa: E402


def merge(combined: dict, new: dict) -> list[str]:
    """Replace each assignment of `new` (one stability.py report) in `combined`; returns the assignments replaced."""
    replaced = sorted({key.split(" · ")[0] for key in new["summary"]})
    for slug in replaced:
        combined["slugs"][slug] = {
            "runs": new["runs"],
            "reps": new["reps"],
            "source": new["source"],
            "summary": {k: v for k, v in new["summary"].items() if k.split(" · ")[0] == slug},
            "per_run": {k: v for k, v in new["per_run"].items() if k.split(" · ")[0] == slug},
            "meta": new["meta"],
        }
    return replaced


def table(combined: dict, note: str) -> str:
    """stability.md: every assignment's latest rows in one table, and when and how each was measured."""
    slugs = [s for s in SLUGS if s in combined["slugs"]]
    dated = []
    for s in slugs:
        meta = combined["slugs"][s].get("meta")
        if meta is None:  # runs from before this script: the file's own date, one device call per few assignments
            meta = {"date": combined["date"], "command": f"python scripts/stability.py {s} --runs 5"}
        dated.append(f"- {s}: {meta['date']}, `{meta['command'].split(' --out ')[0]}`")
    report = {
        "runs": combined["runs"],
        "meta": {"gpu": combined["gpu"], "torch": combined["torch"], "triton": combined["triton"],
                 "date": max(d.split(", ")[1] for d in dated)},
        "summary": {k: v for s in slugs for k, v in combined["slugs"][s]["summary"].items()},
    }  # fmt: skip
    body = markdown(report)
    title, rest = body.split("\n", 1)
    gpu = combined["gpu"]
    head = [
        f"# Five gradings of every solution's speed cases on an {gpu_slug(gpu).upper()}", "",
        f"{gpu}, torch {combined['torch']}, triton {combined['triton']}. Each run is a fresh grading with its worker, new inputs,",
        "warm-up, and the timed calls interleaved with the baseline, as a student's submission is graded. The rows of each",
        "assignment come from its latest five runs on the code of that date:", "", *dated, "", note, "",
    ]  # fmt: skip
    return "\n".join(head) + rest.rstrip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("combined", type=Path, help="results/<gpu>/stability.json")
    parser.add_argument("new", type=Path, nargs="+", help="stability.py reports to fold in")
    parser.add_argument("--note", default="", help="a paragraph for the table's header: what changed since")
    args = parser.parse_args()
    combined = json.loads(args.combined.read_text())
    for path in args.new:
        new = json.loads(path.read_text())
        if new["meta"]["gpu"] != combined["gpu"]:
            raise SystemExit(f"{path} was measured on {new['meta']['gpu']}, {args.combined} on {combined['gpu']}.")
        print(f"{path}: replaced {', '.join(merge(combined, new))}")
    args.combined.write_text(json.dumps(combined, indent=2) + "\n")
    args.combined.with_suffix(".md").write_text(table(combined, args.note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
