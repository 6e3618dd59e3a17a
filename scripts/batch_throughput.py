"""Measure `autograder batch` throughput on one GPU against all visible GPUs (issue: grading a class at scale).

    python scripts/batch_throughput.py --out OUT [--students 20] [--max-cases 2] [SLUG ...]

Generates a class of submissions (the reference solution, the minimal correct one, the wrong ones of
tests/submissions/ and the solution made to crash three ways), grades it with CUDA_VISIBLE_DEVICES set
to the first GPU, then to every GPU, and writes OUT/batch_throughput.json with the wall times and the
speed-up.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))


# Appended to an honest kernels.py, each makes every public function crash: the batch must grade the rest.
CRASHES = {
    "raise": "raise RuntimeError('crash')",
    "segfault": "import ctypes; ctypes.string_at(0)",
    "exit": "import os; os._exit(3)",
}


def make_class(folder: Path, slugs: list[str], students: int) -> dict[str, str]:
    """Correct, wrong and crashing submissions, cycled until there are `students` of them; returns each one's kind."""
    from autograder.specs import load_spec

    sources: list[tuple[str, str, str]] = []
    for slug in slugs:
        subs = REPO_ROOT / "tests" / "submissions" / slug
        honest = (REPO_ROOT / "solutions" / slug / "kernels.py").read_text()
        sources.append((slug, "solution", honest))
        sources += [
            (slug, p.stem, p.read_text()) for p in sorted(subs.glob("correct_*.py")) + sorted(subs.glob("wrong_*.py"))
        ]
        for kind, crash in CRASHES.items():
            crashing = "".join(f"\n\ndef {name}(*args, **kwargs):\n    {crash}\n" for name in load_spec(slug).api)
            sources.append((slug, f"crash_{kind}", honest + crashing))
    kinds: dict[str, str] = {}
    for i in range(students):
        slug, kind, code = sources[i % len(sources)]
        kinds[f"student_{i:03d}"] = kind
        dst = folder / f"student_{i:03d}" / slug
        dst.mkdir(parents=True)
        (dst / "kernels.py").write_text(code)
    return kinds


def read_totals(graded: Path) -> dict[str, float]:
    """Total points per student from a batch's scores.csv."""
    with (graded / "scores.csv").open() as fh:
        return {row["student"]: float(row["total"]) for row in csv.DictReader(fh)}


def run(folder: Path, out: Path, slugs: list[str], gpus: str, max_cases: int) -> float:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpus, "PYTHONPATH": str(REPO_ROOT)}
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "batch",
            str(folder),
            *slugs,
            "--out",
            str(out),
            "--device",
            "cuda",
            f"--grade-arg=--max-cases={max_cases}",
            "--grade-arg=--reps=20",
        ],
        cwd=REPO_ROOT,
        env=env,
        check=False,
    )
    return time.perf_counter() - t0


def main() -> int:
    from course.results import run_meta

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("slugs", nargs="*", default=["rmsnorm"])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--students", type=int, default=20)
    p.add_argument("--max-cases", type=int, default=2)
    args = p.parse_args()
    import torch

    n = torch.cuda.device_count()
    work = args.out / "class"
    kinds = make_class(work, args.slugs, args.students)
    one = run(work, args.out / "graded_1gpu", args.slugs, "0", args.max_cases)
    every = run(work, args.out / "graded_all", args.slugs, ",".join(map(str, range(n))), args.max_cases)
    totals_1, totals_all = read_totals(args.out / "graded_1gpu"), read_totals(args.out / "graded_all")
    result = {
        "meta": run_meta("python scripts/batch_throughput.py " + " ".join(sys.argv[1:])),
        "gpus": n,
        "students": args.students,
        "slugs": args.slugs,
        "max_cases": args.max_cases,
        "seconds_1gpu": one,
        "seconds_all": every,
        "speedup": one / every,
        "same_students": sorted(totals_1) == sorted(totals_all),
        "max_total_difference": max(abs(totals_1[s] - totals_all.get(s, 0.0)) for s in totals_1),
        "students_by_kind": {k: sum(1 for v in kinds.values() if v == k) for k in sorted(set(kinds.values()))},
        "totals": {s: {"kind": kinds[s], "1gpu": totals_1[s], "all": totals_all.get(s)} for s in sorted(totals_1)},
    }
    (args.out / "batch_throughput.json").write_text(json.dumps(result, indent=1) + "\n")
    shutil.copy(args.out / "graded_all" / "scores.csv", args.out / "scores_all.csv")
    for student, row in result["totals"].items():
        print(f"{student}  {row['kind']:<28} {row['1gpu']:7.2f} {row['all']:7.2f}")
    print(f"{args.students} submissions: 1 GPU {one:.0f} s, {n} GPUs {every:.0f} s, {one / every:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
