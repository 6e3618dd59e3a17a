#!/bin/bash
# 2026-12-06, seventh session. "ahead" (any GPU): flash attention's forward with the next block's scores issued before
# this block's softmax and P V left in flight across it (results/provenance/flash_ahead_probe.py), beside the
# solution and cuDNN; "bwd" (any GPU): the backward's products reordered (flash_bwd_order_probe.py);
# "gemv16" (any GPU): the W4A16 GEMV in float16 arithmetic (w4a16_gemv16_probe.py); "decode" (any GPU): decode
# attention's settings swept at 1024-16384 keys (decode_sweep_probe.py). Other steps go to session_1206p.sh (with ONLY_ON=H200: its H200-only stability, probe, bench,
# gemlite). OUT must be set; STEPS narrows (default "ahead").
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
for step in ${STEPS:-ahead}; do
  t0=$(date +%s)
  case $step in
    ahead) timeout 330 python3 results/provenance/flash_ahead_probe.py "$W" > "$W/flash_ahead_probe.txt" 2>&1
           echo "ahead: exit $?"; grep -v -i warn "$W/flash_ahead_probe.txt" | tail -14 ;;
    gemv16) timeout 240 python3 results/provenance/w4a16_gemv16_probe.py "$W" > "$W/w4a16_gemv16_probe.txt" 2>&1
            echo "gemv16: exit $?"; grep -v -i warn "$W/w4a16_gemv16_probe.txt" | tail -6 ;;
    decode) timeout 300 python3 results/provenance/decode_sweep_probe.py "$W" > "$W/decode_sweep_probe.txt" 2>&1
            echo "decode: exit $?"; grep -v -i warn "$W/decode_sweep_probe.txt" | tail -13 ;;
    bwd) timeout 200 python3 results/provenance/flash_bwd_order_probe.py "$W" > "$W/flash_bwd_order_probe.txt" 2>&1
         echo "bwd: exit $?"; grep -v -i warn "$W/flash_bwd_order_probe.txt" | tail -8 ;;
    *) if [ -n "${ONLY_ON:-}" ] && ! grep -q "$ONLY_ON" "$W/gpu.txt"; then echo "$step: not an $ONLY_ON, not run"; continue; fi
       OUT=$W/p STEPS=$step bash results/provenance/session_1206p.sh 2>&1 | tail -16; rm -f "$W/p/results.tar.gz" ;;
  esac
  echo "$step: $(( $(date +%s) - t0 )) s"
  tar -czf "$OUT/results.tar.gz" -C "$W" .  # after every step: a run cut short still brings back what it did
done
