#!/bin/bash
# results/<gpu>/ncu_w4a16/m{1,16}_4096x14336.txt: the W4A16 GEMV (M=1) and dot kernel (M=16), one launch each.
for M in 16 1; do
  M=$M /usr/local/cuda/bin/ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
    --section WarpStateStats --section Occupancy --section LaunchStats -k regex:_w4a16_ -s 2 -c 1 \
    python .diag/w4a16_ncu_child.py > $OUT/ncu_w4_m$M.txt 2>&1
done
