#!/bin/bash
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
BATCHES=1,16 timeout 250 python3 .diag/ro_diag.py > $OUT/ro_trees.txt 2>&1; grep -E "^B=|cudagraph|Error" $OUT/ro_trees.txt
TREES=0 BATCHES=1,16 timeout 250 python3 .diag/ro_diag.py > $OUT/ro_notrees.txt 2>&1; grep -E "^B=|cudagraph|Error" $OUT/ro_notrees.txt
