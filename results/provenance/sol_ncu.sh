cd "$(dirname "$0")/.." && mkdir -p $OUT/ncu
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__occupancy_limit_registers,smsp__inst_executed.sum
for c in softmax_vocab128k:_softmax_kernel softmax_vocab32k:_softmax_kernel decode4096:_attn_decode_split_kernel w4a16_m1:_w4a16_gemv_kernel; do
  case=${c%%:*}; kern=${c##*:}
  CASE=$case timeout 150 /usr/local/cuda/bin/ncu --target-processes all --kernel-name $kern --launch-skip 2 --launch-count 1 --metrics $M python3 .diag/sol_child.py > $OUT/ncu/$case.txt 2>&1
  echo "== $case ($kern) rc=$?"; grep -E "gpu__time|dram__bytes|lts__t_sector_hit|dram__throughput|sm__throughput|warps_active|registers_per|grid_size|occupancy_limit|inst_executed" $OUT/ncu/$case.txt | sed 's/  */ /g'
done
nvidia-smi --query-gpu=name --format=csv,noheader
