#!/bin/bash
# 2026-12-06, fifth session: module 04 graded on the GPU tier with the check that the TMA bonus launches its own
# kernel with descriptors (346d934, written after the last device call), the solution and the three wrong TMA
# submissions; then the TMA kernel's tiles at small sizes (tiling_tma_small_probe.py). OUT must be set.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
if [ -n "${ONLY_ON:-}" ] && ! grep -q "$ONLY_ON" "$W/gpu.txt"; then echo "not an $ONLY_ON: nothing run"; exit 0; fi
t0=$(date +%s)
timeout 150 python3 -m autograder grade tiling --solutions --device cuda --skip-doctor --json "$W/grade_tiling_solution.json" > "$W/grade_tiling_solution.txt" 2>&1
echo "solution graded: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "tiling.tma|^Total" "$W/grade_tiling_solution.txt" | head -8
for w in wrong_tma_routed_to_matmul wrong_tma_decoy_launch wrong_tma_acc_not_reset; do
  t0=$(date +%s)
  timeout 120 python3 -m autograder grade tiling --submission tests/submissions/tiling/$w.py --device cuda --skip-doctor --json "$W/grade_$w.json" > "$W/grade_$w.txt" 2>&1
  echo "$w: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^Total|tiling\.tma" "$W/grade_$w.txt" | head -4
done
t0=$(date +%s)
OUT=$W timeout 300 python3 results/provenance/tiling_tma_small_probe.py > "$W/small_probe.txt" 2>&1
echo "small probe: exit $?, $(( $(date +%s) - t0 )) s"; cat "$W/small_probe.txt" | tail -14
tar -czf "$OUT/results.tar.gz" -C "$W" .
