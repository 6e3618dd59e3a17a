#!/usr/bin/env bash
# One GPU session: tune every solution's launch settings on this GPU, grade the solutions on the GPU tier with
# the new tables, and benchmark them; everything lands in $OUT/results.tar.gz (a device call returns few files).
#
#   OUT=/some/dir bash scripts/gpu_run.sh                      (repository root, on a GPU machine)
#
# STAGES picks and orders the stages (default "tune grade bench"; also "stubs": the stubs score zero,
# "stability": five gradings of each solution's speed cases, "batch": batch grading on one GPU against all,
# "cheats": the cheat suite of tests/test_integrity.py and the one-line bugs against the GPU tier's hostile cases,
# one line per cheat and assignment in cheat_suite.txt (commit as results/<gpu>/cheat_suite.txt); "profile": ncu, where
# installed, and proton on the rmsnorm solution and a spilling kernel; "diagnose_hf": the grader's slow-kernel
# diagnosis of the same pair, and a Hugging Face Llama patched with the course's kernels (DIAGNOSE_HF_ARGS="--wheels DIR"
# where the GPU image lacks transformers); "bonus": issue 21's fused RMSNorm + linear and quantized-KV decode).
# SLUGS narrows the assignments. BUDGET (seconds, default 570) bounds the run: a stage or assignment that
# would start past it is listed as not run, so a second call can finish the job (commit the tables from
# $OUT/results.tar.gz first: `tables/` mirrors solutions/ and assignments/). BENCH_ARGS defaults to --quick.
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_run}; W=$OUT/work; mkdir -p "$W"
STAGES=${STAGES:-tune grade bench}; BUDGET=${BUDGET:-570}; START=$(date +%s)
SLUGS=${SLUGS:-$(python3 -c "from autograder.specs import SLUGS; print(' '.join(SLUGS))")}
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
pack() { tar -czf "$OUT/results.tar.gz" -C "$W" .; }
skipped=""
run() {  # run NAME SECONDS_NEEDED COMMAND...: run it under the time left, or note it as not run
  local name=$1 need=$2; shift 2
  if [ "$(left)" -lt "$need" ]; then skipped="$skipped $name"; return; fi
  local t0; t0=$(date +%s)
  timeout "$(left)" "$@" > "$W/$name.txt" 2>&1; local rc=$?
  echo "$name: exit $rc, $(( $(date +%s) - t0 )) s"
  pack
}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$W/gpu.txt"
for stage in $STAGES; do
  case $stage in
    tune)
      for s in $SLUGS; do
        run "tune_$s" 30 python3 -m autograder tune "$s"
        echo "  $(grep -c 'chosen:' "$W/tune_$s.txt" 2>/dev/null) buckets tuned, $(grep -c 'left out' "$W/tune_$s.txt" 2>/dev/null) candidates left out"
      done
      python3 -m autograder release > "$W/release.txt" 2>&1
      mkdir -p "$W/tables"; for s in $SLUGS; do for d in solutions assignments; do mkdir -p "$W/tables/$d/$s"; cp "$d/$s/configs.json" "$W/tables/$d/$s/"; done; done
      pack ;;
    grade)  # every assignment in one command: correctness side by side, then the speed cases one at a time
      # the GPU memory the assignments graded at once held at their peak (autograder/concurrent.py budgets it)
      ( peak=0; while sleep 0.5; do m=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
        if [ "${m:-0}" -gt "$peak" ] 2>/dev/null; then peak=$m; echo "$peak MiB" > "$W/grade_gpu_peak_mib.txt"; fi; done ) & sampler=$!
      t0=$(date +%s)
      run grade_all 60 python3 -m autograder grade $SLUGS --solutions --device cuda --skip-doctor --json "$W/grade_{slug}_gpu_tier.json" ${GRADE_ARGS:-}
      echo "whole-course grading: $(( $(date +%s) - t0 )) s; peak GPU memory $(cat "$W/grade_gpu_peak_mib.txt" 2>/dev/null)" | tee "$W/grade_seconds.txt"
      kill "$sampler" 2>/dev/null
      grep -E "^Total|^Graded in" "$W/grade_all.txt" 2>/dev/null
      # each speed case's measure, threshold, margin and points, for results/<gpu>/rubric_margins.md
      python3 scripts/stability.py --margins "$W"/grade_*_gpu_tier.json --out "$W/rubric_margins.md" > /dev/null ;;
    stubs) run stubs 60 python3 -m autograder grade $SLUGS --device cuda --skip-doctor --max-cases 1; grep -E "^Total" "$W/stubs.txt" 2>/dev/null ;;
    bench) run bench 60 python3 -m autograder bench $SLUGS ${BENCH_ARGS:---quick} --out "$W/bench" ;;
    stability) for s in $SLUGS; do run "stability_$s" 60 python3 scripts/stability.py "$s" --runs 5 --out "$W/stability_$s.json"; done ;;
    bonus) run bonus 120 python3 scripts/bonus_bench.py --out "$W/bonus"; tail -30 "$W/bonus.txt" ;;
    batch) run batch 120 python3 scripts/batch_throughput.py rmsnorm --out "$W/batch" --students 8 --max-cases 1; rm -rf "$W/batch/class" "$W"/batch/graded_*/work ;;
    cheats)  # eight graders at once (pytest-xdist), each with its zygote, worker and replayer on the GPU
      mkdir -p "$W/cheat_report"
      AUTOGRADER_TEST_DEVICE=cuda AUTOGRADER_CHEAT_REPORT="$W/cheat_report" run cheats 120 \
        python3 -m pytest tests/test_integrity.py "tests/test_one_line_bugs.py::test_a_one_line_bug_fails_a_hostile_case_of_the_gpu_tier" -q -o addopts="" -p no:cacheprovider -n "${JOBS:-8}"
      tail -1 "$W/cheats.txt"; grep -E "^(FAILED|ERROR)" "$W/cheats.txt" | head -20
      python3 - "$W" <<'PY'
