cd "$(dirname "$0")/.." && mkdir -p $OUT/ncu
timeout 120 python3 .diag/tiling_best.py 2>&1 | tail -6 | tee $OUT/ncu/tiling_best.txt
NCU=/usr/local/cuda/bin/ncu
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats"
WHO=solution timeout 200 $NCU --target-processes all --kernel-name _attn_fwd_kernel --launch-skip 2 --launch-count 1 $S python3 .diag/flash_child.py > $OUT/ncu/flash_solution.txt 2>&1; echo "solution rc=$?"
WHO=cudnn timeout 200 $NCU --target-processes all --launch-skip 4 --launch-count 4 --section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis python3 .diag/flash_child.py > $OUT/ncu/flash_cudnn.txt 2>&1; echo "cudnn rc=$?"
for f in flash_solution flash_cudnn; do echo "== $f"; grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Shared Memory Config|Executed Ipc Active|Issue Slots Busy|Warp Cycles Per Issued|Dynamic Shared" $OUT/ncu/$f.txt | sed 's/  */ /g' | head -40; done
