#!/bin/bash
# 2026-12-06, fourth session, third device call: five gradings of the tiling assignment with the TMA bonus (its
# thresholds against the runs), then on an H200 the centred INT4 decode and the W4A16 bench at every M with
# GemLite (results/provenance/next_gpu_session.sh's steps). OUT must be set.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
t0=$(date +%s)
timeout 300 python3 scripts/stability.py tiling --runs 5 --out "$W/stability_tiling_2026-12-06.json" > "$W/stability_tiling.txt" 2>&1
echo "tiling stability: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^\| " "$W/stability_tiling_2026-12-06.md" | head -12
if grep -q H200 "$W/gpu.txt"; then
  OUT=$OUT STEPS="${STEPS:-kv gemlite}" bash results/provenance/next_gpu_session.sh 2>&1 | tail -30
  tar -xzf "$OUT/results.tar.gz" -C "$W" 2>/dev/null; rm -f "$OUT/results.tar.gz"
fi
tar -czf "$OUT/results.tar.gz" -C "$W" .
