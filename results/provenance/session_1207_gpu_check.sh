#!/bin/bash
# 2026-12-07, thirteenth session: the grader's fixes of red teams 5 to 8 on a GPU for the first time (out= overloads,
# row-major outputs, compacted setup tensors, the second W4A16 replay, the narrowed code generator; copies by schema,
# the grader's own launch on fresh bounded inputs, inputs left as found, checked timed calls drawn from every call, a
# timed call's storages poisoned after it, the baseline on its own inputs and memory pool, kept state poisoned past
# the allowance). In order of what matters most, packing after each step (a run cut short still brings back what it
# did): every solution on the GPU tier (one case each, speed included), the integrity selection with the new cheats on
# the GPU, then red teams 5-6's wrong submissions. OUT must be set; everything lands in $OUT/results.tar.gz.
# WRONG_TIMEOUT: seconds for each wrong submission's grading (100 unless set; speed cases are timed too).
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
pack() { tar -czf "$OUT/results.tar.gz" -C "$W" .; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee "$W/versions.txt"
t0=$(date +%s)
timeout 240 python3 -m autograder grade --solutions --device cuda --skip-doctor --max-cases 1 --json "$W/grade_solutions.json" > "$W/grade_solutions.txt" 2>&1
echo "grade --solutions: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "points|^Total" "$W/grade_solutions.txt" | tail -10; pack
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_integrity.py \
  -k "honest_solution or tensor_as_constexpr or host_function or forged_op or annotation_code or forged_input_layout or composite_op_record or baseline_setup_input or fill_from_tensor or cache_by_shape or replay_after_warmup or branch_on_timing" > "$W/pytest.txt" 2>&1
echo "pytest: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" "$W/pytest.txt" | tail -6; pack
for pair in tiling:wrong_tma_probe_reads_the_replay quant_matmul:wrong_weights_in_fill_values \
            coalescing:wrong_transposed_view_output quant_matmul:wrong_prepared_view_of_hidden_storage \
            coalescing:wrong_out_variant_copy; do
  a=${pair%%:*}; s=${pair##*:}; t0=$(date +%s)
  timeout ${WRONG_TIMEOUT:-100} python3 -m autograder grade $a --submission tests/submissions/$a/$s.py --device cuda --skip-doctor \
    --max-cases 2 > "$W/wrong_$s.txt" 2>&1
  echo "$s: exit $?, $(( $(date +%s) - t0 )) s, $(grep -E '^Total' "$W/wrong_$s.txt")"; pack
done
# A kernel that never ends (fourteenth session): on a GPU the worker is stuck waiting on the device; the case must time
# out, the rest of its part be reported as not run, and nothing be left running.
t0=$(date +%s)
timeout 200 python3 -m autograder grade rmsnorm --submission tests/submissions/rmsnorm/misbehave_kernel_spin.py --device cuda \
  --skip-doctor --timeout 20 > "$W/misbehave_kernel_spin.txt" 2>&1
echo "misbehave_kernel_spin: exit $?, $(( $(date +%s) - t0 )) s, $(grep -E '^Total' "$W/misbehave_kernel_spin.txt")"
grep -E "TIMEOUT|Timed out|Not run" "$W/misbehave_kernel_spin.txt" | head -4 | cut -c1-160
ps -eo pid,args | grep -E "autograder|zygote" | grep -v grep | tee "$W/left_running.txt"; nvidia-smi >> "$W/left_running.txt"; pack
