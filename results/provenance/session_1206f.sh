#!/bin/bash
# 2026-12-06 (second session), last GPU call: the decode comparison in interleaved rounds once more (issue 20).
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 400 python3 results/provenance/ro_rounds.py $OUT 1 4 8 16 > $OUT/ro_rounds.txt 2>&1; echo "rounds rc $?"
grep -E "^\|" $OUT/ro_rounds.txt
