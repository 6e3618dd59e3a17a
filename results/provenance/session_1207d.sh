#!/bin/bash
# 2026-12-07, fifteenth session. One call that does useful work on whichever card comes:
#   on an H200, the backlog of issue 22's H200 column (session_1206o.sh's STEPS, default "stability probe gemlite bench":
#   five gradings of the four assignments whose H200 runs predate their code, the TMA bonus's tiles timed at every size,
#   the W4A16 bench with GemLite at every M, the tiling bench as shipped);
#   on an H100, the grader after red team 10's fixes (replies read whole by their deadline, sizes bounded, process trees
#   ended whole): the solutions graded on the GPU (one case each, speed included), a prepare() cheat that deadlocked
#   the grader before, the two new hangs (a kernel spinning forever, a worker sending half a reply), and whether
#   anything was left running.
# SPIN_ONLY=1 skips the solutions; ENTRIES=assignment:submission:seconds:max-cases:case-limit narrows. OUT must be set; everything lands in $OUT/results.tar.gz, packed after each step. Carry .whl for "gemlite".
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
pack() { tar -czf "$OUT/results.tar.gz" -C "$W" .; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee "$W/versions.txt"
if grep -q H200 "$W/gpu.txt"; then
  OUT=$W/h200 STEPS="${STEPS:-stability probe gemlite bench}" bash results/provenance/session_1206o.sh 2>&1 | tail -40
  rm -f "$W/h200/results.tar.gz"; pack; exit 0
fi
if [ -z "${SPIN_ONLY:-}" ]; then t0=$(date +%s)
timeout 240 python3 -m autograder grade --solutions --device cuda --skip-doctor --max-cases 1 --json "$W/grade_solutions.json" \
  > "$W/grade_solutions.txt" 2>&1
echo "grade --solutions: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^Total|Bonus" "$W/grade_solutions.txt" | tail -4; pack; fi
# The spin's kernel waits only on a 3-D input with odd rows, the GPU tier's third forward case: every case is graded.
for entry in ${ENTRIES:-quant_matmul:wrong_prepared_view_of_hidden_storage:150:2: rmsnorm:misbehave_kernel_spin:150:9:20 \
             rmsnorm:misbehave_partial_reply:90:2:20}; do
  IFS=: read -r a s lim n case_s <<< "$entry"; t0=$(date +%s)
  timeout $lim python3 -m autograder grade $a --submission tests/submissions/$a/$s.py --device cuda --skip-doctor \
    ${case_s:+--timeout $case_s} --max-cases $n > "$W/$s.txt" 2>&1
  echo "$s: exit $?, $(( $(date +%s) - t0 )) s, $(grep -E '^Total' "$W/$s.txt")"
  ps -eo pid,args | grep -E "autograder|zygote|python3 -c" | grep -v grep > "$W/left_after_$s.txt"
  echo "  processes left: $(wc -l < "$W/left_after_$s.txt")"; pack
done
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$W/left_after_all.txt"; pack
