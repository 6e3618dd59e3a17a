#!/usr/bin/env bash
# The session's last device call: regrade quant_matmul on the GPU tier, then five-run stability per
# assignment in the order given, each bounded, all into $OUT/results.tar.gz.
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_last}; W=$OUT/work; mkdir -p "$W"
timeout 120 python3 -m autograder grade quant_matmul --solutions --device cuda --skip-doctor --json "$W/grade_quant_matmul_gpu_tier.json" > "$W/grade_quant_matmul.txt" 2>&1
grep -E "^09|speed" "$W/grade_quant_matmul.txt" | cut -c1-220
for s in ${STAB:-quant_matmul tiling coalescing flash_attention}; do
  timeout ${LIMIT:-240} python3 scripts/stability.py "$s" --runs 5 --out "$W/stability_$s.json" > "$W/stability_$s.txt" 2>&1
  grep -E "^\| $s" "$W/stability_$s.md" | cut -c1-230
  tar -czf "$OUT/results.tar.gz" -C "$W" .
done
