#!/bin/bash
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 560 python3 -m autograder grade flash_attention rmsnorm tiling --solutions --device cuda --json $OUT/grade_three.json > $OUT/grade_three.txt 2>&1
grep -E "points|Total|Graded in|FAIL|ERROR" $OUT/grade_three.txt | head -20
grep -E "kv_int4" $OUT/grade_three.txt | grep -E "12x1x128|speed" | cut -c1-200
