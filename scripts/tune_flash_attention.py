"""Check the flash attention solution on a GPU, calibrate the tolerances against SDPA, and sweep launch
settings of the forward, backward and decode kernels against PyTorch's attention backends.

    python3 scripts/tune_flash_attention.py [--sections correct,fwd,bwd,decode] [--budget 150]
    python3 scripts/tune_flash_attention.py --warm 3/8     # compile one eighth of the variants, no timing

Run the --warm shards in parallel first (each compiles a slice of the variants into Triton's disk cache),
then the main run finds every kernel compiled and spends its time measuring. Prints a table last; with
$OUT set, writes tune.json there.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import course.env  # noqa: F401  (before triton: without a GPU, the interpreter)
import torch
import triton

from autograder import timing
from autograder.spec import DTYPES, generator
from autograder.specs import flash_attention as spec
from course.loader import load_kernels, load_module

REPO = Path(__file__).resolve().parent.parent
K = load_kernels("flash_attention", "solutions")
# Without a GPU the script dry-runs every path on tiny shapes under the interpreter (a test of the script).
DRY = not torch.cuda.is_available()
DEV = torch.device("cpu" if DRY else "cuda")
T0 = time.time()
LOG: list[str] = []
BUDGET = [150.0]
RESULTS: dict = {"correct": [], "fwd": [], "bwd": [], "decode": [], "notes": []}


def sync() -> None:
    if not DRY:
        torch.cuda.synchronize()


def say(line: str) -> None:
    print(line, flush=True)
    LOG.append(line)


# --------------------------------------------------------------------------------------------------
# Variant modules: the solution's source with one change, loaded from a temporary file (Triton reads
# a kernel's source from its file).
# --------------------------------------------------------------------------------------------------

SOURCE = (REPO / "solutions" / "flash_attention" / "kernels.py").read_text()
VARIANT_DIR = Path(tempfile.gettempdir()) / "fa_variants"


def variant(name: str, *edits: tuple[str, str]):
    """The solution with each (old, new) edit applied once, as a module."""
    text = SOURCE
    for old, new in edits:
        if old not in text:
            raise ValueError(f"variant {name}: pattern not found: {old[:60]}")
        text = text.replace(old, new, 1)
    VARIANT_DIR.mkdir(exist_ok=True)
    path = VARIANT_DIR / f"fa_{name}.py"
    path.write_text(text)
    return load_module(path, name=f"fa_variant_{name}")


MODULES = {"base": K}
_DECODE_K = "k = tl.load(k_ptr + kv_offs, mask=key_mask[:, None], other=0.0"
_DECODE_V = "v = tl.load(v_ptr + kv_offs, mask=key_mask[:, None], other=0.0"
try:
    # Automatic warp specialization of the inner loop (call 1: no change on Hopper with triton 3.6).
    _LOOP = "    for start_n in range(lo, hi, BLOCK_N):\n        offs_n = start_n + offs_n0\n        if USE_TMA:"
    _WS_LOOP = _LOOP.replace("range(lo, hi, BLOCK_N)", "tl.range(lo, hi, BLOCK_N, warp_specialize=True)")
    MODULES["ws"] = variant("ws", (_LOOP, _WS_LOOP))
    # Decode: K and V are read once, so let them go first when L2 needs room (dirty lines stay put).
    MODULES["evict"] = variant("evict", (_DECODE_K, _DECODE_K + ', eviction_policy="evict_first"'),
                               (_DECODE_V, _DECODE_V + ', eviction_policy="evict_first"'))
    MODULES["cg"] = variant("cg", (_DECODE_K, _DECODE_K + ', cache_modifier=".cg"'),
                            (_DECODE_V, _DECODE_V + ', cache_modifier=".cg"'))
except Exception as exc:  # noqa: BLE001
    RESULTS["notes"].append(f"variant not built: {exc}")


# --------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------

_inputs: dict = {}


def inputs_for(params: dict, backward: bool = False, seed: int = 1) -> dict:
    key = (json.dumps(params, sort_keys=True), backward, seed)
    if key not in _inputs:
        make = spec.make_backward_inputs if backward else spec.make_forward_inputs
        _inputs[key] = make(params, generator(seed, DEV), DEV)
    return _inputs[key]


def c_needed(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Smallest c with |out - ref| <= c * (mean|ref| + |ref|) everywhere (inf if any NaN)."""
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    err = (out - ref).abs()
    return (err / (ref.abs().mean() + ref.abs())).max().item()


