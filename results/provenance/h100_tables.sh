# The H100 entries of quant_matmul (w4) and flash_attention (forward) tuned, then W4A16 and the decode block measured
# with the new W4A16 entry (2026-12-06). Run from the repository root on the GPU, with the anchor wheels in .whl/.
# Everything lands under $OUT: log.txt, the two configs.json, quant_matmul.json/.md, ro_fused.json.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export PYTHONUNBUFFERED=1
L=$OUT/log.txt
echo "== tune quant_matmul w4" >> $L
timeout 200 python -m autograder tune quant_matmul --kernels w4 >> $L 2>&1; echo "tune qm rc=$?" >> $L
cp solutions/quant_matmul/configs.json $OUT/configs_qm.json
echo "== bench quant_matmul --quick" >> $L
timeout 120 python -m autograder bench quant_matmul --quick --out /tmp/qm >> $L 2>&1; echo "bench qm rc=$?" >> $L
cp /tmp/qm/quant_matmul.json /tmp/qm/quant_matmul.md $OUT/
echo "== ro_fused" >> $L
timeout 150 python results/provenance/ro_fused.py /tmp/ro 1 4 8 16 >> $L 2>&1; echo "ro rc=$?" >> $L
cp /tmp/ro/ro_fused.json $OUT/
echo "== tune flash_attention forward" >> $L
timeout 200 python -m autograder tune flash_attention --kernels forward >> $L 2>&1; echo "tune fa rc=$?" >> $L
cp solutions/flash_attention/configs.json $OUT/configs_fa.json
grep -v -E "^\s*$|^W1206|Warning|warn" $L | grep -E "^(==|tune|bench|ro |\||quant_matmul|w4|forward|wrote|\[)" | tail -70
