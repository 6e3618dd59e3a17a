#!/bin/bash
# 2026-12-06 (second session), second GPU call: the reduce-overhead decode in interleaved rounds (issue 20), and
# decode attention at 1024 and 65536 keys (issue 22's table). Outputs under $OUT; the short tables printed last.
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
T0=$(date +%s)
[ -n "$KEYS" ] && { timeout 60 python3 results/provenance/decode_keys.py $OUT > $OUT/decode_keys.txt 2>&1; echo "keys rc $? at $(( $(date +%s) - T0 )) s"; }
timeout ${RO_S:-420} python3 results/provenance/ro_rounds.py $OUT 1 4 8 16 > $OUT/ro_rounds.txt 2>&1; echo "rounds rc $? at $(( $(date +%s) - T0 )) s"
grep "^Sk" $OUT/decode_keys.txt
grep -E "^B=|^\|" $OUT/ro_rounds.txt
