#!/bin/bash
# 2026-12-06, fifth session: the TMA bonus with its tile chosen by shape (tma_tile, "tma_small"): the tiling bench as
# shipped; STEPS="probe bench" also times the nine tiles at every size (tiling_tma_small_probe.py), which gives a
# GPU's "tma_small" speeds (tiling_tma_small_table.py); "stability" runs next_gpu_session.sh's five gradings of the
# four assignments the H200 lacks, "gemlite" its W4A16 bench with GemLite at every M (carry .whl). ONLY_ON=H200 runs nothing on another GPU. OUT must be set.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
if [ -n "${ONLY_ON:-}" ] && ! grep -q "$ONLY_ON" "$W/gpu.txt"; then echo "not an $ONLY_ON: nothing run"; exit 0; fi
for step in ${STEPS:-bench}; do
  t0=$(date +%s)
  case $step in
    probe) OUT=$W timeout 200 python3 results/provenance/tiling_tma_small_probe.py > "$W/small_probe.txt" 2>&1
           echo "probe: exit $?"; grep -v Warn "$W/small_probe.txt" | grep -v _warn | tail -12 ;;
    bench) mkdir -p "$W/bench"; timeout 300 python3 -m autograder bench tiling --out "$W/bench" > "$W/bench/bench_tiling.txt" 2>&1
           echo "bench: exit $?"; grep -E "TMA" "$W/bench/tiling.md" | head -40 ;;
    stability|gemlite) OUT=$W/next STEPS=$step bash results/provenance/next_gpu_session.sh 2>&1 | tail -8; rm -f "$W/next/results.tar.gz" ;;
  esac
  echo "$step: $(( $(date +%s) - t0 )) s"
  tar -czf "$OUT/results.tar.gz" -C "$W" .  # after every step: a run cut short still brings back what it did
done
