#!/bin/bash
# 2026-12-06 (second session): where a reduce-overhead replay's host time goes with CUDA graph trees on (issue 20).
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 results/provenance/ro_trees_profile.py $OUT 16 > $OUT/trees_profile.txt 2>&1; echo "rc $?"
grep -v "^W1206" $OUT/trees_profile.txt | grep -v "^\s*$" | tail -45
