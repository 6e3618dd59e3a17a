#!/bin/bash
# 2026-12-06, third session: one device call. Every solution's speed cases checked on 20 new inputs each
# (scripts/tolerance_margins.py), the grader's new checked-error field seen through one stability run of rope,
# then, on an H200, the runs the H100 had that day (the centred INT4 decode, five gradings of the assignments
# whose H200 runs predate their code). OUT must be set.
set -u
W=$OUT/work; mkdir -p "$W"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
export PYTHONUNBUFFERED=1
t0=$(date +%s)
timeout 240 python scripts/tolerance_margins.py --inputs ${INPUTS:-20} --out "$W/tolerance_margins.json" > "$W/tolerance_margins.txt" 2>&1
echo "margins: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^\| " "$W/tolerance_margins.md" 2>/dev/null | head -8
t0=$(date +%s)
timeout 60 python scripts/stability.py rope --runs 1 --out "$W/stability_rope_one.json" > "$W/stability_rope_one.txt" 2>&1
echo "rope stability: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^\| rope" "$W/stability_rope_one.md"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 60 python results/provenance/kv_int4_centred_gpu.py "$W" 30
  OUT=$W/h200 STAGES=stability SLUGS="flash_attention rope swiglu coalescing" BUDGET=${BUDGET:-250} bash scripts/gpu_run.sh | tail -8
fi
tar -czf "$OUT/results.tar.gz" -C "$W" .
