#!/bin/bash
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 -m autograder tune rmsnorm --kernels linear > $OUT/tune_rmsnorm_linear.txt 2>&1; grep -E "chosen|on shape|wrote|Error" $OUT/tune_rmsnorm_linear.txt | cut -c1-300
cp solutions/rmsnorm/configs.json $OUT/configs.json
timeout 200 python3 -c "
import sys; sys.path.insert(0, '.')
from pathlib import Path
from autograder.grade import Selection, grade_assignment
r = grade_assignment('rmsnorm', Path('solutions/rmsnorm/kernels.py'), 'cuda', selection=Selection(tasks={'rmsnorm.linear'}))
for c in r.cases:
    print(f'GRADE {c.kind:11} {c.status:7} {c.score:.2f}/{c.max_score:.2f} {c.name} :: {c.message[:220]}')
" > $OUT/grade_rmsnorm_linear.txt 2>&1; grep -E "speed|failed|Error" $OUT/grade_rmsnorm_linear.txt | cut -c1-300; grep -c "correctness passed" $OUT/grade_rmsnorm_linear.txt
