"""On a GPU: the GPU tier's correctness cases, hostile ones included, for every solution, and the one-line bugs.

    python scripts/check_wrong_kernels_gpu.py --out OUT [SLUG ...]

For issue 18 (a grader that catches every wrong kernel), one device call checks what a CPU cannot:
1. each solution passes every GPU-tier correctness case (speed left out), in float32, float16 and bfloat16,
   the hostile distributions and the new tolerance scales (per row, per summed terms) included; the
   table gives the worst error as a fraction of the tolerance per part, so a margin that is too thin shows;
2. each bug of tests/submissions/<slug>/one_line_bugs.toml fails the GPU tier's hostile cases too.
Results go to OUT/check_wrong_kernels.json (rewritten after every assignment, so a run cut short keeps
what finished) and OUT/check_wrong_kernels.tar.gz; a short table is printed last.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))


def worst_fraction(message: str) -> float:
    """The 'max error X% of the tolerance' of a passed case, as a fraction."""
    found = re.search(r"max error ([0-9.e+-]+)% of the tolerance", message)
    return float(found.group(1)) / 100 if found else float("nan")


def bug_file(slug: str, bug: dict, folder: Path) -> Path:
    """The solution with the bug's one line replaced, as folder/<slug>/kernels.py."""
    lines = (REPO_ROOT / "solutions" / slug / "kernels.py").read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip() == bug["solution"]]
    if len(hits) != 1:
        raise ValueError(f"{slug}: the line `{bug['solution']}` occurs {len(hits)} times in the solution")
    line = lines[hits[0]]
    lines[hits[0]] = line[: len(line) - len(line.lstrip())] + bug["wrong"] + "\n"
    path = folder / slug / "kernels.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
    return path


def main() -> int:
    from autograder.grade import Selection, grade_assignment
    from autograder.specs import SLUGS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slugs", nargs="*", default=SLUGS)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict = {"solutions": {}, "bugs": {}}
    rows = []

    def save() -> None:
        (args.out / "check_wrong_kernels.json").write_text(json.dumps(report, indent=1))
        with tarfile.open(args.out / "check_wrong_kernels.tar.gz", "w:gz") as tar:
            tar.add(args.out / "check_wrong_kernels.json", arcname="check_wrong_kernels.json")

    no_speed = Selection(speed=False)
    for slug in args.slugs:
        start = time.time()
        result = grade_assignment(slug, REPO_ROOT / "solutions" / slug / "kernels.py", "cuda", seed=args.seed,
                                  selection=no_speed)
        cases = [c for c in result.cases if c.kind == "correctness"]
        report["solutions"][slug] = [{"task": c.task, "case": c.name, "status": c.status, "message": c.message,
                                      "fraction": worst_fraction(c.message)} for c in cases]
        for task in sorted({c.task for c in cases}):
            mine = [c for c in cases if c.task == task]
            hostile = [c for c in mine if "dist=" in c.name]
            worst = max((worst_fraction(c.message) for c in mine if c.status == "passed"), default=float("nan"))
            worst_hostile = max((worst_fraction(c.message) for c in hostile if c.status == "passed"), default=float("nan"))
            failed = [c.name for c in mine if c.status != "passed"]
            rows.append(f"{task:28s} {len(mine) - len(failed):3d}/{len(mine):<3d} worst {worst:6.1%} hostile {worst_hostile:6.1%}"
                        + (f"  FAILED: {'; '.join(failed)[:300]}" if failed else ""))
        print(f"{slug}: {time.time() - start:.0f} s", flush=True)
        save()
        bugs_file = REPO_ROOT / "tests" / "submissions" / slug / "one_line_bugs.toml"
        bugs = tomllib.loads(bugs_file.read_text()) if bugs_file.exists() else {}
        for name, bug in bugs.items():
            hostile_tasks = {key.split(" ", 1)[0] for key in bug["fails"]}
            with tempfile.TemporaryDirectory() as tmp:
                r = grade_assignment(slug, bug_file(slug, bug, Path(tmp)), "cuda", seed=args.seed,
                                     selection=Selection(tasks=hostile_tasks, speed=False))
            hostile = [c for c in r.cases if c.kind == "correctness" and "dist=" in c.name]
            caught = [c.name for c in hostile if c.status != "passed"]
            report["bugs"][name] = {"slug": slug, "hostile_cases": len(hostile), "caught_by": caught,
                                    "messages": [c.message[:300] for c in hostile if c.status != "passed"]}
            rows.append(f"bug {name:36s} caught by {len(caught)}/{len(hostile)} hostile GPU cases")
            save()
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
