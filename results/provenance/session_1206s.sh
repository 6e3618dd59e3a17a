#!/bin/bash
# 2026-12-06, ninth session. "train" (any GPU): where the compiled training step's time goes, four blocks at 1 and 2 x
# 2048 tokens (train_profile.py). Other steps are session_1206o.sh's (stability probe bench gemlite), run only on an
# H200 when ONLY_ON=H200. OUT must be set; STEPS narrows (default "train").
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
for step in ${STEPS:-train}; do
  t0=$(date +%s)
  case $step in
    train)
      timeout ${TRAIN_S:-420} python3 results/provenance/train_profile.py "$W/train" ${TRAIN_BATCHES:-1 2} > "$W/train_profile.txt" 2>&1
      echo "train: exit $?"; grep -v -E "USDT|Warn|warn" "$W/train_profile.txt" | tail -60 ;;
    *)
      if [ -n "${ONLY_ON:-}" ] && ! grep -q "$ONLY_ON" "$W/gpu.txt"; then echo "$step: not an $ONLY_ON, not run"; continue; fi
      OUT=$W/o STEPS=$step bash results/provenance/session_1206o.sh 2>&1 | tail -16; rm -f "$W/o/results.tar.gz" ;;
  esac
  echo "$step: $(( $(date +%s) - t0 )) s"
  tar -czf "$OUT/results.tar.gz" -C "$W" .  # after every step: a run cut short still brings back what it did
done
