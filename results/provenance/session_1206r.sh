#!/bin/bash
# 2026-12-06, eighth session. "wide" (any GPU): module 04's TMA bonus with tiles that are not powers of two
# (tiling_tma_wide_probe.py); "facts" (any GPU): the grader's diagnosis of a kernel whose wgmma products ptxas
# serialized, read from kernels compiled on the GPU. The other steps are session_1206o.sh's (stability probe bench gemlite), run only on
# an H200 when ONLY_ON=H200. OUT must be set; STEPS narrows (default "wide").
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
for step in ${STEPS:-wide}; do
  t0=$(date +%s)
  case $step in
    wide) OUT=$W timeout 240 python3 results/provenance/tiling_tma_wide_probe.py > "$W/wide_probe.txt" 2>&1
          echo "wide: exit $?"; grep -v -i warn "$W/wide_probe.txt" | tail -14 ;;
    facts) timeout 120 python3 results/provenance/tiling_tma_wide_probe.py --facts > "$W/facts.txt" 2>&1
           echo "facts: exit $?"; grep -v -i warn "$W/facts.txt" | tail -4 ;;
    *)
      if [ -n "${ONLY_ON:-}" ] && ! grep -q "$ONLY_ON" "$W/gpu.txt"; then echo "$step: not an $ONLY_ON, not run"; continue; fi
      OUT=$W/o STEPS=$step bash results/provenance/session_1206o.sh 2>&1 | tail -16; rm -f "$W/o/results.tar.gz" ;;
  esac
  echo "$step: $(( $(date +%s) - t0 )) s"
  tar -czf "$OUT/results.tar.gz" -C "$W" .  # after every step: a run cut short still brings back what it did
done
