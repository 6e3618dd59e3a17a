"""Decode attention's launch settings swept at three cache lengths (issue 22: 1.14x SDPA at 1024 keys and 74% of
copy at 4096 on the H100, against targets of 1.25x and 85%). The table's entry was tuned at 4096 keys alone, over
12 settings (`SEARCH_SPACE`, "decode": 32 or 64 keys a step, 4 warps, 2 or 3 stages, 1, 2 or 4 programs an SM,
splits of at least 2 steps). Here: 32, 64 or 128 keys a step, 2, 4 or 8 warps, 2 to 4 stages, 1 to 4 programs an SM,
splits of at least 1 or 2 steps, each through the solution's own launcher (`attention_decode`, its split count
worked out as `decode_config` does), at 1024, 4096 and 16384 keys, 8 x 32/8 heads, d = 128, bf16, beside SDPA and the
solution as tabled. Every setting's output is checked against SDPA's first (bf16 tolerance of the course).

    python results/provenance/decode_sweep_probe.py OUT   # on a GPU: OUT/decode_sweep_probe.json, a table last
    python results/provenance/decode_sweep_probe.py --dry # on the CPU (interpreter): a few settings, checked

Timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of 20; K
and V bytes over the copy bandwidth measured in the same run.
"""
from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import course.env  # noqa: F401,E402  (the interpreter when there is no GPU, before triton)
import torch  # noqa: E402

from course.launch import cdiv  # noqa: E402
from course.loader import load_kernels  # noqa: E402

fa = load_kernels("flash_attention", "solutions")
TABLED = fa.decode_config


def settings(block_n: int, warps: int, stages: int, pps: int, min_blocks: int):  # noqa: ANN201
    """A decode_config that gives these settings, with decode_config's split rule."""
    def config(device, dtype, seqlen_k, n_groups):  # noqa: ANN001, ANN202
        splits = max(1, min(cdiv(seqlen_k, min_blocks * block_n), (pps * device.sms) // n_groups))
        keys = cdiv(cdiv(seqlen_k, splits), block_n) * block_n
        return fa.DecodeConfig(keys, block_n, warps, stages), 4096
    return config


def call(config, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
    fa.decode_config = config  # attention_decode reads it from its module
    try:
        return fa.flash_attention(q, k, v)
    finally:
        fa.decode_config = TABLED


def main() -> None:
    dry = "--dry" in sys.argv
    dev = torch.device("cpu" if dry else "cuda")
    dtype = torch.float32 if dry else torch.bfloat16
    keys = (96, 200) if dry else (1024, 4096, 16384)
    heads = (2, 8, 2, 32) if dry else (8, 32, 8, 128)  # B, Hq, Hkv, D
    grid = ([(32, 4, 2, 1, 2), (64, 2, 3, 2, 1)] if dry else
            list(itertools.product((32, 64, 128), (2, 4, 8), (2, 3, 4), (1, 2, 3, 4), (1, 2))))
    rows = []
    copy = None
    if not dry:
        from autograder.timing import copy_bandwidth_gbps
        copy = copy_bandwidth_gbps(dev)
    b, hq, hkv, d = heads
    for sk in keys:
        torch.manual_seed(sk)
        q = torch.randn(b, hq, 1, d, device=dev, dtype=dtype)
        k, v = (torch.randn(b, hkv, sk, d, device=dev, dtype=dtype) for _ in range(2))
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
        tol = 2.5e-2 if dtype == torch.bfloat16 else 1e-4
        fns = {"SDPA": lambda i: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
               "solution": lambda i: fa.flash_attention(q, k, v)}
        for s in grid:
            cfg = settings(*s)
            err = float((call(cfg, q, k, v).float() - ref).abs().max() / ref.abs().max())
            assert err < tol, (s, err)
            fns["n{} w{} s{} p{} m{}".format(*s)] = lambda i, cfg=cfg: call(cfg, q, k, v)
        if dry:
            print(f"{sk} keys: {len(fns) - 2} settings within tolerance")
            continue
        from autograder.timing import median, time_interleaved
        times = time_interleaved(fns, 1, 20, dev)
        nbytes = 2 * k.numel() * k.element_size()
        for name, t in times.items():
            us = median(t) * 1e3
            rows.append({"Sk": sk, "impl": name, "us": us, "pct_copy": 100 * nbytes / (us * 1e-6) / 1e9 / copy})
        best = min((r for r in rows if r["Sk"] == sk and r["impl"] not in ("SDPA", "solution")), key=lambda r: r["us"])
        by = {r["impl"]: r for r in rows if r["Sk"] == sk}
        print(f"{sk} keys: SDPA {by['SDPA']['us']:.1f} us, solution {by['solution']['us']:.1f} us "
              f"({by['solution']['pct_copy']:.0f}% of copy, {by['SDPA']['us'] / by['solution']['us']:.2f}x SDPA); best "
              f"{best['impl']} {best['us']:.1f} us ({best['pct_copy']:.0f}%, {by['SDPA']['us'] / best['us']:.2f}x)", flush=True)
    if dry:
        return
    from course.results import run_meta
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    (out / "decode_sweep_probe.json").write_text(json.dumps({"meta": {**run_meta("decode_sweep_probe"), "copy_gbps": copy},
                                                             "rows": rows}, indent=1))
    # the settings best over all three lengths (geometric mean of the time ratio to the solution as tabled)
    names = {r["impl"] for r in rows} - {"SDPA", "solution"}
    by = {(r["Sk"], r["impl"]): r["us"] for r in rows}
    score = {n: math.exp(sum(math.log(by[(sk, "solution")] / by[(sk, n)]) for sk in keys) / len(keys)) for n in names}
    print("\nbest settings over all lengths (solution's time / theirs, geometric mean; then per length vs SDPA):")
    for n in sorted(names, key=lambda n: -score[n])[:8]:
        print(f"  {n:18} {score[n]:.3f}  " + "  ".join(f"{sk}: {by[(sk, 'SDPA')] / by[(sk, n)]:.2f}x" for sk in keys))


if __name__ == "__main__":
    main()
