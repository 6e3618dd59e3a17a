#!/bin/bash
export PYTHONPATH=$PWD
for INFER in 0 1; do for TREES in 1 0; do
  INFER=$INFER TREES=$TREES BATCHES=1 timeout 150 python .diag/ro_diag.py > $OUT/ro_i${INFER}_t${TREES}.txt 2>&1
  grep -E "^inference|^B=|Error" $OUT/ro_i${INFER}_t${TREES}.txt
done; done
