#!/bin/bash
# 2026-12-06 (second session), one GPU call: the softmax re-read probe and the decode last-combine probe (issue 22),
# then the reduce-overhead decode
# with fused projections, batch 1-16 (issue 20), twice. Outputs under $OUT; the short table printed last.
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
L=$OUT/log.txt
T0=$(date +%s)
timeout ${SOFTMAX_S:-260} python3 results/provenance/softmax_reread_probe.py $OUT/softmax_reread.json $OUT/softmax_reread.md > $OUT/softmax_log.txt 2>&1
echo "softmax rc $? at $(( $(date +%s) - T0 )) s" | tee -a $L
timeout ${DECODE_S:-150} python3 results/provenance/decode_last_combine_probe.py $OUT > $OUT/decode_log.txt 2>&1
echo "decode rc $? at $(( $(date +%s) - T0 )) s" | tee -a $L
for i in ${RO_RUNS:-1 2}; do
  timeout ${RO_S:-150} python3 results/provenance/ro_fused.py /tmp/ro$i 1 4 8 16 >> $L 2>&1
  echo "ro $i rc $? at $(( $(date +%s) - T0 )) s" | tee -a $L
  cp /tmp/ro$i/ro_fused.json $OUT/ro_fused_$i.json 2>/dev/null
done
python3 - <<'PY'
import json, glob, os
for f in sorted(glob.glob(os.environ["OUT"] + "/ro_fused_*.json")):
    d = json.load(open(f))
    for k, v in d.items():
        if k.startswith("batch"):
            r = {x["impl"]: x["ms"] for x in v}
            a, b = r.get("compile RO, no trees"), r.get("course W4A16 compile RO, no trees, fused")
            c, e = r.get("compile RO"), r.get("course W4A16 compile RO, fused")
            print(os.path.basename(f), k, "trees off %.2fx" % (a / b) if a and b else "-", "trees on %.2fx" % (c / e) if c and e else "-")
PY
grep -E "^copy|^1024|^4096" $OUT/softmax_log.txt | head -12
tail -6 $OUT/decode_log.txt
tail -12 $OUT/softmax_reread.md 2>/dev/null
