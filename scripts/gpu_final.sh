#!/usr/bin/env bash
# One device call after a merge: grade every solution on the GPU tier (one JSON per assignment), check the
# stubs score zero there, and optionally run the stability and extra profiling measurements.
# Usage (repository root, on a GPU machine): OUT=/some/dir SLUGS="rmsnorm rope" bash scripts/gpu_final.sh
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_final}; mkdir -p "$OUT"
SLUGS=${SLUGS:-$(python3 -c "from autograder.specs import SLUGS; print(' '.join(SLUGS))")}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for s in $SLUGS; do
  start=$(date +%s)
  python3 -m autograder grade "$s" --solutions --device cuda --skip-doctor --json "$OUT/grade_${s}_gpu_tier.json" > "$OUT/grade_$s.txt" 2>&1
  echo "$s solutions: $(grep -E '^[0-9]+ .*points' "$OUT/grade_$s.txt" | tail -1) ($(( $(date +%s) - start )) s)"
done
[ -n "${SKIP_STUBS:-}" ] || { python3 -m autograder grade $SLUGS --device cuda --skip-doctor --max-cases 1 > "$OUT/grade_stubs.txt" 2>&1; grep -E "^Total" "$OUT/grade_stubs.txt"; }
[ -z "${MLP:-}" ] || SECTIONS=mlp_scaling_large python3 scripts/profiling_experiments.py > "$OUT/mlp_large.txt" 2>&1
[ -z "${STABILITY:-}" ] || python3 scripts/stability.py $STABILITY --runs 5 --out "$OUT/stability.json" > "$OUT/stability.txt" 2>&1
grep -h -E "FAIL|ERROR|TIMEOUT" "$OUT"/grade_*.txt | grep -v "^grade_stubs" | head -20
