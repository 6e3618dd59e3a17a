#!/bin/bash
# results/h200/ncu_w4a16/m1_stalls_{solution,thread_rows}.txt: why the W4A16 GEMV's warps wait (lecture 09, section 7).
# Each stall reason in cycles per issued instruction, with the scheduler and occupancy sections, one launch.
for W in solution thread_rows; do
  WHICH=$W /usr/local/cuda/bin/ncu --section SchedulerStats --section WarpStateStats --section Occupancy \
    --section SpeedOfLight --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    -k regex:gemv -s 2 -c 1 python results/provenance/w4a16_stalls_child.py > $OUT/m1_stalls_$W.txt 2>&1
done
