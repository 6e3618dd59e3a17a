#!/bin/bash
# What the next GPU session should run, written on 2026-12-06 when no H200 was lent and the device time was spent.
# On an H200 (`run` with kind nvidia-h200, carry [".whl"]), in one call of about 9 minutes:
#   1. results/provenance/kv_int4_centred_gpu.py: the centred INT4 decode checked on 30 speed-case inputs and timed
#      (the H100 measured it the same day: within 0.42 of the tolerance, 175.3 us, 1.07x SDPA);
#   2. five gradings of the assignments whose H200 runs predate their code (flash_attention's dependent combine
#      launch and centred codes; rope, swiglu and coalescing's launch changes of 2026-11-25), for stability_merge.py;
#   3. scripts/tolerance_margins.py on every speed case (the H100's is results/h100/tolerance_margins.md);
#   4. on either GPU, the W4A16 bench at every M of 1..256 with GemLite beside it (issue 22 asks for >= GemLite at
#      every M in 1..64; the committed quick bench has M = 1, 16, 64 only);
#   5. (added later that day) the TMA bonus of tiling as shipped (its balanced grid), five gradings and the bench
#      with it, which the H100 has (results/h100/tiling_tma_solution.json, stability_tiling_2026-12-06.md,
#      tiling.md) and the H200 has only from before the balanced grid, graded once.
# Done on an H200 later on 2026-12-06 (results/h200/NOTES.md): 1, 3 and 5. Still to run there: 2 and 4 (4 was run on
# the H100 in the fifth session: results/h100/quant_matmul.md), and, since the fifth session, the TMA bonus's tiles by
# shape: `ONLY_ON=H200 STEPS="stability probe bench gemlite" bash results/provenance/session_1206o.sh` does all of it
# (about 8 min); then `python results/provenance/tiling_tma_small_table.py .../tiling_tma_small_probe.json` gives the
# H200's own "tma_small" speeds for solutions/tiling/configs.json (borrowed from the H100 until then).
# OUT must be set; STEPS narrows (default "stability gemlite"; any of kv stability margins gemlite tiling); ONLY_ON=H200
# runs nothing on another GPU.
# Results in $OUT/results.tar.gz.
set -u
W=$OUT/work; mkdir -p "$W"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$W/gpu.txt"
if [ -n "${ONLY_ON:-}" ] && ! grep -q "$ONLY_ON" "$W/gpu.txt"; then echo "not an $ONLY_ON: nothing run"; exit 0; fi
for step in ${STEPS:-stability gemlite}; do
  t0=$(date +%s)
  case $step in
    kv) timeout 60 python3 results/provenance/kv_int4_centred_gpu.py "$W" 30 ;;
    stability) OUT=$W/stability STAGES=stability SLUGS="flash_attention rope swiglu coalescing" BUDGET=330 \
                 bash scripts/gpu_run.sh | tail -6 ;;
    margins) timeout 90 python3 scripts/tolerance_margins.py --inputs 20 --out "$W/tolerance_margins.json" | tail -3 ;;
    gemlite)
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
        && PYTHONPATH=/tmp/site:$PYTHONPATH timeout 240 python3 -m autograder bench quant_matmul --out "$W/bench" \
        > "$W/bench_quant_matmul.txt" 2>&1; tail -25 "$W/bench_quant_matmul.txt" ;;
    tiling) OUT=$W timeout 120 python3 results/provenance/tiling_tma_solution.py | tail -6
            timeout 200 python3 scripts/stability.py tiling --runs 5 --out "$W/stability_tiling_2026-12-06.json" | tail -8
            mkdir -p "$W/bench_tiling"; timeout 150 python3 -m autograder bench tiling --out "$W/bench_tiling" > /dev/null 2>&1 ;;
  esac
  echo "$step: $(( $(date +%s) - t0 )) s"
done
tar -czf "$OUT/results.tar.gz" -C "$W" .
