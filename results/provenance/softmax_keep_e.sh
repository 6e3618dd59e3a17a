#!/bin/bash
# On a GPU: the split softmax keeping exponentials (softmax_keep_e_ab.py), then the fusion assignment graded with the
# solutions. Output under $OUT, packed into one file.
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 results/provenance/softmax_keep_e_ab.py $OUT/softmax_keep_e.json $OUT/softmax_keep_e.md > $OUT/keep_e.txt 2>&1
echo "ab rc $?"
timeout 200 python3 -m autograder grade fusion --solutions --device cuda --json $OUT/grade_fusion.json > $OUT/grade_fusion.txt 2>&1
echo "grade rc $?"
grep -E "FAIL|ERROR|Total|timeout" $OUT/grade_fusion.txt | head -8
cat $OUT/softmax_keep_e.md
cd $OUT && tar czf all.tgz * && find . -mindepth 1 ! -name all.tgz -delete
