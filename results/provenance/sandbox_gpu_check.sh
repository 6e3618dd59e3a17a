#!/bin/bash
# 2026-12-06, tenth session: the worker's confinement (autograder/sandbox.py) and the new guards on a GPU, where the
# worker compiles launchers (gcc), runs ptxas and cleans Triton's temporary directories under the submission's call
# (eleventh session: run at f05ed0c on an H100, results/h100/sandbox_gpu_check/; since then the replayer is confined
# too, nothing may be created in /dev but /dev/shm on a GPU, and the second, third and fourth red teams' cheats are in
# the pytest selection; twelfth session: all of it run at c2dd8b6 on an H100, results/h100/sandbox_gpu_check_2026-12-07/):
# two solutions graded quickly (rmsnorm; tiling, whose TMA bonus builds descriptors), then the honest solutions and
# the new cheats of the integrity suite on the GPU, then the red team's Triton-cache plant (carried in .redteam, not
# committed) against a control. OUT must be set; every step leaves its output in $OUT/results.tar.gz.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
pack() { tar -czf "$OUT/results.tar.gz" -C "$W" .; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
python3 -c "import torch, triton; from autograder.sandbox import landlock_abi; print('torch', torch.__version__, 'triton', triton.__version__, 'landlock ABI', landlock_abi())" | tee "$W/versions.txt"
t0=$(date +%s)
timeout 150 python3 -m autograder grade rmsnorm tiling --solutions --device cuda --skip-doctor --max-cases 1 > "$W/grade_solutions.txt" 2>&1
echo "grade: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "points|Total|refused|Permission" "$W/grade_solutions.txt" | head -12; pack
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_sandbox.py tests/test_integrity.py \
  -k "sandbox or landlock or process_through or move_into or native_module or alias_set or honest_solution or tensor_as_constexpr or host_function or forged_op or annotation_code or forged_input_layout or composite_op_record or baseline_setup_input" > "$W/pytest.txt" 2>&1
echo "pytest: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" "$W/pytest.txt" | tail -6; pack
if [ -d .redteam ]; then
  for sub in a2_control a2_cache_so a2_control; do
    timeout 100 python3 -m autograder grade swiglu --submission .redteam/$sub/swiglu/kernels.py --device cuda --skip-doctor \
      --max-cases 2 > "$W/redteam_$sub.txt" 2>&1
    echo "$sub: exit $? $(grep -E '^Total' "$W/redteam_$sub.txt")"
  done
  find ~/.triton -name "cuda_utils*" | head -5; pack
fi
