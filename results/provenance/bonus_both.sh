#!/bin/bash
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
timeout 400 python3 scripts/bonus_bench.py --out $OUT/bonus --sections linear,kv_quant,kv_int4 > $OUT/bonus.txt 2>&1
tail -45 $OUT/bonus.txt
