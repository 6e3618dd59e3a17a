#!/bin/bash
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
mkdir -p $OUT/ncu
for c in old:_attn_decode_int4_split_kernel new:int4_split_v2 bf16:_attn_decode_split_kernel; do
  w=${c%%:*}; kern=${c##*:}
  WHICH=$w timeout 170 /usr/local/cuda/bin/ncu --target-processes all --kernel-name $kern --launch-skip 2 --launch-count 1 --set full python3 .diag/int4_ncu_child.py > $OUT/ncu/$w.txt 2>&1
  echo "== $w rc=$?"
  grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|Theoretical Occ|Bank Conflicts|Executed Ipc A|Warp Cycles Per Issued|No Eligible|Shared Memory Configuration|Dynamic Shared" $OUT/ncu/$w.txt | sed 's/  */ /g' | head -20
done
cd $OUT && tar czf ncu.tgz ncu && rm -rf ncu
