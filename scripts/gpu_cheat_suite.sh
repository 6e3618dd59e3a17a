#!/usr/bin/env bash
# The whole cheat suite on a GPU (issue 15): every cheat in tests/submissions/cheats/ against every
# assignment, graded on the GPU (the CPU tier's small cases, float32, on device cuda: the worker, the
# replayer and their kernels all on the GPU). Eight graders run at once
# (pytest-xdist), each with its zygote, worker and replayer. Writes $OUT/results.tar.gz holding
# cheat_suite.txt (one line per cheat and assignment: what it got, and the sentence), pytest.txt and
# gpu.txt; prints the summary. Commit cheat_suite.txt as results/<gpu>/cheat_suite.txt.
# Usage (repository root, on a GPU machine):  OUT=/some/dir bash scripts/gpu_cheat_suite.sh
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_cheat_suite}; W=$OUT/work; mkdir -p "$W/report"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
start=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda AUTOGRADER_CHEAT_REPORT="$W/report" timeout "${LIMIT:-540}" \
  python3 -m pytest tests/test_integrity.py -q -o addopts="" -p no:cacheprovider -n "${JOBS:-8}" > "$W/pytest.txt" 2>&1
echo "pytest exit $? after $(( $(date +%s) - start )) s: $(tail -1 "$W/pytest.txt")"
python3 - "$W" <<'EOF'
import datetime, glob, sys
import torch, triton
work = sys.argv[1]
rows = sorted({tuple(line.rstrip("\n").split("\t")) for f in glob.glob(f"{work}/report/*.tsv") for line in open(f)},
              key=lambda r: (r[1], r[0]))
gpu = open(f"{work}/gpu.txt").read().strip()
summary = open(f"{work}/pytest.txt").read().strip().splitlines()[-1:]
with open(f"{work}/cheat_suite.txt", "w") as out:
    out.write(f"# The cheat suite on {gpu}; torch {torch.__version__}, triton {triton.__version__}; "
              f"{datetime.date.today()}\n# pytest: {' '.join(summary)}\n")
    out.write("# cheat | assignment | graded | status | points | the sentence it got\n")
    for slug, cheat, kind, status, points, sentence in rows:
        out.write(f"{cheat} | {slug} | {kind} | {status} | {points} | {sentence}\n")
    scored = [r for r in rows if not r[4].startswith("0/")]
    out.write(f"# {len(rows)} gradings; {len(scored)} scored points\n")
print(f"{len(rows)} cheat gradings recorded; scored points: {[r[:2] for r in rows if not r[4].startswith('0/')]}")
EOF
grep -E "^(FAILED|ERROR)" "$W/pytest.txt" | head -30
tar -czf "$OUT/results.tar.gz" -C "$W" cheat_suite.txt pytest.txt gpu.txt
