#!/bin/bash
# 2026-12-07, sixteenth session, second call. On an H200, issue 22's H200 backlog as in session_1207f.sh. On an H100,
# as root: red team 15's fixes and Landlock's new judgement of reads (anything outside /dev, in /dev only the devices a
# worker may write), red team 16's (tapes' numbers bounded, sources only) with CUDA. The sandbox tests on CUDA; every
# solution graded on the GPU tier (one correctness case a part and every speed case); the largest reply and reply
# pickle the grader read for the two assignments with the largest tapes (results/provenance/reply_sizes.py, REPLY_SLUGS:
# the measurement behind MAX_PICKLE_BYTES); the integrity selection on CUDA. OUT must be set; everything lands in $OUT/results.tar.gz, packed after each step.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
pack() { tar -czf "$OUT/results.tar.gz" -C "$W" .; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee "$W/versions.txt"
if grep -q H200 "$W/gpu.txt"; then
  OUT=$W/h200 STEPS="${STEPS:-stability gemlite}" bash results/provenance/session_1206o.sh 2>&1 | tail -40
  rm -f "$W/h200/results.tar.gz"; pack; exit 0
fi
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 120 python3 -m pytest -q -p no:cacheprovider -rs tests/test_sandbox.py \
  > "$W/pytest_sandbox.txt" 2>&1
echo "pytest sandbox: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED|SKIPPED" "$W/pytest_sandbox.txt" | tail -6; pack
t0=$(date +%s)
timeout 180 python3 -m autograder grade --solutions --device cuda --skip-doctor --max-cases 1 --json "$W/grade_solutions.json" \
  > "$W/grade_solutions.txt" 2>&1
echo "grade --solutions: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^Total|^Graded" "$W/grade_solutions.txt" | tail -3; pack
t0=$(date +%s)
timeout 90 python3 results/provenance/reply_sizes.py cuda 1 ${REPLY_SLUGS:-flash_attention quant_matmul} \
  > "$W/reply_sizes.txt" 2> "$W/reply_sizes_stderr.txt"
echo "reply_sizes: exit $?, $(( $(date +%s) - t0 )) s"; grep -v Warn "$W/reply_sizes.txt" | tail -4; pack
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_integrity.py \
  -k "honest_solution or tensor_as_constexpr or host_function or forged_op or annotation_code or process_through or build_native or fill_from_tensor" \
  > "$W/pytest_integrity.txt" 2>&1
echo "pytest integrity: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" "$W/pytest_integrity.txt" | tail -6
ps -eo pid,args | grep -E "autograder|zygote" | grep -v grep > "$W/left_running.txt"; echo "left running: $(wc -l < "$W/left_running.txt")"; pack
