#!/bin/bash
# tune the INT4 decode, grade kv_int4 (GPU tier, speed), table against the previous kernel, bf16 decode and SDPA
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m autograder tune flash_attention --kernels decode_int4 > $OUT/tune_decode_int4.txt 2>&1; tail -6 $OUT/tune_decode_int4.txt
cp solutions/flash_attention/configs.json $OUT/configs.json
timeout 150 python3 .diag/grade_int4.py > $OUT/grade_int4.txt 2>&1; grep GRADE $OUT/grade_int4.txt | grep -v "passed  1.00/1.00" | cut -c1-260; grep -c "GRADE correctness passed" $OUT/grade_int4.txt; tail -3 $OUT/grade_int4.txt | grep -i error
timeout 180 python3 .diag/int4_table.py $OUT/kv_int4_decode.json > $OUT/int4_table.txt 2>&1; grep -E "ROW|Error|error" $OUT/int4_table.txt | cut -c1-300
