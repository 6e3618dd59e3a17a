#!/bin/bash
# Direct launch: correctness of every GPU case, then host cost before/after (this tree = before, .diag/lean2_after = after)
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
ROOT=$PWD; W=$OUT/w; mkdir -p $W
( cd .diag/lean2_after && PYTHONPATH=$PWD timeout 170 python3 $ROOT/.diag/direct_check.py > $W/direct_check.txt 2>&1; echo "check rc=$?" )
tail -4 $W/direct_check.txt; grep -c "WRONG\|ERROR" $W/direct_check.txt
for rep in $(seq ${REPS:-2}); do
for side in after before; do
  dir=$([ $side = before ] && echo $ROOT || echo $ROOT/.diag/lean2_after)
  ( cd $dir && PYTHONPATH=$dir timeout ${HTIME:-120} python3 $ROOT/.diag/lean_host.py $W/${side}_$rep > $W/lean_${side}_$rep.txt 2>&1; echo "$side $rep rc=$?" )
done; done
python3 scripts/llama_block_bench.py --out $W --ab > $W/ab.txt 2>&1; tail -45 $W/ab.txt
tar -czf $OUT/lean2.tar.gz -C $W .
