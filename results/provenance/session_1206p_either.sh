#!/bin/bash
# 2026-12-06, sixth session: one device call that does what the GPU it lands on is for. On an H200: the TMA bonus's
# tile probe and the tiling bench with the tile-by-shape launcher (session_1206o.sh's "probe bench", which the H200
# lacks). Elsewhere: quant_matmul graded on the GPU tier since the replayer counts carried state against the setup
# step's allowance (a5507ac): the solution, wrong_dequantized_stash and correct_kept_workspace; then the cheat suite
# and one-line bugs on the GPU tier (scripts/gpu_run.sh STAGES=cheats; last run on a GPU on 2026-11-25). OUT must be set.
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  STEPS="probe bench" bash results/provenance/session_1206p.sh
  exit
fi
W=$OUT/qm; mkdir -p "$W"
t0=$(date +%s)
timeout 200 python3 -m autograder grade quant_matmul --solutions --device cuda --skip-doctor --json "$W/grade_solution.json" > "$W/grade_solution.txt" 2>&1
echo "quant_matmul solution: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^09 |Graded in" "$W/grade_solution.txt"
for s in wrong_dequantized_stash correct_kept_workspace; do
  t0=$(date +%s)
  timeout 120 python3 -m autograder grade quant_matmul --submission tests/submissions/quant_matmul/$s.py --device cuda --skip-doctor \
    --json "$W/grade_$s.json" > "$W/grade_$s.txt" 2>&1
  echo "$s: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^09 |Graded in" "$W/grade_$s.txt"
done
OUT=$OUT STAGES=cheats BUDGET=${BUDGET:-330} bash scripts/gpu_run.sh 2>&1 | tail -12
tar -czf "$OUT/qm.tar.gz" -C "$W" .