def sdpa_call(backend: str | None, q, k, v, causal: bool, scale: float):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    gqa = q.shape[1] != k.shape[1]
    f = lambda: sdpa(q, k, v, is_causal=causal, scale=scale, enable_gqa=gqa)  # noqa: E731
    if backend is None:
        return f()
    b = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
         "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[backend]  # fmt: skip
    with sdpa_kernel(b):
        return f()


def eager_attention(q, k, v, causal: bool, scale: float):
    """Attention as eager PyTorch writes it: the (S, S) score matrix in memory, softmax in float32."""
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s.float(), dim=-1).to(q.dtype) @ v


# --------------------------------------------------------------------------------------------------
# Jobs: everything that compiles. The warm shards run each once; the main run times them.
# --------------------------------------------------------------------------------------------------

FWD_SHAPE = [1, 2, 64, 128] if DRY else [4, 32, 4096, 128]
FWD64_SHAPE = [1, 2, 64, 64] if DRY else [4, 32, 4096, 64]
SWEEP_DTYPE = "float32" if DRY else "bfloat16"
FWD_VARIANTS = [
    # (module, tma, BLOCK_M, BLOCK_N, warps, stages)
    ("base", True, 128, 64, 8, 3),
    ("base", True, 128, 64, 8, 4),
    ("base", True, 128, 128, 8, 2),
    ("base", True, 128, 128, 8, 3),
    ("base", True, 128, 64, 4, 3),
    ("base", True, 64, 64, 4, 3),
    ("base", False, 128, 64, 8, 3),
    ("base", False, 128, 128, 8, 2),
    ("base", False, 128, 64, 4, 3),
    ("ws", True, 128, 64, 8, 3),
    ("ws", True, 128, 128, 8, 2),
]
FWD64_VARIANTS = [("base", True, 128, 64, 4, 3), ("base", True, 128, 128, 8, 3), ("base", True, 128, 64, 8, 3),
                  ("base", True, 64, 64, 4, 3)]  # fmt: skip
