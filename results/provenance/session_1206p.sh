#!/bin/bash
# 2026-12-06, sixth session. "grade" (any GPU): module 04 on the GPU tier since the grader launches the TMA bonus's
# kernel itself (Part.kernel_probe, f6c800d, never run on a GPU before): the solution and the four wrong TMA
# submissions. The other steps are session_1206o.sh's (stability probe bench gemlite), run only on an H200 when
# ONLY_ON=H200. OUT must be set; STEPS narrows (default "grade").
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
for step in ${STEPS:-grade}; do
  t0=$(date +%s)
  case $step in
    grade)
      timeout 180 python3 -m autograder grade tiling --solutions --device cuda --skip-doctor \
        --json "$W/grade_tiling_solution.json" > "$W/grade_tiling_solution.txt" 2>&1
      echo "solution: exit $?, $(( $(date +%s) - t0 )) s"; grep -E "^Total|tiling\.tma" "$W/grade_tiling_solution.txt" | head -6
      for w in wrong_tma_full_size_decoy wrong_tma_routed_to_matmul wrong_tma_decoy_launch wrong_tma_acc_not_reset; do
        t1=$(date +%s)
        timeout 120 python3 -m autograder grade tiling --submission tests/submissions/tiling/$w.py --device cuda \
          --skip-doctor --json "$W/grade_$w.json" > "$W/grade_$w.txt" 2>&1
        echo "$w: exit $?, $(( $(date +%s) - t1 )) s"; grep -E "^Total|tiling\.tma" "$W/grade_$w.txt" | head -3
      done ;;
    *)
      if [ -n "${ONLY_ON:-}" ] && ! grep -q "$ONLY_ON" "$W/gpu.txt"; then echo "$step: not an $ONLY_ON, not run"; continue; fi
      OUT=$W/o STEPS=$step bash results/provenance/session_1206o.sh 2>&1 | tail -16; rm -f "$W/o/results.tar.gz" ;;
  esac
  echo "$step: $(( $(date +%s) - t0 )) s"
  tar -czf "$OUT/results.tar.gz" -C "$W" .  # after every step: a run cut short still brings back what it did
done
