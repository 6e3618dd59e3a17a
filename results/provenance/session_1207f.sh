#!/bin/bash
# 2026-12-07, sixteenth session. One call that does useful work on whichever card comes:
#   on an H200, issue 22's H200 backlog (session_1206o.sh's STEPS, default "stability gemlite": five gradings of the four
#   assignments whose H200 runs predate their code, and the W4A16 bench with GemLite at every M; carry .whl);
#   on an H100, the worker's new order on a GPU, run as root: capabilities dropped and the system call filter installed
#   (for every thread, TSYNC) before CUDA starts, Landlock after. The sandbox tests on CUDA (every thread of a worker,
#   the CUDA driver's included, holds the kept capabilities only and the filter; red teams 13 and 14's System V, message
#   queue, keyring, file_setattr and ioctl refusals on this kernel), every solution graded on the GPU tier (one case
#   each, speed included), and the integrity selection on CUDA.
# OUT must be set; everything lands in $OUT/results.tar.gz, packed after each step.
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
id | tee "$W/id.txt"; grep Cap /proc/self/status >> "$W/id.txt"; uname -r >> "$W/id.txt"
python3 -c "from autograder import sandbox; print('landlock ABI', sandbox.landlock_abi())" | tee -a "$W/id.txt"
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 150 python3 -m pytest -q -p no:cacheprovider -rs tests/test_sandbox.py \
  > "$W/pytest_sandbox.txt" 2>&1
echo "pytest sandbox: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED|SKIPPED" "$W/pytest_sandbox.txt" | tail -6; pack
t0=$(date +%s)
timeout 240 python3 -m autograder grade --solutions --device cuda --skip-doctor --max-cases 1 --json "$W/grade_solutions.json" \
  > "$W/grade_solutions.txt" 2>&1
echo "grade --solutions: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^Total|^Graded" "$W/grade_solutions.txt" | tail -3; pack
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_integrity.py \
  -k "honest_solution or tensor_as_constexpr or host_function or forged_op or annotation_code or process_through or build_native or fill_from_tensor" \
  > "$W/pytest_integrity.txt" 2>&1
echo "pytest integrity: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" "$W/pytest_integrity.txt" | tail -6
ps -eo pid,args | grep -E "autograder|zygote" | grep -v grep > "$W/left_running.txt"; echo "left running: $(wc -l < "$W/left_running.txt")"; pack
