"""Grade the reference solutions' speed cases N times on a GPU: does the same code get the same points?

Each run is a full grading of the speed cases (a fresh worker, one correctness case per part first,
new inputs for every timed call, the baseline interleaved), exactly as a student's submission is
graded. For every speed case the script reports, over the runs: the median time of each run, its
spread, the speed-up, the points, and the margin between the worst (and best) speed-up and the
thresholds that decide the points: full points at `target`, none at `zero_at`, in the case's measure
(the fraction of the copy bandwidth, or the ratio to the library, both measured in the same run).

    python scripts/stability.py                  # every assignment, 5 runs
    python scripts/stability.py rmsnorm rope --runs 5 --out results/h200/stability.json
    python scripts/stability.py --margins results/h100/grade_*_gpu_tier.json --out results/h100/rubric_margins.md

Writes a JSON (GPU, versions, date, every run's numbers, the summary) and a markdown table beside it.
With --margins it times nothing: it turns grade JSONs (`python -m autograder grade --json`) into a table of
each speed case's measure, threshold, margin and points.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from autograder.grade import Selection, grade_assignment  # noqa: E402
from autograder.specs import SLUGS  # noqa: E402
from autograder.bench import gpu_slug  # noqa: E402
from course.results import markdown_table, run_meta  # noqa: E402


def summarize(runs: list[dict], target: float, zero_at: float, points: float, every_run: list[dict] | None = None) -> dict:
    """Spread of one speed case's numbers over the runs that were timed, and the margins around its thresholds; the
    points and statuses over every run (`every_run`, default `runs`): a run that failed, with no time, still counts."""
    every_run = runs if every_run is None else every_run
    ms = [r["ms"] for r in runs]
    speedups = [r["value"] for r in runs]  # the measure that earns the points
    scores = [r["score"] for r in every_run]
    worst, best = min(speedups), max(speedups)
    return {
        "runs": len(runs),
        "median_ms": statistics.median(ms),
        "ms_run_to_run": (max(ms) - min(ms)) / statistics.median(ms),  # (max - min) / median over runs
        "ms_within_run_iqr": max(r["spread"] for r in runs),  # the widest IQR / median of one run's calls
        "speedup_min": worst,
        "speedup_max": best,
        "target": target,
        "zero_at": zero_at,
        # Positive: every run is at or above full points by this fraction (a slower run would still get them).
        "margin_to_full_points": worst / target - 1.0,
        # Positive: every run is above the no-points line by this fraction.
        "margin_to_zero_points": worst / zero_at - 1.0,
        "points": points,
        "scores": scores,
        "same_points_every_run": max(scores) - min(scores) < 1e-6,
        "statuses": sorted({r["status"] for r in every_run}),
        "failed_runs": [r["run"] for r in every_run if r["status"] != "passed"],
        # The largest error of the timed calls' checked outputs over the runs, as a fraction of the tolerance: how
        # near the kernel's arithmetic comes to failing at this size (NaN in reports from before it was recorded).
        "checked_error_max": _worst(r.get("checked_error", float("nan")) for r in runs),
    }


def _worst(errors: Iterable[float]) -> float:
    """The largest, or NaN when any run did not record its error (Python's max lets a NaN through only first)."""
    errors = list(errors)
    return float("nan") if not errors or any(e != e for e in errors) else max(errors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help=f"assignments (default: all of {', '.join(SLUGS)})")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--reps", type=int, default=50, help="timed calls per speed case and run (the grader's default)"
    )
    parser.add_argument("--source", default="solutions", help="folder holding SLUG/kernels.py (default solutions)")
    parser.add_argument("--out", type=Path, help="JSON to write (default results/<gpu>/stability.json)")
    parser.add_argument(
        "--margins",
        type=Path,
        nargs="+",
        metavar="GRADE_JSON",
        help="time nothing: write the margin table of these grade JSONs to --out (markdown)",
    )
    args = parser.parse_args(argv)
    if args.margins:
        table = margins(args.margins)
        if args.out:
            args.out.write_text(table)
        print(table)
        return 0
    if not torch.cuda.is_available():
        print("stability.py measures GPU timings: run it on a machine with a CUDA GPU.")
        return 2
    slugs = args.slugs or SLUGS
    unknown = [s for s in slugs if s not in SLUGS]
    if unknown:
        print(f"Unknown assignment {', '.join(unknown)}: the course has {', '.join(SLUGS)}.")
        return 2
    gpu = torch.cuda.get_device_name(0)
    out = args.out or REPO_ROOT / "results" / gpu_slug(gpu) / "stability.json"
    selection = Selection(max_cases=1)  # one correctness case per part unlocks its speed cases
    per_case: dict[str, list[dict]] = {}
    meta: dict[str, dict] = {}
    for run in range(args.runs):
        for slug in slugs:
            result = grade_assignment(
                slug,
                REPO_ROOT / args.source / slug / "kernels.py",
                "cuda",
                reps=args.reps,
                selection=selection,
                progress=lambda s: print(f"  run {run + 1}: {s}", flush=True),
            )
            for c in result.cases:
                if c.kind != "speed":
                    continue
                key = f"{slug} · {c.task} · {c.name}"
                record = {
                    "run": run + 1,
                    "status": c.status,
                    "score": c.score,
                    "message": c.message,
                    **{
                        k: c.extra.get(k, float("nan"))
                        for k in ("ms", "baseline_ms", "speedup", "value", "spread", "baseline_spread", "reps", "checked_error")
                    },
                }
                per_case.setdefault(key, []).append(record)
                if key not in meta or "target" in c.extra:  # a run that failed before timing knows no thresholds
                    meta[key] = {
                        "target": c.extra.get("target", float("nan")),
                        "points": c.max_score,
                        "zero_at": c.extra.get("zero_at", float("nan")),
                        "measure": c.extra.get("measure", ""),
                    }
                print(f"run {run + 1} {key}: {c.status} {c.score:.2f}/{c.max_score:g} {c.message}", flush=True)
    summary = {}
    for key, runs in per_case.items():
        timed = [r for r in runs if r["ms"] == r["ms"]]  # runs that were timed (not skipped or failed early)
        if timed:
            summary[key] = summarize(timed, meta[key]["target"], meta[key]["zero_at"], meta[key]["points"], runs)
        else:
            summary[key] = {
                "runs": 0,
                "statuses": sorted({r["status"] for r in runs}),
                "messages": [r["message"] for r in runs],
            }
    report = {
        "meta": run_meta("python scripts/stability.py " + " ".join(argv if argv is not None else sys.argv[1:])),
        "runs": args.runs,
        "reps": args.reps,
        "source": args.source,
        "summary": summary,
        "per_run": per_case,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    table = markdown(report)
    out.with_suffix(".md").write_text(table)
    print(table)
    print(f"Wrote {out} and {out.with_suffix('.md')}.")
    return 0


def _shown(value: float, measure: str) -> str:
    return f"{100 * value:.0f}% copy" if measure == "copy" else f"{value:.2f}x"


def margins(grade_jsons: list[Path]) -> str:
    """A markdown table of every speed case in these grade JSONs: time, measure, threshold, margin, points."""
    rows, header = [], ""
    for path in grade_jsons:
        data = json.loads(path.read_text())
        header = header or (data.get("output") or "\n").splitlines()[0]
        for t in data["tests"]:
            e = t.get("extra_data") or {}
            if "measure" in e:
                rows.append([t["name"], f"{e['ms'] * 1e3:,.1f}", _shown(e["value"], e["measure"]), _shown(e["target"], e["measure"]),
                             f"{100 * e['margin']:+.0f}%", f"{e['speedup']:.2f}x {e['baseline']}", f"{t['score']:g}/{t['max_score']:g}",
                             e.get("reps", ""), f"{100 * e.get('spread', float('nan')):.1f}%"])  # fmt: skip
    return "\n".join(["# Speed rubric margins", "", header, "",
                      "margin: the measure over its full-points threshold, minus one (positive: full points with that much to spare).",
                      "Memory-bound cases are measured in the copy bandwidth of the same run, compute-bound ones against the library.", "",
                      *markdown_table(["speed case", "us", "measure", "full points at", "margin", "ratio to baseline (information)",
                                       "points", "timed calls", "spread"], rows)]) + "\n"  # fmt: skip


def markdown(report: dict) -> str:
    rows = []
    for key, s in report["summary"].items():
        if not s["runs"]:
            rows.append([key, *"-------", f"not timed: {', '.join(s['statuses'])}"])
            continue
        rows.append(
            [
                key,
                f"{s['median_ms'] * 1e3:,.1f}",
                f"{100 * s['ms_run_to_run']:.1f}%",
                f"{100 * s['ms_within_run_iqr']:.1f}%",
                f"{s['speedup_min']:.3g}..{s['speedup_max']:.3g}",
                f"{s['target']:g}",
                f"{100 * s['margin_to_full_points']:+.0f}%",
                _fraction(s.get("checked_error_max", float("nan"))),
                ", ".join(f"{x:.2f}" for x in s["scores"]) + ("" if s["same_points_every_run"] else " (differ)")
                + "".join(f"; run {r} failed" for r in s.get("failed_runs", [])),
            ]
        )
    m = report["meta"]
    return "\n".join([f"# Speed points over {report['runs']} gradings ({m['gpu']}, torch {m['torch']}, triton {m['triton']}, {m['date']})", "",
                      *markdown_table(["speed case", "median us", "run-to-run", "within a run (IQR)", "measure min..max", "full points at",
                                       "margin", "worst checked error", "points per run"], rows), "",
                      "run-to-run: (slowest - fastest) / median of the runs' medians. within a run: the widest interquartile",
                      "range over the median among the runs. measure: the fraction of copy bandwidth (memory-bound cases) or the",
                      "ratio to the library (compute-bound ones). margin: the slowest run's measure over the full-points threshold,",
                      "minus one (positive: every run earns full points with that much to spare). worst checked error: the",
                      "largest error among the timed calls whose outputs the grader checked, over the runs, as a fraction of the",
                      "tolerance (1 fails).", ""])  # fmt: skip


def _fraction(value: float) -> str:
    """A fraction of the tolerance for the table; '-' for reports from before the grader recorded it."""
    return "-" if value != value else f"{100 * value:.0f}%"


if __name__ == "__main__":
    sys.exit(main())