import datetime, glob, sys
import torch, triton
work = sys.argv[1]
rows = sorted({tuple(line.rstrip("\n").split("\t")) for f in glob.glob(f"{work}/cheat_report/*.tsv") for line in open(f)},
              key=lambda r: (r[1], r[0]))
gpu = open(f"{work}/gpu.txt").read().strip().splitlines()[0]
with open(f"{work}/cheat_suite.txt", "w") as out:
    out.write(f"# The cheat suite on {gpu}; torch {torch.__version__}, triton {triton.__version__}; {datetime.date.today()}\n")
    out.write(f"# pytest: {open(f'{work}/cheats.txt').read().strip().splitlines()[-1]}\n")
    out.write("# cheat | assignment | graded | status | points | the sentence it got\n")
    for slug, cheat, kind, status, points, sentence in rows:
        out.write(f"{cheat} | {slug} | {kind} | {status} | {points} | {sentence}\n")
    scored = [r[:2] for r in rows if not r[4].startswith("0/")]
    out.write(f"# {len(rows)} gradings; {len(scored)} scored points\n")
print(f"cheat suite: {len(rows)} gradings recorded; scored points: {scored}")
PY
      rm -rf "$W/cheat_report"; pack ;;
    profile) run profile 120 python3 scripts/profiling_experiments.py --out "$W/profile" --sections profilers --budget 600; tail -6 "$W/profile.txt" ;;
    diagnose_hf)
      run diagnose 60 python3 scripts/profiling_experiments.py --out "$W/diagnose_hf" --sections diagnose --budget 600; tail -2 "$W/diagnose.txt"
      run diagnose_hf 180 python3 scripts/llama_block_bench.py --out "$W/diagnose_hf" --sections hf ${DIAGNOSE_HF_ARGS:-}; tail -4 "$W/diagnose_hf.txt" ;;
    *) echo "unknown stage $stage: the stages are tune grade stubs bench stability batch cheats profile diagnose_hf bonus"; exit 2 ;;
  esac
done
pack
grep -h -E "FAIL|ERROR|TIMEOUT" "$W"/grade_*.txt 2>/dev/null | grep -v speed | head -20
[ -z "$skipped" ] || echo "not run within BUDGET=$BUDGET s:$skipped (run them in another call: STAGES=..., SLUGS=...)"
echo "results: $OUT/results.tar.gz ($(( $(date +%s) - START )) s)"
