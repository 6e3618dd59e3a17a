#!/bin/bash
# 2026-12-06, fourth session: tiles around the TMA bonus's at 4096^3 and 8192^3 (tiling_tma_probe.py --more), then on
# an H200 the tiling assignment's five gradings and bench with the bonus, the centred INT4 decode and the W4A16 bench
# at every M with GemLite (next_gpu_session.sh's steps). OUT must be set.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
t0=$(date +%s)
OUT=$W timeout 150 python3 results/provenance/tiling_tma_probe.py --more > "$W/tiling_tma_probe_more.txt" 2>&1
echo "tma probe --more: exit $?, $(( $(date +%s) - t0 )) s"; tail -6 "$W/tiling_tma_probe_more.txt"
if grep -q H200 "$W/gpu.txt"; then
  OUT=$OUT STEPS="${STEPS:-tiling kv gemlite}" bash results/provenance/next_gpu_session.sh 2>&1 | tail -30
  tar -xzf "$OUT/results.tar.gz" -C "$W" 2>/dev/null; rm -f "$OUT/results.tar.gz"
fi
tar -czf "$OUT/results.tar.gz" -C "$W" .
