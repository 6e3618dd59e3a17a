#!/bin/bash
# 2026-12-06, fourth session, second device call: the TMA bonus of module 04 as shipped (matmul_tma) timed beside
# the probe and cuBLAS, float32 tiles for its table; the tiling assignment graded on the GPU tier; on an H200 the
# TMA probe too. OUT must be set.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
t0=$(date +%s)
OUT=$W timeout 200 python3 results/provenance/tiling_tma_solution.py > "$W/tiling_tma_solution.txt" 2>&1
echo "tma solution: exit $?, $(( $(date +%s) - t0 )) s"; tail -9 "$W/tiling_tma_solution.txt"
t0=$(date +%s)
timeout 240 python3 -m autograder grade tiling --solutions --device cuda --skip-doctor --json "$W/grade_tiling_gpu_tier.json" > "$W/grade_tiling.txt" 2>&1
echo "grade: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "FAIL|ERROR|speed|points" "$W/grade_tiling.txt" | tail -14
if grep -q H200 "$W/gpu.txt"; then
  OUT=$W timeout 150 python3 results/provenance/tiling_tma_probe.py > "$W/tiling_tma_probe.txt" 2>&1; tail -14 "$W/tiling_tma_probe.txt"
fi
tar -czf "$OUT/results.tar.gz" -C "$W" .
