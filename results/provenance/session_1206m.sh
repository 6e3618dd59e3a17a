#!/bin/bash
# 2026-12-06, fourth session: the TMA bonus with its balanced grid (as few programs as keep the fewest rounds of
# tiles): timed as shipped, five gradings, the tiling bench; STEPS adds next_gpu_session.sh's steps; ONLY_ON=H200
# runs nothing on another GPU. OUT must be set.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
if [ -n "${ONLY_ON:-}" ] && ! grep -q "$ONLY_ON" "$W/gpu.txt"; then echo "not an $ONLY_ON: nothing run"; exit 0; fi
t0=$(date +%s)
OUT=$W timeout 120 python3 results/provenance/tiling_tma_solution.py > "$W/tiling_tma_solution.txt" 2>&1
echo "tma solution: exit $?, $(( $(date +%s) - t0 )) s"; head -5 "$W/tiling_tma_solution.txt"
t0=$(date +%s)
timeout 200 python3 scripts/stability.py tiling --runs 5 --out "$W/stability_tiling_2026-12-06.json" > "$W/stability_tiling.txt" 2>&1
echo "tiling stability: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "tiling.tma" "$W/stability_tiling_2026-12-06.md"
mkdir -p "$W/bench"; timeout 150 python3 -m autograder bench tiling --out "$W/bench" > "$W/bench/bench_tiling.txt" 2>&1
echo "tiling bench: exit $?"; grep -E "TMA" "$W/bench/tiling.md" | head -30
if [ -n "${STEPS:-}" ]; then  # next_gpu_session.sh's steps (an H200's: kv, margins, gemlite)
  OUT=$OUT STEPS="$STEPS" bash results/provenance/next_gpu_session.sh 2>&1 | tail -20
  tar -xzf "$OUT/results.tar.gz" -C "$W" 2>/dev/null; rm -f "$OUT/results.tar.gz"
fi
tar -czf "$OUT/results.tar.gz" -C "$W" .
