"""Grade the reference solutions' speed cases N times on a GPU: does the same code get the same points?

Each run is a full grading of the speed cases (a fresh worker, one correctness case per part first,
new inputs for every timed call, the baseline interleaved), exactly as a student's submission is
graded. For every speed case the script reports, over the runs: the median time of each run, its
spread, the speed-up, the points, and the margin between the worst (and best) speed-up and the
thresholds that decide the points: full points at `target_speedup`, none at `zero_at`.

    python scripts/stability.py                  # every assignment, 5 runs
    python scripts/stability.py rmsnorm rope --runs 5 --out results/h200/stability.json

Writes a JSON (GPU, versions, date, every run's numbers, the summary) and a markdown table beside it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

import torch
import triton

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from autograder.grade import Selection, grade_assignment  # noqa: E402
from autograder.specs import SLUGS  # noqa: E402


def summarize(runs: list[dict], target: float, zero_at: float, points: float) -> dict:
    """Spread of one speed case's numbers over the runs, and the margins around its thresholds."""
    ms = [r["ms"] for r in runs]
    speedups = [r["speedup"] for r in runs]
    scores = [r["score"] for r in runs]
    worst, best = min(speedups), max(speedups)
    return {
        "runs": len(runs),
        "median_ms": statistics.median(ms),
        "ms_run_to_run": (max(ms) - min(ms)) / statistics.median(ms),  # (max - min) / median over runs
        "ms_within_run_iqr": max(r["spread"] for r in runs),  # the widest IQR / median of one run's calls
        "speedup_min": worst,
        "speedup_max": best,
        "target_speedup": target,
        "zero_at": zero_at,
        # Positive: every run is at or above full points by this fraction (a slower run would still get them).
        "margin_to_full_points": worst / target - 1.0,
        # Positive: every run is above the no-points line by this fraction.
        "margin_to_zero_points": worst / zero_at - 1.0,
        "points": points,
        "scores": scores,
        "same_points_every_run": max(scores) - min(scores) < 1e-6,
        "statuses": sorted({r["status"] for r in runs}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help=f"assignments (default: all of {', '.join(SLUGS)})")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reps", type=int, default=50, help="timed calls per speed case and run (the grader's default)")
    parser.add_argument("--source", default="solutions", help="folder holding SLUG/kernels.py (default solutions)")
    parser.add_argument("--out", type=Path, help="JSON to write (default results/<gpu>/stability.json)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("stability.py measures GPU timings: run it on a machine with a CUDA GPU.")
        return 2
    slugs = args.slugs or SLUGS
    unknown = [s for s in slugs if s not in SLUGS]
    if unknown:
        print(f"Unknown assignment {', '.join(unknown)}: the course has {', '.join(SLUGS)}.")
        return 2
    gpu = torch.cuda.get_device_name(0)
    out = args.out or REPO_ROOT / "results" / gpu.split()[-1].lower() / "stability.json"
    selection = Selection(max_cases=1)  # one correctness case per part unlocks its speed cases
    per_case: dict[str, list[dict]] = {}
    meta: dict[str, dict] = {}
    for run in range(args.runs):
        for slug in slugs:
            result = grade_assignment(slug, REPO_ROOT / args.source / slug / "kernels.py", "cuda", reps=args.reps,
                                      selection=selection, progress=lambda s: print(f"  run {run + 1}: {s}", flush=True))  # fmt: skip
            for c in result.cases:
                if c.kind != "speed":
                    continue
                key = f"{slug} · {c.task} · {c.name}"
                record = {"run": run + 1, "status": c.status, "score": c.score, "message": c.message,
                          **{k: c.extra.get(k, float("nan")) for k in ("ms", "baseline_ms", "speedup", "spread", "baseline_spread")}}  # fmt: skip
                per_case.setdefault(key, []).append(record)
                meta[key] = {"target": c.extra.get("target_speedup", float("nan")), "points": c.max_score,
                             "zero_at": _zero_at(slug, c.task, c.name)}  # fmt: skip
                print(f"run {run + 1} {key}: {c.status} {c.score:.2f}/{c.max_score:g} {c.message}", flush=True)
    summary = {}
    for key, runs in per_case.items():
        timed = [r for r in runs if r["ms"] == r["ms"]]  # runs that were timed (not skipped or failed early)
        if timed:
            summary[key] = summarize(timed, meta[key]["target"], meta[key]["zero_at"], meta[key]["points"])
        else:
            summary[key] = {"runs": 0, "statuses": sorted({r["status"] for r in runs}), "messages": [r["message"] for r in runs]}
    report = {
        "gpu": gpu, "torch": torch.__version__, "triton": triton.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "runs": args.runs, "reps": args.reps, "source": args.source,
        "command": "python scripts/stability.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "summary": summary, "per_run": per_case,
    }  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    table = markdown(report)
    out.with_suffix(".md").write_text(table)
    print(table)
    print(f"Wrote {out} and {out.with_suffix('.md')}.")
    return 0


def _zero_at(slug: str, task: str, name: str) -> float:
    from autograder.spec import Case
    from autograder.specs import load_spec

    for sc in load_spec(slug).speed:
        if sc.task == task and Case(sc.params, "gpu").name == name:
            return sc.zero_at
    return 1.0


def markdown(report: dict) -> str:
    lines = [
        f"# Speed points over {report['runs']} gradings ({report['gpu']}, torch {report['torch']}, "
        f"triton {report['triton']}, {report['date']})",
        "",
        "| speed case | median us | run-to-run | within a run (IQR) | speed-up min..max | full points at | margin | points per run |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, s in report["summary"].items():
        if not s["runs"]:
            lines.append(f"| {key} | - | - | - | - | - | - | not timed: {', '.join(s['statuses'])} |")
            continue
        scores = ", ".join(f"{x:.2f}" for x in s["scores"])
        lines.append(
            f"| {key} | {s['median_ms'] * 1e3:,.1f} | {100 * s['ms_run_to_run']:.1f}% | {100 * s['ms_within_run_iqr']:.1f}% | "
            f"{s['speedup_min']:.2f}..{s['speedup_max']:.2f}x | {s['target_speedup']:g}x | "
            f"{100 * s['margin_to_full_points']:+.0f}% | {scores}{'' if s['same_points_every_run'] else ' (differ)'} |"
        )
    lines += [
        "",
        "run-to-run: (slowest - fastest) / median of the runs' medians. within a run: the widest interquartile",
        "range over the median among the runs. margin: the slowest run's speed-up over the full-points threshold,",
        "minus one (positive: every run earns full points with that much to spare).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
