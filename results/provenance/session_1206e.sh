#!/bin/bash
# 2026-12-06 (second session): CheckedOnce no longer looks its set up while torch.compile traces (course/validate.py).
# Host time of a reduce-overhead step with the trees on, before (course/validate.py as of ff593fd) and after, batch 16 and 4; then the decode target in interleaved rounds with the change (issue 20).
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
cp course/validate.py /tmp/validate_after.py
git show ff593fd:course/validate.py > /tmp/validate_before.py  # (the run of 2026-12-06 carried this file in the tree)
for b in 16 4; do
  for v in after before; do
    if [ $v = before ]; then cp /tmp/validate_before.py course/validate.py; else cp /tmp/validate_after.py course/validate.py; fi
    timeout 120 python3 results/provenance/ro_trees_profile.py $OUT/profile_${v}_b$b $b > $OUT/profile_${v}_b$b.txt 2>&1
    echo "b$b $v rc $?: $(grep 'host' $OUT/profile_${v}_b$b.txt | tr '\n' ' ')"
  done
done
cp /tmp/validate_after.py course/validate.py
timeout 300 python3 results/provenance/ro_rounds.py $OUT/rounds 1 4 8 16 > $OUT/ro_rounds.txt 2>&1; echo "rounds rc $?"
grep -E "^B=|^\|" $OUT/ro_rounds.txt
cd $OUT && tar czf profiles.tgz profile_* && rm -rf profile_*
