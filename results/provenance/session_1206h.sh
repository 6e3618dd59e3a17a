#!/bin/bash
# 2026-12-06, fourth session, first device call: the TMA matmul probe (results/provenance/tiling_tma_probe.py)
# on whatever GPU comes, then on an H200 the runs of next_gpu_session.sh that fit beside it (the centred INT4
# decode, tolerance margins, the W4A16 bench at every M with GemLite). OUT must be set.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
t0=$(date +%s)
OUT=$W timeout 220 python3 results/provenance/tiling_tma_probe.py > "$W/tiling_tma_probe.txt" 2>&1
echo "tma probe: exit $?, $(( $(date +%s) - t0 )) s"; tail -14 "$W/tiling_tma_probe.txt"
if grep -q H200 "$W/gpu.txt"; then
  OUT=$OUT STEPS="${STEPS:-kv margins gemlite}" bash results/provenance/next_gpu_session.sh 2>&1 | tail -40
  tar -xzf "$OUT/results.tar.gz" -C "$W" 2>/dev/null; rm -f "$OUT/results.tar.gz"
fi
tar -czf "$OUT/results.tar.gz" -C "$W" .
