# Flash attention forward at 512 tokens (4 x 32 heads, d = 128, bf16), the solution's kernel against cuDNN's, under
# Nsight Compute: how busy the SMs and their tensor pipes are over the launch. From the repository root on a GPU.
#     OUT=/some/dir bash results/provenance/flash_short_ncu.sh
export PYTHONPATH=$PWD
NCU=/usr/local/cuda/bin/ncu
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
METRICS="--metrics sm__cycles_active.avg,sm__cycles_elapsed.avg,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"
mkdir -p $OUT/ncu_flash_short
for causal in 0 1; do
  S=512 CAUSAL=$causal WHO=solution timeout 200 $NCU --kernel-name _attn_fwd_kernel --launch-skip 2 --launch-count 1 \
    $SECTIONS $METRICS python3 results/provenance/flash_short_child.py > $OUT/ncu_flash_short/solution_512_causal$causal.txt 2>&1
  S=512 CAUSAL=$causal WHO=cudnn timeout 200 $NCU --kernel-name regex:fprop --launch-skip 2 --launch-count 1 \
    $SECTIONS $METRICS python3 results/provenance/flash_short_child.py > $OUT/ncu_flash_short/cudnn_512_causal$causal.txt 2>&1
done
cd $OUT/ncu_flash_short && grep -E "Duration|sm__cycles_active.avg|sm__cycles_elapsed.avg|gmma_cycles_active|pipe_xu|Grid Size|Registers Per|Issue Slots Busy|Achieved Occupancy|Waves Per SM" *.txt | sed 's/  */ /g'
