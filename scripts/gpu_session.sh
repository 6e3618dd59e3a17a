#!/usr/bin/env bash
# One device call: check the install, grade solutions and stubs on the GPU tier, tune, and benchmark.
# Usage (repository root, on a GPU machine): OUT=/some/dir bash scripts/gpu_session.sh [quick]
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_session}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -m autograder doctor
python3 -m autograder grade --solutions --device cuda --json "$OUT/grade_solutions.json" > "$OUT/grade_solutions.txt" 2>&1; tail -5 "$OUT/grade_solutions.txt"
[ -n "${SKIP_STUBS:-}" ] || { python3 -m autograder grade --device cuda > "$OUT/grade_stubs.txt" 2>&1; tail -3 "$OUT/grade_stubs.txt"; }
[ -n "${SKIP_TUNE:-}" ] || python3 scripts/tune_rmsnorm.py 2>&1 | tee "$OUT/tune.txt"
[ -z "${RUN_AB:-}" ] || python3 scripts/ab_evict.py 2>&1 | tee "$OUT/ab_evict.txt"  # concluded: hints were slower
python3 -m autograder bench rmsnorm ${1:+--quick} --out "$OUT/bench" > "$OUT/bench.log" 2>&1; tail -40 "$OUT/bench.log"
