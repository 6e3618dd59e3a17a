#!/bin/bash
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
timeout 120 python3 .diag/tiling_launch.py > $OUT/tiling_launch.txt 2>&1; cat $OUT/tiling_launch.txt | tail -6
timeout 300 python3 -m autograder grade tiling --solutions --device cuda > $OUT/grade_tiling.txt 2>&1; tail -25 $OUT/grade_tiling.txt
