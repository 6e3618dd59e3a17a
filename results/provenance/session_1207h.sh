#!/bin/bash
# 2026-12-07, seventeenth session. On an H100 (or any GPU but an H200): the baseline's own memory pool
# (autograder/replayer.py baseline_pool, taken out on 2026-12-07 after "Expected a torch.device with a specified index"):
# its test on CUDA, every solution graded on the GPU tier (one correctness case a part, every speed case, where the
# baseline now runs in the pool), the integrity selection on CUDA. On an H200: issue 22's backlog, STEPS of
# session_1206o.sh (default "stability"). OUT must be set; everything lands in $OUT/results.tar.gz, packed after each step.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
pack() { tar -czf "$OUT/results.tar.gz" -C "$W" .; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee "$W/versions.txt"
if grep -q H200 "$W/gpu.txt"; then
  OUT=$W/h200 STEPS="${STEPS:-stability}" bash results/provenance/session_1206o.sh 2>&1 | tail -40
  rm -f "$W/h200/results.tar.gz"; pack; exit 0
fi
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 60 python3 -m pytest -q -p no:cacheprovider -rs tests/test_replay.py -k baseline \
  > "$W/pytest_pool.txt" 2>&1
echo "pytest pool: exit $?, $(( $(date +%s) - t0 )) s"; tail -3 "$W/pytest_pool.txt"; pack
t0=$(date +%s)
timeout 200 python3 -m autograder grade --solutions --device cuda --skip-doctor --max-cases 1 --json "$W/grade_solutions.json" \
  > "$W/grade_solutions.txt" 2>&1
echo "grade --solutions: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^Total|^Graded|ERROR" "$W/grade_solutions.txt" | tail -5; pack
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_integrity.py \
  -k "honest_solution or tensor_as_constexpr or host_function or forged_op or annotation_code or process_through or build_native or fill_from_tensor" \
  > "$W/pytest_integrity.txt" 2>&1
echo "pytest integrity: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" "$W/pytest_integrity.txt" | tail -6
ps -eo pid,args | grep -E "autograder|zygote" | grep -v grep > "$W/left_running.txt"; echo "left running: $(wc -l < "$W/left_running.txt")"; pack
