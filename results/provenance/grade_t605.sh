cd "$(dirname "$0")/${TREE:-t605}" && export PYTHONUNBUFFERED=1
( while sleep 4; do nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | sort -t, -k2 -n -r | head -2 | while IFS=, read p m; do echo -n "$p ${m}MiB [$(ps -o args= -p $p 2>/dev/null | cut -c1-90)] ; "; done; echo; done ) > $OUT/mem_trace.txt 2>&1 & s=$!
PYTHONPATH=$PWD OUT=$OUT/g BUDGET=400 STAGES=grade bash scripts/gpu_run.sh 2>&1 | tail -4
kill $s
awk 'NR%3==0' $OUT/mem_trace.txt | tail -25
