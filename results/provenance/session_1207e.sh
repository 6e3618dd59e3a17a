#!/bin/bash
# 2026-12-07, fifteenth session: red team 11's fixes on a GPU, run as root as the device runs everything (workers and
# replayers give up root's capabilities but over files; the devices they may write are named, the GPU's among them;
# no device nodes beneath their directories). Every solution on the GPU tier (one case each, speed included: CUDA in
# a worker and a replayer with the named devices only), the sandbox tests on this machine's kernel, the integrity
# selection on CUDA, and the kernel that spins forever. OUT must be set; everything lands in $OUT/results.tar.gz.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
pack() { tar -czf "$OUT/results.tar.gz" -C "$W" .; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee "$W/versions.txt"
id | tee "$W/id.txt"; grep Cap /proc/self/status >> "$W/id.txt"; uname -r >> "$W/id.txt"
python3 -c "from autograder import sandbox; print('landlock ABI', sandbox.landlock_abi()); print(sandbox.writable_devices())" | tee -a "$W/id.txt"
t0=$(date +%s)
timeout 240 python3 -m autograder grade --solutions --device cuda --skip-doctor --max-cases 1 --json "$W/grade_solutions.json" \
  > "$W/grade_solutions.txt" 2>&1
echo "grade --solutions: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^Total" "$W/grade_solutions.txt"; pack
t0=$(date +%s)
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_sandbox.py > "$W/pytest_sandbox.txt" 2>&1
echo "pytest sandbox: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|skipped|^FAILED" "$W/pytest_sandbox.txt" | tail -4; pack
t0=$(date +%s)
AUTOGRADER_TEST_DEVICE=cuda timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_integrity.py \
  -k "honest_solution or tensor_as_constexpr or host_function or forged_op or annotation_code or process_through or build_native or fill_from_tensor" \
  > "$W/pytest_integrity.txt" 2>&1
echo "pytest integrity: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "passed|failed|^FAILED" "$W/pytest_integrity.txt" | tail -6; pack
t0=$(date +%s)
timeout 150 python3 -m autograder grade rmsnorm --submission tests/submissions/rmsnorm/misbehave_kernel_spin.py --device cuda \
  --skip-doctor --timeout 20 > "$W/misbehave_kernel_spin.txt" 2>&1
echo "misbehave_kernel_spin: exit $?, $(( $(date +%s) - t0 )) s, $(grep -E '^Total' "$W/misbehave_kernel_spin.txt")"
ps -eo pid,args | grep -E "autograder|zygote" | grep -v grep > "$W/left_running.txt"; echo "left running: $(wc -l < "$W/left_running.txt")"; pack
