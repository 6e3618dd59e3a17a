#!/usr/bin/env bash
# One call on a two-GPU machine: the five-run stability of every solution's speed cases (half the
# assignments on each GPU, at once), batch-grading throughput on one GPU against two, and the
# compute-bound MLP scaling run of module 01. Everything lands in $OUT/results.tar.gz.
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_two}; W=$OUT/work; mkdir -p "$W"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 scripts/stability.py flash_attention fusion rope coalescing --runs 5 --out "$W/stability_a.json" > "$W/stability_a.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 330 python3 scripts/stability.py quant_matmul tiling rmsnorm swiglu --runs 5 --out "$W/stability_b.json" > "$W/stability_b.txt" 2>&1 &
wait
tail -n 30 "$W"/stability_*.md 2>/dev/null | cut -c1-200
timeout 200 python3 scripts/batch_throughput.py rmsnorm --out "$W/batch" --students 8 --max-cases 1 > "$W/batch.txt" 2>&1
tail -n 2 "$W/batch.txt"
CUDA_VISIBLE_DEVICES=0 SECTIONS=mlp_scaling_large OUT="$W/mlp" BUDGET_S=60 timeout 80 python3 scripts/profiling_experiments.py > "$W/mlp.txt" 2>&1
grep "mlp" "$W/mlp.txt" | tail -9
rm -rf "$W/batch/class" "$W/batch"/graded_*/work
tar -czf "$OUT/results.tar.gz" -C "$W" .
