#!/bin/bash
# 2026-12-07, eighteenth session. On an H100 (or any GPU but an H200): this session's grader changes on the GPU tier,
# where write budgets are not counted (the interpreter does not run there) and GeLU's tolerance now scales with its
# two terms: the fusion solution and the minimal honest fusion submission graded in full (every float16 and bfloat16
# GeLU case), then every solution with one correctness case a part and every speed case. On an H200: issue 22's
# backlog, STEPS of session_1206o.sh (default "stability"). OUT must be set; results land in $OUT/results.tar.gz.
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
timeout 150 python3 -m autograder grade fusion --solutions --device cuda --skip-doctor --json "$W/grade_fusion.json" \
  > "$W/grade_fusion.txt" 2>&1
echo "fusion solution: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^02|^Total|FAIL" "$W/grade_fusion.txt" | tail -6; pack
t0=$(date +%s)
timeout 120 python3 -m autograder grade fusion --submission tests/submissions/fusion/correct_minimal.py --device cuda \
  --skip-doctor > "$W/grade_fusion_minimal.txt" 2>&1
echo "fusion correct_minimal: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^02|^Total|FAIL" "$W/grade_fusion_minimal.txt" | tail -6; pack
t0=$(date +%s)
timeout 220 python3 -m autograder grade --solutions --device cuda --skip-doctor --max-cases 1 --json "$W/grade_solutions.json" \
  > "$W/grade_solutions.txt" 2>&1
echo "grade --solutions: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^Total|^Graded|FAIL|ERROR" "$W/grade_solutions.txt" | tail -6
ps -eo pid,args | grep -E "autograder|zygote" | grep -v grep > "$W/left_running.txt"; echo "left running: $(wc -l < "$W/left_running.txt")"; pack
