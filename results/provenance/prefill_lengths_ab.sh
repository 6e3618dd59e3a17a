# The module 10 block's prefill with flash attention's short-sequence tiles (solutions/flash_attention/configs.json
# as committed) and without them (the same table with every "S<=" entry set to its long entry: the settings before),
# in one session on one GPU, in the order new, old, new: eager (scripts/llama_block_bench.py --sections prefill) and
# compiled (results/provenance/traced_ops.py prefill). From the repository root on a GPU; OUT gets ab.tgz.
#     OUT=/some/dir bash results/provenance/prefill_lengths_ab.sh
export PYTHONPATH=$PWD
F=solutions/flash_attention/configs.json
cp $F /tmp/new_configs.json
python - <<'PY'
import json
p = "solutions/flash_attention/configs.json"
d = json.load(open(p))
forward = d["gpus"]["NVIDIA H200"]["forward"]
for bucket in list(forward):
    if ", S<=" in bucket:
        forward[bucket] = forward[bucket.split(", S<=")[0]]
json.dump(d, open("/tmp/old_configs.json", "w"), indent=1)
PY
run() {
    python scripts/llama_block_bench.py --out $OUT/$1 --sections prefill > $OUT/$1.txt 2>&1
    python results/provenance/traced_ops.py $OUT/$1 prefill > $OUT/$1_traced.txt 2>&1
}
run new_a
cp /tmp/old_configs.json $F; run old
cp /tmp/new_configs.json $F; run new_b
cd $OUT && tar czf ab.tgz new_a old new_b *.txt && tail -3 new_a_traced.txt old_traced.txt new_b_traced.txt
