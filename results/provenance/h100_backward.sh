# The H100's flash attention backward entry tuned (it was the H200's, borrowed unmeasured), then the module 10
# training step compiled (traced_ops.py's train part) and, if the entry changed, flash attention graded on the GPU
# tier (2026-12-06). Run from the repository root on the GPU; everything lands under $OUT.
export PYTHONUNBUFFERED=1
L=$OUT/log.txt
cp solutions/flash_attention/configs.json /tmp/configs_before.json
echo "== tune flash_attention backward" >> $L
timeout 300 python -m autograder tune flash_attention --kernels backward >> $L 2>&1; echo "tune rc=$?" >> $L
cp solutions/flash_attention/configs.json $OUT/configs_fa.json
echo "== traced_ops train" >> $L
timeout 240 python results/provenance/traced_ops.py /tmp/tr train >> $L 2>&1; echo "train rc=$?" >> $L
cp /tmp/tr/traced_ops_rows_train.json $OUT/ 2>/dev/null
if ! cmp -s /tmp/configs_before.json solutions/flash_attention/configs.json; then
  echo "== grade flash_attention" >> $L
  timeout 200 python -m autograder grade flash_attention --solutions --json $OUT/grade_flash_attention_backward.json >> $L 2>&1
  echo "grade rc=$?" >> $L
fi
grep -E "^(==|tune|train|grade|flash_attention backward|   [0-9]|   chosen|Total|08 )" $L