DKDV_VARIANTS = [(64, 128, 8, 2), (64, 128, 8, 3), (32, 128, 8, 3), (64, 64, 4, 3), (32, 64, 4, 3)]
DQ_VARIANTS = [(128, 64, 8, 2), (128, 64, 8, 3), (128, 32, 8, 3), (64, 64, 4, 3), (64, 32, 4, 3)]
DECODE_SHAPE = {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": 4096, "causal": False, "dtype": "bfloat16"}
if DRY:
    DECODE_SHAPE = {"shape": [1, 4, 1, 32], "kv_heads": 2, "seq_k": 256, "causal": False, "dtype": "float32"}
DECODE_VARIANTS = [("base", 256, 64, 4, 3), ("base", 1024, 64, 4, 3), ("base", 512, 64, 4, 2),
                   ("base", 256, 32, 4, 4), ("base", 512, 32, 4, 5), ("base", 256, 32, 2, 4), ("base", 128, 32, 4, 4),
                   ("evict", 256, 64, 4, 3), ("evict", 1024, 64, 4, 3), ("evict", 512, 64, 4, 2),
                   ("evict", 256, 32, 4, 4),
                   ("evict", 512, 32, 4, 5), ("evict", 128, 64, 4, 3),
                   ("cg", 256, 64, 4, 3), ("cg", 1024, 64, 4, 3)]  # fmt: skip
FWDX_VARIANTS = [("base", True, 128, 128, 8, 3), ("base", True, 256, 64, 8, 2), ("base", True, 256, 64, 8, 3),
                 ("base", True, 128, 128, 4, 3)]  # fmt: skip


class Lazy:
    def __init__(self, make: Callable[[], Callable[[], object]]) -> None:
        self.make = make


def fwd_job(params: dict, var: tuple) -> Callable[[], Callable[[], object]]:
    mod, tma, bm, bn, nw, ns = var

    def make() -> Callable[[], object]:
        x = inputs_for(params)
        cfg = K.FwdConfig(bm, bn, nw, ns)
        m = MODULES[mod]
        scale = spec.scale_of(params)
        return lambda: m.attention_forward(x["q"], x["k"], x["v"], params["causal"], scale, False,
                                           config=cfg, use_tma=tma)

    return make


def bwd_parts(params: dict):
    """Inputs of the backward kernels at a shape: q, k, v, o, lse, do, delta."""
    x = inputs_for(params, backward=True)
    scale = spec.scale_of(params)
    o, lse = K.attention_forward(x["q"], x["k"], x["v"], params["causal"], scale, True)
    return x, o, lse, scale


def dkdv_job(params: dict, var: tuple):
    bm, bn, nw, ns = var

    def make():
        x, o, lse, scale = bwd_parts(params)
        q, k, v, do = x["q"], x["k"], x["v"], x["do"]
        dk, dv = torch.empty_like(k), torch.empty_like(v)
        delta = torch.empty_like(lse)
        B, Hq, Sq, D = q.shape
        grid = (triton.cdiv(k.shape[2], bn), B * k.shape[1])
        return lambda: K._attn_bwd_dkdv_kernel[grid](
            q, k, v, do, lse, delta, dk, dv, Sq, k.shape[2], Hq // k.shape[1], scale * K.LOG2E, scale,
            HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=params["causal"], DOT_PRECISION="tf32",
            num_warps=nw, num_stages=ns)

    return make


def dq_job(params: dict, var: tuple):
    bm, bn, nw, ns = var

    def make():
        x, o, lse, scale = bwd_parts(params)
        q, k, v, do = x["q"], x["k"], x["v"], x["do"]
        dq = torch.empty_like(q)
        delta = torch.empty_like(lse)
        B, Hq, Sq, D = q.shape
        grid = (triton.cdiv(Sq, bm), B * Hq)
        return lambda: K._attn_bwd_dq_kernel[grid](
            q, k, v, do, lse, delta, dq, Sq, k.shape[2], Hq, Hq // k.shape[1], scale * K.LOG2E, scale,
            HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=params["causal"], DOT_PRECISION="tf32",
            num_warps=nw, num_stages=ns)

    return make


def full_bwd_job(params: dict, impl: str):
    """The whole backward through autograd (forward outside the timing)."""

    def make():
        x = inputs_for(params, backward=True)
        q, k, v = (x[n].detach().requires_grad_() for n in ("q", "k", "v"))
        scale = spec.scale_of(params)
        if impl == "solution":
            o = K.flash_attention(q, k, v, params["causal"], scale)
        else:
            o = sdpa_call(impl, q, k, v, params["causal"], scale)
        return lambda: torch.autograd.grad(o, (q, k, v), x["do"], retain_graph=True)

    return make


def decode_job(params: dict, var: tuple | None):
    def make():
        x = inputs_for(params)
        scale = spec.scale_of(params)
        if var is None:
            return lambda: K.flash_attention(x["q"], x["k"], x["v"], False, scale)
        cfg = K.DecodeConfig(*var[1:])
        m = MODULES[var[0]]
        return lambda: m.attention_decode(x["q"], x["k"], x["v"], scale, config=cfg)

    return make


def correctness_cases() -> list[tuple[str, dict, str]]:
    if DRY:
        fwd = [("fwd", p, "float32") for p in spec.CPU_RAGGED[:3] + spec.CPU_DECODE[:1]]
        return fwd + [("bwd", spec.CPU_BACKWARD[1], "float32")]
    parts = [("fwd", p) for p in spec.GPU_FORWARD + spec.GPU_CAUSAL + spec.GPU_GQA + spec.GPU_RAGGED + spec.GPU_DECODE]
    parts += [("bwd", p) for p in spec.GPU_BACKWARD]
    return [(kind, p, d) for kind, p in parts for d in ("float32", "float16", "bfloat16")]


def correctness_jobs() -> list[tuple[str, Callable]]:
    jobs = []
    for kind, p, d in correctness_cases():
            params = {**p, "dtype": d}
            job = lambda params=params, kind=kind: run_correct(params, kind, warm=True)  # noqa: E731
            jobs.append((f"correct {kind} {d} {p}", job))
    return jobs


def all_jobs() -> list[tuple[str, Callable]]:
    jobs = correctness_jobs()
    for causal in (False, True):
        params = {"shape": FWD_SHAPE, "causal": causal, "dtype": SWEEP_DTYPE}
        for var in FWD_VARIANTS:
            if var[0] in MODULES:
                jobs.append((f"fwd {causal} {var}", lambda params=params, var=var: fwd_job(params, var)()()))
        p64 = {"shape": FWD64_SHAPE, "causal": causal, "dtype": SWEEP_DTYPE}
        for var in FWD64_VARIANTS:
            jobs.append((f"fwd64 {causal} {var}", lambda p64=p64, var=var: fwd_job(p64, var)()()))
        for var in DKDV_VARIANTS:
            jobs.append((f"dkdv {causal} {var}", lambda params=params, var=var: dkdv_job(params, var)()()))
        for var in DQ_VARIANTS:
            jobs.append((f"dq {causal} {var}", lambda params=params, var=var: dq_job(params, var)()()))
    for var in DECODE_VARIANTS:
        if var[0] in MODULES:
            jobs.append((f"decode {var}", lambda var=var: decode_job(DECODE_SHAPE, var)()()))
    for causal in (False, True):
        params = {"shape": FWD_SHAPE, "causal": causal, "dtype": SWEEP_DTYPE}
        for var in FWDX_VARIANTS:
            jobs.append((f"fwdx {causal} {var}", lambda params=params, var=var: fwd_job(params, var)()()))
        p16 = {**params, "dtype": "float16"}
        jobs.append((f"fwdx16 {causal}", lambda p16=p16: fwd_job(p16, FWDX_VARIANTS[0])()()))
    return jobs


# --------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------


def run_correct(params: dict, kind: str, warm: bool = False) -> dict | None:
    scale = spec.scale_of(params)
    causal = params["causal"]
    if kind == "fwd":
        x = inputs_for(params)
        out = K.flash_attention(x["q"], x["k"], x["v"], causal, params.get("scale"))
        if warm:
            return None
        ref = spec.attention64(x["q"], x["k"], x["v"], causal, scale)
        row = {"kind": kind, "params": params, "solution": c_needed(out, ref)}
        for backend in ("flash", "cudnn", "efficient", None):
            try:
                out = sdpa_call(backend, x["q"], x["k"], x["v"], causal, scale)
                row[f"sdpa_{backend or 'default'}"] = c_needed(out, ref)
            except Exception:  # noqa: BLE001  (backend does not support this dtype or shape)
                row[f"sdpa_{backend or 'default'}"] = None
        return row
    x = inputs_for(params, backward=True)
    q, k, v = (x[n].detach().requires_grad_() for n in ("q", "k", "v"))
    o = K.flash_attention(q, k, v, causal, params.get("scale"))
    grads = torch.autograd.grad(o, (q, k, v), x["do"])
    if warm:
        return None
    ref = spec.reference_backward(x, params)
    row = {"kind": kind, "params": params,
           "solution": max(c_needed(g, ref[n]) for g, n in zip(grads, ("dq", "dk", "dv")))}  # fmt: skip
    for backend in ("flash", "cudnn", "efficient", None):
        try:
            o = sdpa_call(backend, q, k, v, causal, scale)
            g2 = torch.autograd.grad(o, (q, k, v), x["do"])
            row[f"sdpa_{backend or 'default'}"] = max(c_needed(g, ref[n]) for g, n in zip(g2, ("dq", "dk", "dv")))
        except Exception:  # noqa: BLE001
            row[f"sdpa_{backend or 'default'}"] = None
    return row


def section_correct() -> None:
    say("== correctness on cuda and tolerance calibration: c = max |out - ref| / (mean|ref| + |ref|)")
    worst: dict = {}
    for kind, p, d in correctness_cases():
            params = {**p, "dtype": d}
            if time.time() - T0 > BUDGET[0] + 30:
                say("correct: out of time budget")
                break
            try:
                row = run_correct(params, kind)
            except Exception as exc:  # noqa: BLE001
                say(f"FAIL {kind} {d} {p}: {type(exc).__name__}: {str(exc)[:300]}")
                continue
            RESULTS["correct"].append(row)
            tol = (spec.TOLERANCES if kind == "fwd" else spec.BACKWARD_TOLERANCES)[d].rtol
            fmt = lambda c: "  -   " if c is None else f"{c:.1e}"  # noqa: E731
            say(f"{kind} {d:8s} {str(p):75s} sol {fmt(row['solution'])} ({row['solution'] / tol:5.0%} of tol)  "
                f"flash {fmt(row['sdpa_flash'])} cudnn {fmt(row['sdpa_cudnn'])} eff {fmt(row['sdpa_efficient'])} "
                f"default {fmt(row['sdpa_default'])}")
            for key, c in row.items():
                if key.startswith("sdpa") or key == "solution":
                    if c is not None:
                        worst[(kind, d, key)] = max(worst.get((kind, d, key), 0.0), c)
    say("worst c per (pass, dtype, impl): " + ", ".join(f"{'/'.join(k)}={v:.1e}" for k, v in sorted(worst.items())))
    RESULTS["worst_c"] = {"/".join(k): v for k, v in worst.items()}


def time_group(fns: dict[str, Callable[[], object]], reps: int = 20) -> dict[str, float]:
    """Median ms of each callable, interleaved, L2 flushed before each call. A value that is a Lazy is
    built first (its failure, like a call's, drops that entry with a note)."""
    ok = {}
    for name, fn in fns.items():
        try:
            if isinstance(fn, Lazy):
                fn = fn.make()
            fn()
            sync()
            ok[name] = fn
        except Exception as exc:  # noqa: BLE001
            say(f"  {name}: failed: {type(exc).__name__}: {str(exc)[:200]}")
    if DRY:
        out = {}
        for k, f in ok.items():
            t = time.perf_counter()
            f()
            out[k] = (time.perf_counter() - t) * 1e3
        return out
    calls = {k: (lambda i, f=f: f()) for k, f in ok.items()}
    times = timing.time_interleaved(calls, 1, reps, DEV, warmup_ms=25, min_warmup_calls=3)
    return {k: timing.median(v) for k, v in times.items()}


def section_fwd(budget: float) -> None:
    for shape, variants in ((FWD_SHAPE, FWD_VARIANTS), (FWD64_SHAPE, FWD64_VARIANTS)):
        for causal in (False, True):
            if time.time() - T0 > budget:
                say("fwd: out of time budget")
                return
            params = {"shape": shape, "causal": causal, "dtype": SWEEP_DTYPE}
            flops = spec.attention_flops(params)
            x = inputs_for(params)
            scale = spec.scale_of(params)
            fns = {str(v): fwd_job(params, v)() for v in variants if v[0] in MODULES}
            # The winners are checked for correctness too, at this shape, against SDPA's math in float32.
            for backend in ("flash", "cudnn", None):
                fns[f"sdpa {backend or 'default'}"] = lambda b=backend: sdpa_call(b, x["q"], x["k"], x["v"], causal,
                                                                                   scale)
            if shape[3] == 128:
                fns["eager"] = lambda: eager_attention(x["q"], x["k"], x["v"], causal, scale)
            ms = time_group(fns)
            say(f"== forward {shape} causal={causal} bf16: TFLOP/s")
            for name, t in sorted(ms.items(), key=lambda kv: kv[1]):
                say(f"  {name:42s} {t * 1e3:9.1f} us {flops / t / 1e9:7.1f} TFLOP/s")
                RESULTS["fwd"].append({"shape": shape, "causal": causal, "impl": name, "ms": t,
                                       "tflops": flops / t / 1e9})
            # correctness of every variant at this shape against SDPA's flash (both bf16; loose sanity check)
            ref = sdpa_call("flash", x["q"], x["k"], x["v"], causal, scale).float()
            for v in variants:
                if v[0] in MODULES:
                    out = fns[str(v)]()
                    if out is not None:
                        err = (out[0].float() - ref).abs().max().item()
                        if not err < 0.05:
                            say(f"  WRONG {v}: max |diff| to SDPA flash {err:.3g}")


def section_fwdx(budget: float) -> None:
    """Second round on the forward: bigger query tiles, and float16 at the chosen config."""
    for causal in (False, True):
        params = {"shape": FWD_SHAPE, "causal": causal, "dtype": SWEEP_DTYPE}
        p16 = {**params, "dtype": "float16"}
        x = inputs_for(params)
        scale = spec.scale_of(params)
        fns = {str(v): Lazy(fwd_job(params, v)) for v in FWDX_VARIANTS}
        fns["float16 " + str(FWDX_VARIANTS[0])] = Lazy(fwd_job(p16, FWDX_VARIANTS[0]))
        fns["sdpa flash"] = lambda: sdpa_call("flash", x["q"], x["k"], x["v"], causal, scale)
        fns["sdpa cudnn"] = lambda: sdpa_call("cudnn", x["q"], x["k"], x["v"], causal, scale)
        ms = time_group(fns)
        flops = spec.attention_flops(params)
        say(f"== forward round 2 {FWD_SHAPE} causal={causal}: TFLOP/s")
        for name, t in sorted(ms.items(), key=lambda kv: kv[1]):
            say(f"  {name:42s} {t * 1e3:9.1f} us {flops / t / 1e9:7.1f} TFLOP/s")
            RESULTS["fwd"].append({"shape": FWD_SHAPE, "causal": causal, "impl": "r2 " + name, "ms": t,
                                   "tflops": flops / t / 1e9})


def section_bwd(budget: float) -> None:
    for causal in (False, True):
        if time.time() - T0 > budget:
            say("bwd: out of time budget")
            return
        params = {"shape": FWD_SHAPE, "causal": causal, "dtype": SWEEP_DTYPE}
        fl = spec.attention_flops(params)
        say(f"== backward kernels {FWD_SHAPE} causal={causal} bf16 "
            "(TFLOP/s of each kernel's own work: dkdv 4 matmuls, dq 3)")
        ms = time_group({f"dkdv {v}": Lazy(dkdv_job(params, v)) for v in DKDV_VARIANTS})
        for name, t in sorted(ms.items(), key=lambda kv: kv[1]):
            say(f"  {name:30s} {t * 1e3:9.1f} us {fl * 2 / t / 1e9:7.1f} TFLOP/s")
            RESULTS["bwd"].append({"causal": causal, "impl": name, "ms": t})
        ms = time_group({f"dq {v}": Lazy(dq_job(params, v)) for v in DQ_VARIANTS})
        for name, t in sorted(ms.items(), key=lambda kv: kv[1]):
            say(f"  {name:30s} {t * 1e3:9.1f} us {fl * 1.5 / t / 1e9:7.1f} TFLOP/s")
            RESULTS["bwd"].append({"causal": causal, "impl": name, "ms": t})
        impls = ("solution", "flash", "cudnn", "efficient")
        ms = time_group({impl: Lazy(full_bwd_job(params, impl)) for impl in impls})
        say(f"== full backward (autograd) causal={causal}: TFLOP/s counted as 2.5x the forward's")
        for name, t in sorted(ms.items(), key=lambda kv: kv[1]):
            say(f"  {name:30s} {t * 1e3:9.1f} us {fl * 2.5 / t / 1e9:7.1f} TFLOP/s")
            RESULTS["bwd"].append({"causal": causal, "impl": f"full {name}", "ms": t, "tflops": fl * 2.5 / t / 1e9})


def section_decode(budget: float) -> None:
    for sk in (256,) if DRY else (4096, 1024, 16384):
        if time.time() - T0 > budget:
            say("decode: out of time budget")
            return
        params = {**DECODE_SHAPE, "seq_k": sk}
        x = inputs_for(params)
        nbytes = spec.attention_bytes(params)
        scale = spec.scale_of(params)
        fns = {"solution (default config)": Lazy(decode_job(params, None))}
        if sk == DECODE_SHAPE["seq_k"]:
            fns.update({f"decode {v}": Lazy(decode_job(params, v)) for v in DECODE_VARIANTS if v[0] in MODULES})
        for backend in (None, "flash", "efficient", "cudnn", "math"):
            fns[f"sdpa {backend or 'default'}"] = lambda b=backend: sdpa_call(b, x["q"], x["k"], x["v"], False, scale)
        ms = time_group(fns, reps=30)
        say(f"== decode B8 Hq32 Hkv8 Sk{sk} D128 bf16: TB/s of q, k, v, o")
        base = ms.get("sdpa default")
        for name, t in sorted(ms.items(), key=lambda kv: kv[1]):
            ratio = base / t if base else 0
            say(f"  {name:34s} {t * 1e3:8.1f} us {nbytes / t / 1e9:7.2f} TB/s  {ratio:5.2f}x sdpa default")
            RESULTS["decode"].append({"seq_k": sk, "impl": name, "ms": t, "tbps": nbytes / t / 1e9})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warm", help="i/n: compile shard i of n, time nothing")
    ap.add_argument("--only", default="", help="with --warm: only jobs whose names start with one of these (a,b,...)")
    ap.add_argument("--sections", default="fwd,decode,bwd,correct")
    ap.add_argument("--budget", type=float, default=150.0, help="seconds after which remaining sweeps are skipped")
    args = ap.parse_args()
    if args.warm:
        i, n = map(int, args.warm.split("/"))
        prefixes = tuple(p for p in args.only.split(",") if p)
        jobs = [(name, job) for name, job in all_jobs() if not prefixes or name.startswith(prefixes)]
        for j, (name, job) in enumerate(jobs):
            if j % n == i:
                t = time.time()
                try:
                    job()
                    sync()
                    print(f"warm {name}: {time.time() - t:.1f}s", flush=True)
                except Exception as exc:  # noqa: BLE001
                    print(f"warm {name}: FAILED {type(exc).__name__}: {str(exc)[:400]}", flush=True)
        return 0
    name = "CPU dry run" if DRY else torch.cuda.get_device_properties(0).name
    say(f"{name}; torch {torch.__version__}, triton {triton.__version__}")
    RESULTS["meta"] = {"gpu": name, "torch": torch.__version__, "triton": triton.__version__,
                       "date": time.strftime("%Y-%m-%d")}  # fmt: skip
    for note in RESULTS["notes"]:
        say(note)
    BUDGET[0] = args.budget
    for name in args.sections.split(","):
        if True:
            t = time.time()
            try:
                sections = {"correct": section_correct, "fwd": lambda: section_fwd(args.budget),
                            "fwdx": lambda: section_fwdx(args.budget), "bwd": lambda: section_bwd(args.budget),
                            "decode": lambda: section_decode(args.budget)}  # fmt: skip
                sections[name]()
            except Exception as exc:  # noqa: BLE001
                say(f"section {name} FAILED: {type(exc).__name__}: {str(exc)[:500]}")
            say(f"(section {name}: {time.time() - t:.0f}s)")
    out = os.environ.get("OUT")
    if out:
        Path(out, "tune.json").write_text(json.dumps(RESULTS, indent=1, default=str) + "\n")
    say(f"total {time.time() - T0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
