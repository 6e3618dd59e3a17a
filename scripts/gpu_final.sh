#!/usr/bin/env bash
# One device call after a merge: grade the solutions on the GPU tier (one JSON per assignment), check that
# the stubs score zero there, and optionally run five-run stability and the compute-bound MLP scaling of
# module 01. Everything lands in $OUT/results.tar.gz (a device call returns only a few files).
# Usage (repository root, on a GPU machine):
#   OUT=/some/dir [SLUGS="rmsnorm rope"] [STABILITY="tiling quant_matmul"] [MLP=1] bash scripts/gpu_final.sh
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_final}; W=$OUT/work; mkdir -p "$W"
SLUGS=${SLUGS-$(python3 -c "from autograder.specs import SLUGS; print(' '.join(SLUGS))")}
pack() { tar -czf "$OUT/results.tar.gz" -C "$W" .; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
for s in $SLUGS; do
  start=$(date +%s)
  python3 -m autograder grade "$s" --solutions --device cuda --skip-doctor --json "$W/grade_${s}_gpu_tier.json" > "$W/grade_$s.txt" 2>&1
  echo "$s solutions: $(grep -E '^[0-9]+ .*points' "$W/grade_$s.txt" | tail -1) ($(( $(date +%s) - start )) s)"
  pack
done
if [ -n "$SLUGS" ] && [ -z "${SKIP_STUBS:-}" ]; then
  python3 -m autograder grade $SLUGS --device cuda --skip-doctor --max-cases 1 > "$W/grade_stubs.txt" 2>&1
  grep -E "^Total" "$W/grade_stubs.txt"
fi
[ -z "${MLP:-}" ] || SECTIONS=mlp_scaling_large OUT="$W/mlp" python3 scripts/profiling_experiments.py > "$W/mlp.txt" 2>&1
for s in ${STABILITY:-}; do  # one process per assignment, so a cut-off run keeps what finished
  timeout ${LIMIT:-240} python3 scripts/stability.py "$s" --runs 5 --out "$W/stability_$s.json" > "$W/stability_$s.txt" 2>&1
  grep -E "^\| $s" "$W/stability_$s.md" | cut -c1-230
  pack
done
pack
grep -h -E "FAIL|ERROR|TIMEOUT" "$W"/grade_*.txt 2>/dev/null | grep -v "speed" | head -20
