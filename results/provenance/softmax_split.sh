#!/bin/bash
# On a GPU: the softmax row split (issue 22). The probe of split forms (softmax_split_probe.py, with PROBE=1), the
# solution against the kernel it replaced (softmax_split_ab.py), the fusion bench and the fusion assignment graded
# with the solutions. Output under $OUT.
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
if [ -n "$PROBE" ]; then
  timeout 200 python3 results/provenance/softmax_split_probe.py $OUT/softmax_split_probe.json $OUT/softmax_split_probe.md > $OUT/probe.txt 2>&1
  echo "probe rc $?"
fi
timeout 200 python3 results/provenance/softmax_split_ab.py $OUT/softmax_split.json $OUT/softmax_split.md > $OUT/ab.txt 2>&1
echo "ab rc $?"
timeout 200 python3 -m autograder grade fusion --solutions --device cuda --json $OUT/grade_fusion.json > $OUT/grade_fusion.txt 2>&1
echo "grade rc $?"
grep -E "FAIL|ERROR|Total|points|wrong" $OUT/grade_fusion.txt | head -12
timeout 240 python3 -m autograder bench fusion --out $OUT/bench > $OUT/bench.txt 2>&1
echo "bench rc $?"
tail -5 $OUT/bench.txt
cat $OUT/softmax_split.md
[ -n "$PROBE" ] && tail -20 $OUT/softmax_split_probe.md
cd $OUT && tar czf all.tgz * && find . -mindepth 1 ! -name all.tgz -delete  # one file back, whatever ran
