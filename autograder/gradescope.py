"""The Gradescope autograder bundle, and what runs inside it.

`python -m autograder gradescope [SLUG...]` writes a zip with setup.sh (installs the pinned CPU stack),
run_autograder (grades /autograder/submission into /autograder/results/results.json) and the grader itself
(autograder/, course/, pyproject.toml, and each assignment's launch settings, assignments/<slug>/configs.json,
for a kernels.py uploaded without its table). The solutions, tests and notebooks stay out of it.

Gradescope's machines have no GPU, so the bundle grades the CPU tier (Triton's interpreter, float32) and
says so in the results; speed is graded on a GPU with `make grade` or `python -m autograder batch`.
"""

from __future__ import annotations

import argparse
import os
import re
import stat
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CPU_NOTE = (
    "Graded on the CPU tier: Gradescope has no GPU, so your kernels ran in Triton's interpreter in float32 "
    "and speed was not graded. On a GPU, `make grade` grades every dtype and your speed."
)

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, in /autograder/source, when it builds the autograder image (Ubuntu 24.04).
set -euo pipefail
apt-get update -qq
apt-get install -y -qq python3 python3-venv python3-pip > /dev/null
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -q --upgrade pip
# torch's CPU build: Gradescope has no GPU, and the CUDA build is gigabytes larger.
/autograder/venv/bin/pip install -q --extra-index-url https://download.pytorch.org/whl/cpu {pins}
/autograder/venv/bin/pip install -q --no-deps /autograder/source
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. The variables let the course's tests run it outside Gradescope.
ROOT=${{AUTOGRADER_ROOT:-/autograder}}
SOURCE=${{AUTOGRADER_SOURCE:-$ROOT/source}}
PY=${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}
cd "$SOURCE"
export TRITON_INTERPRET=1 PYTHONPATH="$SOURCE"
exec "$PY" -m autograder.gradescope --root "$ROOT" {slugs}
"""


def _runtime_pins() -> list[str]:
    """The pinned runtime requirements of pyproject.toml (the dev extras are not needed to grade)."""
    text = (REPO_ROOT / "pyproject.toml").read_text()
    block = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.S | re.M)
    if block is None:
        raise RuntimeError("pyproject.toml has no dependencies list")
    return re.findall(r'"([^"]+==[^"]+)"', block.group(1))


def build_bundle(slugs: list[str], out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    pins = " ".join(f"'{p}'" for p in _runtime_pins())
    files: dict[str, bytes] = {
        "setup.sh": SETUP_SH.format(pins=pins).encode(),
        "run_autograder": RUN_AUTOGRADER.format(slugs=" ".join(slugs)).encode(),
        "pyproject.toml": (REPO_ROOT / "pyproject.toml").read_bytes(),
        "README.md": f"Autograder for {', '.join(slugs)}; built by `python -m autograder gradescope`.\n".encode(),
    }
    for package in ("autograder", "course"):
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            files[str(path.relative_to(REPO_ROOT))] = path.read_bytes()
    for slug in slugs:  # the launch settings a lone kernels.py falls back on (course/configs.py)
        table = REPO_ROOT / "assignments" / slug / "configs.json"
        files[str(table.relative_to(REPO_ROOT))] = table.read_bytes()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # the same bytes for the same sources
            info.external_attr = ((0o755 if name in ("setup.sh", "run_autograder") else 0o644) | stat.S_IFREG) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return out


def find_submission(folder: Path, slugs: list[str]) -> dict[str, Path]:
    """slug -> the student's kernels.py in Gradescope's submission folder (SLUG/kernels.py, or kernels.py alone)."""
    found: dict[str, Path] = {}
    candidates = sorted(p for p in folder.rglob("kernels.py") if "__MACOSX" not in p.parts)
    for slug in slugs:
        for path in candidates:
            if path.parent.name == slug:
                found[slug] = path
                break
    if len(slugs) == 1 and slugs[0] not in found and candidates:
        found[slugs[0]] = candidates[0]
    return found


def run_autograder(root: Path, slugs: list[str]) -> int:
    """Grade root/submission on the CPU tier and write root/results/results.json."""
    from autograder.concurrent import grade_assignments
    from autograder.grade import AssignmentResult, CaseResult
    from autograder.report import write_json
    from autograder.runner import end_every_child, guard_the_grader
    from autograder.specs import load_spec

    results_path = root / "results" / "results.json"
    files = find_submission(root / "submission", slugs)
    found = [slug for slug in slugs if slug in files]
    guard_the_grader()
    graded = dict(zip(found, grade_assignments({slug: files[slug] for slug in found}, "cpu",
                                               progress=lambda slug: lambda s: print(s, flush=True))))  # fmt: skip
    end_every_child()  # nothing a submission started may outlive the grading and rewrite results.json
    results = []
    for slug in slugs:
        if slug in graded:
            results.append(graded[slug])
            continue
        spec = load_spec(slug)
        missing = AssignmentResult(slug, spec.title, "cpu", [])
        for part in spec.parts:
            points = part.points
            missing.cases.append(CaseResult(
                part.task, "submission", "error", 0.0, points, bonus=part.bonus,
                message=f"No {slug}/kernels.py was found in your upload: upload the folder assignments/{slug}/ "
                        f"(or its kernels.py alone) and submit again.",
            ))  # fmt: skip
        results.append(missing)
    from autograder.hints import used

    hints = {task: levels for path in files.values() for task, levels in used(path.parent).items()}
    write_json(results_path, results, CPU_NOTE, hints)
    print(f"wrote {results_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder.gradescope")
    p.add_argument("--root", type=Path, default=Path("/autograder"))
    p.add_argument("slugs", nargs="+")
    args = p.parse_args(argv)
    os.environ.setdefault("TRITON_INTERPRET", "1")
    return run_autograder(args.root, args.slugs)


if __name__ == "__main__":
    sys.exit(main())
