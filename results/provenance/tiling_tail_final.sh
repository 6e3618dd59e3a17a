#!/bin/bash
# On a GPU: the sweep (tiling_tail_sweep.py), the measured speed of the 64 x 128 tail tile written into this
# GPU's entry of solutions/tiling/configs.json (on the device's copy; the same number is committed), then the
# tiling bench and the grading with that entry. Output under $OUT.
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
if [ -z "$SKIP_SWEEP" ]; then
  timeout 300 python3 results/provenance/tiling_tail_sweep.py --out $OUT > $OUT/tiling_tail_sweep.txt 2>&1
  echo "sweep rc $?"
  python3 - <<'PY'
import json, os, torch
from pathlib import Path
sweep = json.loads((Path(os.environ["OUT"]) / "tiling_tail_sweep.json").read_text())
path = Path("solutions/tiling/configs.json")
table = json.loads(path.read_text())
entry = table["gpus"][torch.cuda.get_device_name()]
entry["tail"]["16-bit"]["speed"] = round(sweep["speed"]["64x128"], 3)
from course.configs import dump_table
path.write_text(dump_table(table))
print("tail entry:", entry["tail"])
PY
fi
timeout 240 python3 -m autograder bench tiling --out $OUT/bench > $OUT/bench.txt 2>&1
echo "bench rc $?"
timeout 200 python3 -m autograder grade tiling --solutions --device cuda --json $OUT/grade_tiling.json > $OUT/grade_tiling.txt 2>&1
echo "grade rc $?"
grep -E "FAIL|ERROR|Total|points" $OUT/grade_tiling.txt | head -12
cd $OUT && tar czf bench.tgz bench && rm -rf bench; cd - >/dev/null
cat $OUT/tiling_tail_sweep.txt 2>/dev/null
