"""flash_attention.kv_int4 with V's codes centred (2026-12-06), on a GPU: the speed case's inputs from the grader's
generator, each output checked with the grader's comparison against float64 attention over the dequantized cache
(the worst error as a fraction of the tolerance), then the kernel timed against SDPA over the bf16 cache with the
grader's timer, as the speed case does (its five gradings that day, before the change: 174.7 us, 1.10-1.11x).
    python results/provenance/kv_int4_centred_gpu.py OUT [N_INPUTS]

Written on 2026-12-06 with the change; run on an H100 later that day (results/h100/kv_int4_centred_gpu.json: 30 inputs
within 0.42 of the tolerance, 175.3 us, 1.07x), followed by `python scripts/stability.py flash_attention --runs 5`
(results/h100/stability_flash_attention_2026-12-06_centred.md). No H200 was lent that day."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
import torch
from autograder.checking import compare
from autograder.specs import flash_attention as S
from autograder.timing import median, time_interleaved
from course.loader import load_kernels
from course.results import run_meta

fa = load_kernels("flash_attention", "solutions")
dev = torch.device("cuda")
params = {**S.DECODE_SPEED, "seq_k": 16384}
n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
worst = []
for seed in range(n):
    inputs = S.make_kv_int4_inputs(params, torch.Generator(device=dev).manual_seed(5000 + seed), dev)
    out = S.call_kv_int4(fa, inputs, params)["o"]
    verdict = compare("o", out, S.reference_kv_int4(inputs, params)["o"], S.TOLERANCES[params["dtype"]])
    worst.append(verdict.max_error)
    assert verdict.ok, verdict.message
dense = S._dense_int4_cache(inputs, params)
fns = {"solution": lambda i: S.speed_kv_int4(fa, inputs, params),
       "SDPA over the bf16 cache": lambda i: S.sdpa_dense_baseline({**inputs, **dense}, params)}
times = time_interleaved(fns, 1, 50, dev)
us = {k: median(t) * 1e3 for k, t in times.items()}
row = {"inputs_checked": n, "worst_error_over_tolerance": max(worst), "us": us,
       "vs_sdpa": us["SDPA over the bf16 cache"] / us["solution"]}
Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
(Path(sys.argv[1]) / "kv_int4_centred_gpu.json").write_text(json.dumps({"meta": run_meta("kv_int4_centred_gpu"), **row}, indent=1))
print(f"{n} inputs, worst error {max(worst):.3f} of the tolerance; solution {us['solution']:.1f} us, SDPA "
      f"{us['SDPA over the bf16 cache']:.1f} us, {row['vs_sdpa']:.2f}x")
