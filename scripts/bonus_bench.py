"""Check and time the bonus parts of issue 21 on a GPU: rmsnorm_linear against the unfused paths, and decode
attention over a quantized KV cache (INT8, INT4 KIVI) against the course's bf16 decode and SDPA.

    python scripts/bonus_bench.py --out OUT [--sections linear,kv_quant,kv_int4] [--smoke]

Writes OUT/bonus_bench.json and prints one table per section. Every variant is checked against the float64
reference with the grader's tolerance before it is timed; times are medians of the grader's timer
(autograder/timing.py: L2 flushed before every call, calls interleaved). `--smoke` runs both sections on the
CPU interpreter at tiny sizes (correctness only, times meaningless), to check the script before a GPU run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

import course.env  # noqa: E402  (before triton)
from autograder.checking import compare  # noqa: E402
from autograder.spec import generator  # noqa: E402
from autograder.timing import interleaved_ms  # noqa: E402
from course.loader import load_kernels  # noqa: E402
from course.results import Sections, markdown_table, run_meta, section_parser  # noqa: E402

SEED = 2026
REPS = 30
CHECKED = 2  # sequences of the decode batch checked against the float64 references


def _time(fns: dict[str, Callable[[], object]], device: torch.device, reps: int) -> dict[str, float]:
    """Median microseconds per call of each zero-argument function, interleaved, L2 flushed before each."""
    return {n: ms * 1e3 for n, ms in interleaved_ms(fns, reps, device).items()}


# --------------------------------------------------------------------------------------------------
# rmsnorm_linear: fused against the course's RMSNorm + cuBLAS, F.rms_norm + cuBLAS, and cuBLAS alone.
# --------------------------------------------------------------------------------------------------


def bench_linear(device: torch.device, smoke: bool, reps: int) -> list[dict[str, Any]]:
    from autograder.specs import rmsnorm as spec

    kernels = load_kernels("rmsnorm", "solutions")
    rows = [1, 4] if smoke else [1, 4, 16, 64, 256]
    shapes = [(96, 130)] if smoke else [(4096, 14336), (4096, 4096)]
    out = []
    for k, n in shapes:
        for m in rows:
            params = {"M": m, "K": k, "N": n, "dtype": "float32" if smoke else "bfloat16", "eps": 1e-6}
            inputs = spec.make_linear_inputs(params, generator(SEED, device), device)
            x, nw, w = inputs["x"], inputs["norm_weight"], inputs["w"]
            verdict = compare("y", kernels.rmsnorm_linear(x, nw, w, 1e-6), spec.reference_linear(inputs, params)["y"],
                              spec.LINEAR_TOLERANCES[params["dtype"]])  # fmt: skip
            x_norm = kernels.rmsnorm(x, nw, 1e-6)
            fns = {
                "fused": lambda: kernels.rmsnorm_linear(x, nw, w, 1e-6),
                "course rmsnorm + cuBLAS": lambda: kernels.rmsnorm(x, nw, 1e-6) @ w.T,
                "F.rms_norm + cuBLAS": lambda: spec.unfused_linear_baseline(inputs, params),
                "cuBLAS alone": lambda: x_norm @ w.T,  # the product without any norm: the floor of the unfused path
            }
            us = _time(fns, device, reps)
            cfg = kernels.linear_config(kernels.device_of(x), m, n, x.element_size())
            row = {
                "M": m,
                "K": k,
                "N": n,
                "dtype": params["dtype"],
                "check": verdict.ok,
                "max_error_of_tolerance": round(verdict.max_error, 4),
                "us": {n_: round(t, 2) for n_, t in us.items()},
                "fused_vs_course_unfused": round(us["course rmsnorm + cuBLAS"] / us["fused"], 3),
                "fused_vs_F_unfused": round(us["F.rms_norm + cuBLAS"] / us["fused"], 3),
                "fused_vs_cublas_alone": round(us["cuBLAS alone"] / us["fused"], 3),
                "fused_w_gbps": round(spec.linear_bytes(params) / us["fused"] / 1e3, 1),
                "config": {
                    "BLOCK_M": cfg[0],
                    "BLOCK_N": cfg[1],
                    "BLOCK_K": cfg[2],
                    "num_warps": cfg[3],
                    "num_stages": cfg[4],
                },
            }
            out.append(row)
    print("\nrmsnorm_linear: microseconds; ratios > 1 mean the fused kernel is faster")
    print("\n".join(markdown_table(["M", "K", "N", "ok", *out[0]["us"], "vs course", "vs F", "fused GB/s"],
                                   [[r["M"], r["K"], r["N"], r["check"], *r["us"].values(), r["fused_vs_course_unfused"],
                                     r["fused_vs_F_unfused"], r["fused_w_gbps"]] for r in out])))  # fmt: skip
    return out


# --------------------------------------------------------------------------------------------------
# Decode over a quantized KV cache, INT8 (per token) or INT4 KIVI (course/kivi.py): the fused-dequantization
# kernel against the course's bf16 decode and SDPA over the bf16 cache; memory of each format, and each
# output's error against attention over the unquantized cache (the quantization's own error, which the grader
# leaves out on purpose).
# --------------------------------------------------------------------------------------------------


def bench_kv(fmt: str, device: torch.device, smoke: bool, reps: int) -> list[dict[str, Any]]:
    from autograder.specs import flash_attention as spec

    kernels = load_kernels("flash_attention", "solutions")
    batch, heads_q, heads_kv, head_dim = (1, 4, 2, 32) if smoke else (8, 32, 8, 128)
    group = spec.KV_INT4_GROUP
    out = []
    for seq_k in [64, 300] if smoke else [4096, 16384, 65536]:
        params = {"shape": [batch, heads_q, 1, head_dim], "kv_heads": heads_kv, "seq_k": seq_k, "causal": False,
                  "dtype": "float32" if smoke else "bfloat16", **({"group_size": group} if fmt == "int4" else {})}
        dense = spec.make_forward_inputs(params, generator(SEED, device), device)
        q, k, v = dense["q"], dense["k"], dense["v"]
        if fmt == "int8":
            cache, reference = kernels.quantize_kv(k, v), spec.reference_kv_int8
            names = ("k_q", "k_scale", "v_q", "v_scale")
            decode = lambda: kernels.flash_decode_int8(q, *cache)  # noqa: E731
        else:
            cache, reference = kernels.quantize_kv_int4(k, v, group), spec.reference_kv_int4
            names = spec.KV_INT4_NAMES[1:]
            decode = lambda: kernels.flash_decode_int4(q, *cache, group)  # noqa: E731
        # The float64 references repeat K and V over the query heads (17 GB each at Sk = 65536): the checks
        # and the errors are taken on the first CHECKED sequences of the batch.
        few = slice(0, CHECKED)
        named = {"q": q, **dict(zip(names, cache))}
        o_quant, o_bf16 = decode(), kernels.flash_attention(q, k, v)
        verdict = compare("o", o_quant[few], reference({n: t[few] for n, t in named.items()}, params)["o"],
                          spec.TOLERANCES[params["dtype"]])  # fmt: skip
        exact = spec.reference_forward({n: t[few] for n, t in dense.items()}, params)["o"]  # unquantized cache

        def err(o: torch.Tensor) -> float:  # max |o - exact| relative to mean |exact|
            return ((o[few].double() - exact).abs().max() / exact.abs().mean()).item()

        us = _time({fmt: decode, "course bf16 decode": lambda: kernels.flash_attention(q, k, v),
                    "SDPA bf16": lambda: spec.sdpa_baseline(dense, params)}, device, reps)  # fmt: skip
        nbytes = sum(t.nbytes for t in cache)
        out.append({"B": batch, "Hq": heads_q, "Hkv": heads_kv, "Sk": seq_k, "D": head_dim, "dtype": params["dtype"],
                    **({"group_size": group} if fmt == "int4" else {}), "check": verdict.ok,
                    "max_error_of_tolerance": round(verdict.max_error, 4), "cache_mb": round(nbytes / 2**20, 2),
                    "memory_ratio": round(nbytes / (k.nbytes + v.nbytes), 4),
                    "error_vs_unquantized": {fmt: err(o_quant), "course bf16 decode": err(o_bf16)},
                    "us": {n: round(t, 2) for n, t in us.items()},
                    "vs_course_bf16": round(us["course bf16 decode"] / us[fmt], 3),
                    "vs_sdpa": round(us["SDPA bf16"] / us[fmt], 3),
                    "cache_gbps": round(nbytes / us[fmt] / 1e3, 1)})  # fmt: skip
    print(f"\ndecode over an {fmt.upper()} KV cache: microseconds; ratios > 1: the {fmt.upper()} kernel is faster")
    head = ["Sk", "ok", *out[0]["us"], "vs bf16", "vs SDPA", "memory", f"err {fmt}", "err bf16", "GB/s"]
    rows = [[r["Sk"], r["check"], *r["us"].values(), r["vs_course_bf16"], r["vs_sdpa"], r["memory_ratio"],
             *(f"{e:.2e}" for e in r["error_vs_unquantized"].values()), r["cache_gbps"]] for r in out]  # fmt: skip
    print("\n".join(markdown_table(head, rows)))
    return out


SECTIONS: dict[str, Callable[[torch.device, bool, int], list[dict[str, Any]]]] = {
    "linear": bench_linear,
    "kv_quant": lambda device, smoke, reps: bench_kv("int8", device, smoke, reps),
    "kv_int4": lambda device, smoke, reps: bench_kv("int4", device, smoke, reps),
}


def main(argv: list[str] | None = None) -> int:
    args = section_parser(__doc__, list(SECTIONS)).parse_args(argv)
    device = course.env.setup_triton()
    if not args.smoke and device.type != "cuda":
        sys.exit("bonus_bench.py times kernels on a GPU; on a CPU run it with --smoke.")
    reps = 3 if args.smoke else REPS
    run = Sections(
        args.out / "bonus_bench.json",
        {**run_meta("python scripts/bonus_bench.py " + " ".join(argv or sys.argv[1:])), "reps": reps},
    )
    failed = []
    for name in args.sections:
        failed += [
            f"{name}: {r}"
            for r in run.run(name, lambda name=name: SECTIONS[name](device, args.smoke, reps)) or []
            if not r["check"]
        ]
    print(f"\n{run.results['meta']['gpu']}: {run.path}")
    if failed or run.results["errors"]:
        print("FAILED checks:\n  " + "\n  ".join(map(str, failed + run.results["errors"])))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
