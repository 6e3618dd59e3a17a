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
# Decode over an INT8 KV cache: the fused-dequantization kernel against the course's bf16 decode and SDPA
# over the bf16 cache; memory of each format, and each output's error against attention over the
# unquantized cache (the quantization's own error, which the grader leaves out on purpose).
# --------------------------------------------------------------------------------------------------


def bench_kv_quant(device: torch.device, smoke: bool, reps: int) -> list[dict[str, Any]]:
    from autograder.specs import flash_attention as spec

    kernels = load_kernels("flash_attention", "solutions")
    seqs = [64, 300] if smoke else [4096, 16384, 65536]
    batch, heads_q, heads_kv, head_dim = (1, 4, 2, 32) if smoke else (8, 32, 8, 128)
    out = []
    for seq_k in seqs:
        params = {"shape": [batch, heads_q, 1, head_dim], "kv_heads": heads_kv, "seq_k": seq_k, "causal": False,
                  "dtype": "float32" if smoke else "bfloat16"}  # fmt: skip
        dense = spec.make_forward_inputs(params, generator(SEED, device), device)
        q, k, v = dense["q"], dense["k"], dense["v"]
        k_q, k_scale, v_q, v_scale = kernels.quantize_kv(k, v)
        cache = {"q": q, "k_q": k_q, "k_scale": k_scale, "v_q": v_q, "v_scale": v_scale}
        # The float64 references repeat K and V over the query heads (17 GB each at Sk = 65536): the checks
        # and the errors are taken on the first CHECKED sequences of the batch.
        few = slice(0, CHECKED)
        graded_ref = spec.reference_kv_int8({n: t[few] for n, t in cache.items()}, params)["o"]  # dequantized cache
        exact = spec.reference_forward({n: t[few] for n, t in dense.items()}, params)["o"]  # unquantized cache
        o_int8 = kernels.flash_decode_int8(q, k_q, k_scale, v_q, v_scale)
        o_bf16 = kernels.flash_attention(q, k, v)
        verdict = compare("o", o_int8[few], graded_ref, spec.TOLERANCES[params["dtype"]])
        del graded_ref

        def err(o: torch.Tensor) -> float:  # max |o - exact| relative to mean |exact|
            return ((o[few].double() - exact).abs().max() / exact.abs().mean()).item()

        fns = {
            "int8 fused": lambda: kernels.flash_decode_int8(q, k_q, k_scale, v_q, v_scale),
            "course bf16 decode": lambda: kernels.flash_attention(q, k, v),
            "SDPA bf16": lambda: spec.sdpa_baseline(dense, params),
        }
        us = _time(fns, device, reps)
        bytes_16 = k.nbytes + v.nbytes
        bytes_8 = k_q.nbytes + v_q.nbytes + k_scale.nbytes + v_scale.nbytes
        out.append({"B": batch, "Hq": heads_q, "Hkv": heads_kv, "Sk": seq_k, "D": head_dim, "dtype": params["dtype"],
                    "check": verdict.ok, "max_error_of_tolerance": round(verdict.max_error, 4),
                    "cache_mb": {"16-bit": round(bytes_16 / 2**20, 2), "int8": round(bytes_8 / 2**20, 2)},
                    "memory_ratio": round(bytes_8 / bytes_16, 4),
                    "error_vs_unquantized": {"int8 fused": err(o_int8), "course bf16 decode": err(o_bf16)},
                    "us": {n: round(t, 2) for n, t in us.items()},
                    "int8_vs_course_bf16": round(us["course bf16 decode"] / us["int8 fused"], 3),
                    "int8_vs_sdpa": round(us["SDPA bf16"] / us["int8 fused"], 3),
                    "int8_cache_gbps": round(bytes_8 / us["int8 fused"] / 1e3, 1)})  # fmt: skip
    print("\ndecode over an INT8 KV cache: microseconds; ratios > 1 mean the INT8 kernel is faster")
    print(
        "\n".join(
            markdown_table(
                ["Sk", "ok", *out[0]["us"], "vs bf16", "vs SDPA", "memory", "err int8", "err bf16", "GB/s"],
                [
                    [
                        r["Sk"],
                        r["check"],
                        *r["us"].values(),
                        r["int8_vs_course_bf16"],
                        r["int8_vs_sdpa"],
                        r["memory_ratio"],
                        *(f"{e:.2e}" for e in r["error_vs_unquantized"].values()),
                        r["int8_cache_gbps"],
                    ]
                    for r in out
                ],
            )
        )
    )
    return out


