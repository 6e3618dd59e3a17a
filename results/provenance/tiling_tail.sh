#!/bin/bash
# On a GPU: the wave-quantization sweep of module 04's matmul (tiling_tail_sweep.py), then the tiling assignment
# graded with the solutions (every GPU case, split launches included). Output under $OUT.
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
timeout ${SWEEP_S:-330} python3 results/provenance/tiling_tail_sweep.py --out $OUT > $OUT/tiling_tail_sweep.txt 2>&1
echo "sweep rc $?"
timeout ${GRADE_S:-200} python3 -m autograder grade tiling --solutions --device cuda --json $OUT/grade_tiling.json > $OUT/grade_tiling.txt 2>&1
echo "grade rc $?"
grep -E "FAIL|ERROR|Total|points" $OUT/grade_tiling.txt | head -12
cat $OUT/tiling_tail_sweep.txt