# --------------------------------------------------------------------------------------------------
# Decode over the INT4 KIVI cache (course/kivi.py), the same way: against the course's bf16 decode and SDPA.
# --------------------------------------------------------------------------------------------------


def bench_kv_int4(device: torch.device, smoke: bool, reps: int) -> list[dict[str, Any]]:
    from autograder.specs import flash_attention as spec

    kernels = load_kernels("flash_attention", "solutions")
    batch, heads_q, heads_kv, head_dim = (1, 4, 2, 32) if smoke else (8, 32, 8, 128)
    out = []
    for seq_k in [64, 300] if smoke else [4096, 16384, 65536]:
        params = {"shape": [batch, heads_q, 1, head_dim], "kv_heads": heads_kv, "seq_k": seq_k, "causal": False,
                  "dtype": "float32" if smoke else "bfloat16", "group_size": spec.KV_INT4_GROUP}  # fmt: skip
        dense = spec.make_forward_inputs(params, generator(SEED, device), device)
        q, k, v = dense["q"], dense["k"], dense["v"]
        cache = kernels.quantize_kv_int4(k, v, spec.KV_INT4_GROUP)
        named = {"q": q, **dict(zip(spec.KV_INT4_NAMES[1:], cache))}
        few = slice(0, CHECKED)  # as in bench_kv_quant: the float64 references on the first sequences only
        o_int4 = kernels.flash_decode_int4(q, *cache, spec.KV_INT4_GROUP)
        verdict = compare("o", o_int4[few], spec.reference_kv_int4({n: t[few] for n, t in named.items()}, params)["o"],
                          spec.TOLERANCES[params["dtype"]])  # fmt: skip
        exact = spec.reference_forward({n: t[few] for n, t in dense.items()}, params)["o"]
        error = ((o_int4[few].double() - exact).abs().max() / exact.abs().mean()).item()
        us = _time({"int4 fused": lambda: kernels.flash_decode_int4(q, *cache, spec.KV_INT4_GROUP),
                    "course bf16 decode": lambda: kernels.flash_attention(q, k, v),
                    "SDPA bf16": lambda: spec.sdpa_baseline(dense, params)}, device, reps)  # fmt: skip
        nbytes = sum(t.nbytes for t in cache)
        out.append({"B": batch, "Hq": heads_q, "Hkv": heads_kv, "Sk": seq_k, "D": head_dim, "dtype": params["dtype"],
                    "group_size": spec.KV_INT4_GROUP, "check": verdict.ok, "max_error_of_tolerance": round(verdict.max_error, 4),
                    "cache_mb": round(nbytes / 2**20, 2), "memory_ratio": round(nbytes / (k.nbytes + v.nbytes), 4),
                    "error_vs_unquantized": error, "us": {n: round(t, 2) for n, t in us.items()},
                    "int4_vs_course_bf16": round(us["course bf16 decode"] / us["int4 fused"], 3),
                    "int4_vs_sdpa": round(us["SDPA bf16"] / us["int4 fused"], 3),
                    "int4_cache_gbps": round(nbytes / us["int4 fused"] / 1e3, 1)})  # fmt: skip
    print("\ndecode over an INT4 KIVI cache: microseconds; ratios > 1 mean the INT4 kernel is faster")
    print(f"{'Sk':>6} {'ok':>3} {'int4':>8} {'bf16':>8} {'SDPA':>8} {'vs bf16':>7} {'vs SDPA':>7} {'memory':>7} {'err int4':>9} {'GB/s':>6}")
    for r in out:
        u = r["us"]
        print(f"{r['Sk']:>6} {'y' if r['check'] else 'NO':>3} {u['int4 fused']:>8.1f} {u['course bf16 decode']:>8.1f} "
              f"{u['SDPA bf16']:>8.1f} {r['int4_vs_course_bf16']:>7.2f} {r['int4_vs_sdpa']:>7.2f} "
              f"{r['memory_ratio']:>6.3f}x {r['error_vs_unquantized']:>9.2e} {r['int4_cache_gbps']:>6.0f}")  # fmt: skip
    return out


SECTIONS: dict[str, Callable[[torch.device, bool, int], list[dict[str, Any]]]] = {
    "linear": bench_linear,
    "kv_quant": bench_kv_quant,
    "kv_int4": bench_kv_int4,
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
