"""Time a Llama-3-8B decoder block on a GPU: PyTorch eager, torch.compile and the course's kernels (module 10).

    python scripts/llama_block_bench.py --out OUT [--sections check,attention,decode,breakdown,ablation,prefill,...]
                                        [--kernels solutions|assignments] [--smoke]

Sections for shipping the kernels into a program (issue 20), in the order worth running them:

    python scripts/llama_block_bench.py --out OUT --sections host,shipping_decode,train,shipping_prefill

host: host microseconds per call of every course op (public call, registered op, bare Triton launch,
PyTorch); shipping_decode: decode, batch 1-16, 4096-token cache, W4A16, eager and torch.compile
mode="reduce-overhead" (CUDA graphs with no hand capture), course against PyTorch; train: forward and
backward of the block, batch 1-4 x 2048, eager autograd and torch.compile, gradients checked in bf16
against float32; shipping_prefill: batch 1-4 x 512-4096 under torch.compile. They also write
OUT/shipping.md, the tables notebook 10 and lectures/10 quote.

Writes OUT/llama_block.json (merged with what is there already, section by section) and prints a short
table per section. `--smoke` runs every section on the CPU with the tiny configuration (no compile, no
graphs, one size each), to check the script before spending GPU time on it.

Every block time is the median over repetitions of the mean time of back-to-back calls (layers run back to
back in a model, so no cache flush), measured with CUDA events after warm-up; every variant is checked
against a float32 block before it is timed. The stage breakdown times each stage alone with the grader's
timer (autograder/timing.py: L2 flushed, a head start for the host), which leaves out the launch gaps
between stages; it also records each stage's cost when called back to back, host launch included.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import course.env  # noqa: E402  (before triton)
import torch  # noqa: E402

from course.llama import (  # noqa: E402
    KERNELS,
    LLAMA3_8B,
    STAGE_KIND,
    TINY,
    BlockWeights,
    KVCache,
    LlamaConfig,
    Ops,
    block_flops,
    block_forward,
    course_ops,
    load_course_kernels,
    quantized,
    random_weights,
    reference_block,
    relative_error,
    rotary_tables,
    torch_ops,
    train_step,
    trainable,
)

ALL_BF16 = ("rmsnorm", "rope", "attention", "swiglu")  # the course block with cuBLAS bf16 projections
ALL_W4 = (*ALL_BF16, "w4a16")
PREFILL_SIZES = [(1, 512), (1, 2048), (1, 4096), (4, 512), (4, 2048), (4, 4096)]  # shipping_prefill, compiled
ERRORS: list[dict[str, Any]] = []  # variants that failed to build, check or capture


class Bench:
    """The weights, tables and kernels of one configuration, and the ways of running a block on them."""

    def __init__(self, cfg: LlamaConfig, dtype: torch.dtype, device: torch.device, max_positions: int,
                 kernels: str = "solutions") -> None:  # fmt: skip
        self.cfg, self.dtype, self.device = cfg, dtype, device
        self.weights = random_weights(cfg, dtype, device, seed=0)
        self.weights_w4 = quantized(self.weights, cfg.group_size)
        self.rotary = rotary_tables(cfg, max_positions, dtype, device)
        self.kernels, self.sources = load_course_kernels(device, prefer=kernels)

    def ops(self, switched_on: tuple[str, ...]) -> Ops:
        return course_ops(self.kernels, switched_on, self.cfg.group_size) if switched_on else torch_ops()

    def weights_for(self, switched_on: tuple[str, ...]) -> BlockWeights:
        return self.weights_w4 if "w4a16" in switched_on else self.weights

    def block(self, switched_on: tuple[str, ...], start: int = 0, cache: KVCache | None = None,
              stage: Callable[..., torch.Tensor] | None = None) -> Callable[[torch.Tensor], torch.Tensor]:  # fmt: skip
        ops, weights = self.ops(switched_on), self.weights_for(switched_on)
        extra = {"stage": stage} if stage is not None else {}
        return lambda x: block_forward(x, weights, self.cfg, ops, self.rotary, start, cache, **extra)

    def reference(self, x: torch.Tensor, w4: bool, start: int = 0, cache: KVCache | None = None) -> torch.Tensor:
        """The PyTorch block in float32 on the same weights (the dequantized ones for W4A16)."""
        return reference_block(x, self.weights_w4 if w4 else self.weights, self.cfg, torch.float32, start, cache)


# --------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------


def per_call_ms(fn: Callable[[], Any], calls: int, reps: int = 7) -> float:
    """Median over reps of the mean time of `calls` back-to-back calls, host overhead included."""
    for _ in range(3):
        fn()
    if not torch.cuda.is_available():
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def gpu_ms(fn: Callable[[], Any], reps: int = 30) -> float:
    """GPU time of one call alone: the grader's timer (L2 flushed, then a device-side spin that gives the
    host a head start, so that a slow launch does not show up as GPU time), median of reps."""
    if not torch.cuda.is_available():
        return per_call_ms(fn, 1)
    from autograder.timing import median, time_interleaved

    return median(time_interleaved({"stage": lambda i: fn()}, 1, reps, torch.device("cuda"))["stage"])


def cuda_graph(fn: Callable[[], torch.Tensor]) -> Callable[[], torch.Tensor]:
    """Capture fn's launches once; the returned function replays them (fn's inputs must stay in place)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # compile kernels and settle allocations before capture
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()

    def replay() -> torch.Tensor:
        graph.replay()
        return out

    return replay


def compiled(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    return torch.compile(fn, dynamic=False, fullgraph=True)


# --------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------


def decode_setup(bench: Bench, batch: int, kv: int, seed: int = 1) -> tuple[torch.Tensor, KVCache]:
    """One new token per sequence after kv - 1 cached ones: the cache holds exactly kv positions."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    cfg = bench.cfg
    cache = KVCache.empty(cfg, batch, kv, bench.dtype, bench.device)
    cache.k.copy_(torch.randn(cache.k.shape, generator=g).to(bench.dtype))
    cache.v.copy_(torch.randn(cache.v.shape, generator=g).to(bench.dtype))
    x = torch.randn(batch, 1, cfg.hidden_size, generator=g).to(device=bench.device, dtype=bench.dtype)
    return x, cache


def prefill_input(bench: Bench, batch: int, seq: int, seed: int = 2) -> torch.Tensor:
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(batch, seq, bench.cfg.hidden_size, generator=g).to(device=bench.device, dtype=bench.dtype)


def check(bench: Bench, x: torch.Tensor, fn: Callable[[torch.Tensor], torch.Tensor], w4: bool,
          start: int = 0, cache: KVCache | None = None, limit: float = 2e-2) -> float:  # fmt: skip
    """Relative error of fn(x) against the float32 block; raises when it is past `limit`."""
    ref = bench.reference(x, w4, start, cache)
    err = relative_error(fn(x), ref)
    if not err < limit:
        raise AssertionError(f"relative error {err:.3g} against the float32 block, above {limit}")
    return err


def section_check(bench: Bench, quick: bool) -> list[dict[str, Any]]:
    """Every variant against the float32 block: prefill, and decode after a cached prompt."""
    rows = []
    batch, seq = (1, 512) if not quick else (1, 37)
    x = prefill_input(bench, batch, seq)
    for switched in [(), *[(k,) for k in ALL_BF16], ALL_BF16, ("w4a16",), ALL_W4]:
        err = relative_error(bench.block(switched)(x), bench.reference(x, "w4a16" in switched))
        rows.append({"phase": "prefill", "batch": batch, "seq": seq, "switches": list(switched), "rel_err": err})
        print(f"check prefill {'+'.join(switched) or 'eager':45s} relative error {err:.2e}", flush=True)
    kv = 64 if quick else 4096
    for switched in [(), ALL_BF16, ALL_W4]:
        xd, cache = decode_setup(bench, 4, kv)
        ref = bench.reference(xd, "w4a16" in switched, kv - 1, cache)
        err = relative_error(bench.block(switched, kv - 1, cache)(xd), ref)
        rows.append({"phase": "decode", "batch": 4, "kv": kv, "switches": list(switched), "rel_err": err})
        print(f"check decode  {'+'.join(switched) or 'eager':45s} relative error {err:.2e}", flush=True)
    # What 4-bit weights do to the numbers: the block on W4A16 weights against the bf16 one, both in float32.
    xq = prefill_input(bench, 1, 64)
    rows.append({"phase": "quantization", "batch": 1, "seq": 64, "switches": [],
                 "rel_err": relative_error(bench.reference(xq, True), bench.reference(xq, False))})  # fmt: skip
    return rows


def variants(bench: Bench, batch: int, seq: int, decode: bool, use_compile: bool, graphs: bool):
    """(name, function of no arguments) for each way of running the block on one input, checked first."""
    if decode:
        x, cache = decode_setup(bench, batch, seq)
        start = seq - 1
    else:
        x, cache, start = prefill_input(bench, batch, seq), None, 0
    plans: list[tuple[str, tuple[str, ...], bool, bool]] = [("eager", (), False, False)]
    if use_compile:
        plans.append(("torch.compile", (), True, False))
    plans.append(("course", ALL_BF16, False, False))
    if graphs and not decode:
        plans += [("torch.compile + CUDA graph", (), True, True)] if use_compile else []
        plans.append(("course + CUDA graph", ALL_BF16, False, True))
    if decode:
        plans.append(("course W4A16", ALL_W4, False, False))
        if graphs:
            plans += [("eager + CUDA graph", (), False, True)]
            if use_compile:
                plans.append(("torch.compile + CUDA graph", (), True, True))
            plans += [("course + CUDA graph", ALL_BF16, False, True), ("course W4A16 + CUDA graph", ALL_W4, False, True)]
    out = []
    for name, switched, comp, graph in plans:
        try:
            fn = bench.block(switched, start, cache)
            if comp:
                fn = compiled(fn)
            err = check(bench, x, fn, "w4a16" in switched, start, cache)
            call = (lambda fn=fn: fn(x)) if not graph else cuda_graph(lambda fn=fn: fn(x))
        except Exception as e:  # one failed variant must not cost the rest of the run
            ERRORS.append({"batch": batch, "seq": seq, "decode": decode, "impl": name, "error": repr(e)[:500]})
            print(f"FAILED {name} B={batch} S={seq}: {e!r}"[:300], flush=True)
            continue
        out.append((name, call, err))
    return out


def section_prefill(bench: Bench, quick: bool, use_compile: bool, graphs: bool) -> list[dict[str, Any]]:
    rows = []
    sizes = [(1, 37)] if quick else [(b, s) for b in (1, 2, 4) for s in (512, 1024, 2048, 4096)]
    for batch, seq in sizes:
        flops = block_flops(bench.cfg, batch, seq, seq, causal=True)
        for name, call, err in variants(bench, batch, seq, decode=False, use_compile=use_compile, graphs=graphs):
            ms = per_call_ms(call, calls=max(3, int(4e13 / flops)))
            rows.append({"batch": batch, "seq": seq, "impl": name, "ms": ms, "tflops": flops / ms / 1e9, "rel_err": err})
            print(f"prefill B={batch} S={seq:5d} {name:28s} {ms:8.3f} ms {flops / ms / 1e9:6.0f} TFLOP/s", flush=True)
    return rows


def section_decode(bench: Bench, quick: bool, use_compile: bool, graphs: bool) -> list[dict[str, Any]]:
    rows = []
    kv = 64 if quick else 4096
    for batch in (1, 4, 8, 16) if not quick else (2,):
        for name, call, err in variants(bench, batch, kv, decode=True, use_compile=use_compile, graphs=graphs):
            ms = per_call_ms(call, calls=50)
            rows.append({"batch": batch, "kv": kv, "impl": name, "ms": ms, "tokens_per_s": batch / ms * 1e3, "rel_err": err})
            print(f"decode B={batch:2d} kv={kv} {name:28s} {ms * 1e3:8.1f} us", flush=True)
    return rows


def section_ablation(bench: Bench, quick: bool) -> list[dict[str, Any]]:
    """The eager block with one course kernel switched on at a time, then all of them."""
    rows = []
    shapes = [("prefill", 1, 37)] if quick else [("prefill", 1, 4096), ("prefill", 4, 512), ("decode", 1, 4096), ("decode", 16, 4096)]
    for phase, batch, seq in shapes:
        decode = phase == "decode"
        singles = [(k,) for k in (ALL_W4 if decode else ALL_BF16)]
        for switched in [(), *singles, ALL_BF16, *([ALL_W4] if decode else [])]:
            if decode:
                x, cache = decode_setup(bench, batch, seq)
                fn = bench.block(switched, seq - 1, cache)
            else:
                x, cache = prefill_input(bench, batch, seq), None
                fn = bench.block(switched)
            calls = 50 if decode else max(3, int(4e13 / block_flops(bench.cfg, batch, seq, seq, True)))
            ms = per_call_ms(lambda: fn(x), calls)
            row = {"phase": phase, "batch": batch, "seq": seq, "switches": list(switched), "ms": ms}
            if decode and torch.cuda.is_available():  # the same without launch overhead
                row["graph_ms"] = per_call_ms(cuda_graph(lambda: fn(x)), calls)
            rows.append(row)
            print(f"ablation {phase} B={batch} S={seq} {'+'.join(switched) or 'eager':40s} {ms:8.3f} ms "
                  f"{row.get('graph_ms', float('nan')):8.3f} ms with a graph", flush=True)
    return rows


def section_breakdown(bench: Bench, quick: bool) -> list[dict[str, Any]]:
    """Each stage of the block timed alone, for the eager block and the course block."""
    rows = []
    shapes = [("prefill", 1, 37)] if quick else [("prefill", 1, 4096), ("decode", 1, 4096), ("decode", 16, 4096)]
    for phase, batch, seq in shapes:
        decode = phase == "decode"
        for impl, switched in (("eager", ()), ("course", ALL_W4 if decode else ALL_BF16)):
            recorded: list[tuple[str, Callable[..., torch.Tensor], tuple[Any, ...]]] = []

            def record(name: str, fn: Callable[..., torch.Tensor], *args: Any) -> torch.Tensor:
                recorded.append((name, fn, args))
                return fn(*args)

            if decode:
                x, cache = decode_setup(bench, batch, seq)
                bench.block(switched, seq - 1, cache, stage=record)(x)
            else:
                x = prefill_input(bench, batch, seq)
                bench.block(switched, stage=record)(x)
            for name, fn, args in recorded:
                one = lambda fn=fn, args=args: fn(*args)  # noqa: E731
                # ms: the GPU's time for the stage alone; loop_ms: its cost when called back to back, which is
                # the host's time to launch it whenever that is the longer of the two
                rows.append({"phase": phase, "batch": batch, "seq": seq, "impl": impl, "stage": name,
                             "kind": STAGE_KIND[name], "ms": gpu_ms(one), "loop_ms": per_call_ms(one, 100)})  # fmt: skip
            total = sum(r["ms"] for r in rows if (r["phase"], r["batch"], r["impl"]) == (phase, batch, impl))
            print(f"breakdown {phase} B={batch} {impl:8s} sum of stages {total:.3f} ms", flush=True)
    return rows


def section_attention(bench: Bench, quick: bool) -> list[dict[str, Any]]:
    """The attention of the block alone: SDPA with each of its backends forced, against the course kernel."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import torch.nn.functional as F

    cfg, rows = bench.cfg, []
    flash = bench.kernels["flash_attention"].flash_attention
    for batch, seq, keys in [(1, 37, 37)] if quick else [(1, 4096, 4096), (4, 4096, 4096), (4, 512, 512), (16, 1, 4096)]:
        g = torch.Generator(device="cpu").manual_seed(3)
        q, k, v = (torch.randn(batch, h, s, cfg.head_dim, generator=g).to(device=bench.device, dtype=bench.dtype)
                   for h, s in ((cfg.n_heads, seq), (cfg.n_kv_heads, keys), (cfg.n_kv_heads, keys)))  # fmt: skip
        causal = seq > 1
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal, enable_gqa=True)
        impls: dict[str, Callable[[], torch.Tensor]] = {"course": lambda: flash(q, k, v, causal=causal)}
        impls["SDPA default"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                              ("efficient", SDPBackend.EFFICIENT_ATTENTION)):  # fmt: skip
            def forced(backend: SDPBackend = backend) -> torch.Tensor:
                with sdpa_kernel([backend]):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

            impls[f"SDPA {name}"] = forced
        for name, fn in impls.items():
            try:
                err = relative_error(fn(), ref)
                ms = gpu_ms(fn)
            except Exception as e:  # a backend that does not take these inputs
                rows.append({"batch": batch, "seq": seq, "keys": keys, "impl": name, "error": repr(e)[:300]})
                print(f"attention B={batch} S={seq} {name:14s} unavailable: {e!r}"[:200], flush=True)
                continue
            rows.append({"batch": batch, "seq": seq, "keys": keys, "impl": name, "ms": ms, "rel_err": err})
            print(f"attention B={batch} S={seq} keys={keys} {name:14s} {ms * 1e3:8.1f} us  err {err:.1e}", flush=True)
    return rows


def compiled_ro(fn: Callable[..., Any]) -> Callable[..., Any]:
    """torch.compile with CUDA graphs (mode="reduce-overhead"): no hand capture; the course ops are captured
    because they are registered ops with fake implementations (course/ops.py)."""
    return torch.compile(fn, fullgraph=True, mode="reduce-overhead")  # sizes turn dynamic after the first: few compiles


def static_addresses(bench: Bench) -> None:
    """Tell torch.compile that the weights and tables stay where they are: CUDA graphs then read them in
    place, rather than copying every input into the graph's own memory before each replay (as a model's
    parameters are treated)."""
    tensors = [bench.weights.attn_norm, bench.weights.ffn_norm, bench.rotary.cos, bench.rotary.sin,
               bench.rotary.cos_full, bench.rotary.sin_full]  # fmt: skip
    for weights in (bench.weights, bench.weights_w4):
        tensors += [t for lin in weights.linears.values() for t in (lin.weight, lin.w_packed, lin.scales) if t is not None]
    try:
        for t in tensors:
            torch._dynamo.mark_static_address(t)
    except Exception as e:  # the run goes on, with inputs copied into the graphs
        ERRORS.append({"section": "shipping_decode", "static_addresses": repr(e)[:300]})


def cudagraph_skips() -> int:
    """How many times Inductor has declined to use a CUDA graph so far (0 if this torch does not count it)."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"].get("cudagraph_skips", 0))


def section_shipping_decode(bench: Bench, quick: bool) -> list[dict[str, Any]]:
    """Decode without hand capture: eager PyTorch and the course block (W4A16 projections) eager, then both
    under torch.compile(mode="reduce-overhead"), which captures CUDA graphs itself."""
    rows = []
    kv = 64 if quick else 4096
    plans = [("eager", (), False), ("course W4A16", ALL_W4, False)]
    if not quick:
        plans += [("compile RO", (), True), ("course W4A16 compile RO", ALL_W4, True), ("course bf16 compile RO", ALL_BF16, True)]
    if not quick:
        static_addresses(bench)
    for batch in (1, 4, 8, 16) if not quick else (2,):
        x, cache = decode_setup(bench, batch, kv)
        if not quick:
            for t in (cache.k, cache.v):
                torch._dynamo.mark_static_address(t)  # written in place by every step
        for name, switched, comp in plans:
            skips = cudagraph_skips()
            try:
                fn = bench.block(switched, kv - 1, cache)
                if comp:
                    fn = compiled_ro(fn)
                err = check(bench, x, fn, "w4a16" in switched, kv - 1, cache)
                ms = per_call_ms(lambda fn=fn: fn(x), calls=50)
            except Exception as e:
                ERRORS.append({"section": "shipping_decode", "batch": batch, "impl": name, "error": repr(e)[:500]})
                print(f"FAILED {name} B={batch}: {e!r}"[:300], flush=True)
                continue
            rows.append({"batch": batch, "kv": kv, "impl": name, "ms": ms, "rel_err": err,
                         "cudagraph_skips": cudagraph_skips() - skips})  # fmt: skip
            print(f"shipping decode B={batch:2d} kv={kv} {name:26s} {ms * 1e3:8.1f} us", flush=True)
    return rows


def section_shipping_prefill(bench: Bench, quick: bool, sizes: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Prefill under torch.compile (default mode): the PyTorch block against the course block (bf16 projections)."""
    rows = []
    plans = [("compile", ()), ("course compile", ALL_BF16)] if not quick else [("course", ALL_BF16)]
    for batch, seq in [(1, 37)] if quick else sizes:
        x = prefill_input(bench, batch, seq)
        flops = block_flops(bench.cfg, batch, seq, seq, causal=True)
        for name, switched in plans:
            try:
                fn = bench.block(switched)
                fn = torch.compile(fn, fullgraph=True) if not quick else fn  # dynamic after the first size
                err = check(bench, x, fn, False)
                ms = per_call_ms(lambda fn=fn: fn(x), calls=max(3, int(4e13 / flops)))
            except Exception as e:
                ERRORS.append({"section": "shipping_prefill", "batch": batch, "seq": seq, "impl": name, "error": repr(e)[:500]})
                print(f"FAILED {name} B={batch} S={seq}: {e!r}"[:300], flush=True)
                continue
            rows.append({"batch": batch, "seq": seq, "impl": name, "ms": ms, "tflops": flops / ms / 1e9, "rel_err": err})
            print(f"shipping prefill B={batch} S={seq:5d} {name:16s} {ms:8.3f} ms {flops / ms / 1e9:6.0f} TFLOP/s", flush=True)
    return rows


TRAINABLE = ("rmsnorm", "rope", "attention", "swiglu")  # the kernels with a backward; cuBLAS projections


def section_train(bench: Bench, quick: bool) -> list[dict[str, Any]]:
    """One training step (forward + backward of the block): eager autograd and torch.compile of the PyTorch
    block against the course block eager and compiled; the course's gradients checked against float32 ones."""
    rows = []
    cfg = bench.cfg
    with torch.inference_mode(False), torch.enable_grad():
        rotary = rotary_tables(cfg, 4096 if not quick else 128, bench.dtype, bench.device)
        rotary32 = rotary_tables(cfg, 4096 if not quick else 128, torch.float32, bench.device)
        for batch, seq in [(1, 2048), (2, 2048), (4, 2048)] if not quick else [(1, 37)]:
            x = prefill_input(bench, batch, seq).clone()
            g = torch.Generator(device="cpu").manual_seed(5)
            grad_out = torch.randn(x.shape, generator=g).to(device=bench.device, dtype=bench.dtype)
            leaves = trainable(x, bench.weights)
            ref = train_step(trainable(x.float(), bench.weights.to(torch.float32)), cfg, torch_ops(), rotary32, grad_out.float())
            plans = [("eager autograd", (), False), ("course", TRAINABLE, False)]
            if not quick:
                plans += [("compile", (), True), ("course compile", TRAINABLE, True)]
            for name, switched, comp in plans:
                try:
                    forward = torch.compile(block_forward, fullgraph=True) if comp else None
                    ops = bench.ops(switched)
                    grads = train_step(leaves, cfg, ops, rotary, grad_out, forward)
                    err = max(relative_error(grads[k], ref[k]) for k in ref)
                    if not err < 5e-2:
                        raise AssertionError(f"a gradient's relative error is {err:.3g} against float32")
                    ms = per_call_ms(lambda ops=ops, forward=forward: train_step(leaves, cfg, ops, rotary, grad_out, forward),
                                     calls=3, reps=5)  # fmt: skip
                except Exception as e:
                    ERRORS.append({"section": "train", "batch": batch, "seq": seq, "impl": name, "error": repr(e)[:500]})
                    print(f"FAILED train {name} B={batch}: {e!r}"[:300], flush=True)
                    continue
                rows.append({"batch": batch, "seq": seq, "impl": name, "ms": ms, "max_grad_rel_err": err})
                print(f"train B={batch} S={seq} {name:16s} {ms:8.3f} ms  max gradient error {err:.1e}", flush=True)
    return rows


def _captured_launches(fn: Callable[[], Any]) -> list[tuple[Any, Any, tuple, dict]]:
    """The Triton launches one call of fn makes: (kernel, grid, args, kwargs) as JITFunction.run got them."""
    from triton.runtime.jit import JITFunction

    seen: list[tuple[Any, Any, tuple, dict]] = []
    original = JITFunction.run

    def spy(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        seen.append((self, grid, args, kwargs))
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    JITFunction.run = spy
    try:
        fn()
    finally:
        JITFunction.run = original
    return seen


def host_us(fn: Callable[[], Any], calls: int = 300, reps: int = 5, warmup: int = 10) -> float:
    """Host microseconds per call: calls issued back to back without waiting for the GPU (tiny shapes, so
    the GPU keeps up and the host is what is measured); the best of reps."""
    for _ in range(warmup):
        fn()
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    best = float("inf")
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
        sync()
    return best * 1e6


def section_host(bench: Bench, quick: bool) -> list[dict[str, Any]]:
    """Host time per call of every course op at a decode size: the public call (checks, autograd Function,
    registered op, launcher), the registered op alone, the bare Triton launch(es) it makes (JITFunction.run
    with every argument ready), and the PyTorch op that does the same work."""
    import torch.nn.functional as F

    from course.loader import load_kernels

    dev, dt = bench.device, bench.dtype
    mods = {slug: load_kernels(slug, "solutions") for slug in ("rmsnorm", "rope", "swiglu", "flash_attention", "quant_matmul", "fusion", "coalescing", "tiling")}
    r = lambda *shape: torch.randn(*shape, device=dev, dtype=dt)  # noqa: E731
    h, i, kv = (4096, 14336, 4096) if not quick else (128, 384, 64)
    d, hq, hkv = bench.cfg.head_dim, bench.cfg.n_heads, bench.cfg.n_kv_heads
    x, w, gate, up = r(16, h), r(h), r(16, i), r(16, i)
    q1, kc, vc = r(16, hq, 1, d), r(16, hkv, kv, d), r(16, hkv, kv, d)
    qp, kp, vp = r(1, hq, 128, d), r(1, hkv, 128, d), r(1, hkv, 128, d)
    xr = r(16, hq, 1, d)
    cos, sin = torch.randn(1, d // 2, device=dev), torch.randn(1, d // 2, device=dev)
    cos_f, sin_f = torch.cat((cos, cos), -1).to(dt), torch.cat((sin, sin), -1).to(dt)
    w8, s8 = torch.randint(-128, 128, (i, h), dtype=torch.int8, device=dev), r(i)
    w4, s4 = torch.randint(0, 256, (i, h // 2), dtype=torch.uint8, device=dev), r(i, h // 128 if not quick else 1)
    gs = 128 if not quick else h
    dense = r(i, h)
    a, b = r(16, h), r(h, h)
    sq = r(1024, 1024) if not quick else r(33, 65)
    fa, qm, fu = mods["flash_attention"], mods["quant_matmul"], mods["fusion"]

    def torch_rope() -> torch.Tensor:
        half = d // 2
        return xr * cos_f + torch.cat((-xr[..., half:], xr[..., :half]), dim=-1) * sin_f

    # name: (public call, registered op call, PyTorch call)
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any]]] = {
        "rmsnorm": (lambda: mods["rmsnorm"].rmsnorm(x, w), lambda: mods["rmsnorm"].rmsnorm_forward_op(x, w, 1e-6, False),
                    lambda: F.rms_norm(x, (h,), w, 1e-6)),
        "rope": (lambda: mods["rope"].rope(xr, cos, sin), lambda: mods["rope"].rope_forward_op(xr, cos, sin), torch_rope),
        "swiglu": (lambda: mods["swiglu"].swiglu(gate, up), lambda: mods["swiglu"].swiglu_forward_op(gate, up),
                   lambda: F.silu(gate) * up),
        "flash_attention decode": (lambda: fa.flash_attention(q1, kc, vc), lambda: fa.attention_decode_op(q1, kc, vc, d ** -0.5),
                                   lambda: F.scaled_dot_product_attention(q1, kc, vc, enable_gqa=True)),
        "flash_attention prefill": (lambda: fa.flash_attention(qp, kp, vp, causal=True),
                                    lambda: fa.attention_forward_op(qp, kp, vp, True, d ** -0.5, False),
                                    lambda: F.scaled_dot_product_attention(qp, kp, vp, is_causal=True, enable_gqa=True)),
        "w8a16_matmul": (lambda: qm.w8a16_matmul(x, w8, s8), lambda: qm.w8a16_op(x, w8, s8), lambda: F.linear(x, dense)),
        "w4a16_matmul": (lambda: qm.w4a16_matmul(x, w4, s4, gs), lambda: qm.w4a16_op(x, w4, s4, gs), lambda: F.linear(x, dense)),
        "gelu": (lambda: fu.gelu(x), lambda: fu.gelu_op(x), lambda: F.gelu(x, approximate="tanh")),
        "softmax": (lambda: fu.softmax(x), lambda: fu.softmax_op(x), lambda: torch.softmax(x, -1)),
        "transpose": (lambda: mods["coalescing"].transpose(sq), lambda: mods["coalescing"].transpose_op(sq),
                      lambda: sq.t().contiguous()),
        "matmul": (lambda: mods["tiling"].matmul(a, b), lambda: mods["tiling"].matmul_op(a, b), lambda: a @ b),
    }  # fmt: skip
    rows = []
    for name, (public, op, reference) in cases.items():
        try:
            for _ in range(3):  # compile and autotune first: only the launches of a settled call are replayed
                public()
            launches = _captured_launches(public)

            def bare(launches: list = launches) -> None:
                for kernel, grid, args, kwargs in launches:
                    kernel[grid](*args, **kwargs)

            timer = (lambda f: host_us(f, calls=1, reps=1, warmup=0)) if quick else host_us
            row = {"op": name, "public_us": timer(public), "op_us": timer(op), "bare_triton_us": timer(bare),
                   "torch_us": timer(reference), "launches": len(launches)}  # fmt: skip
        except Exception as e:
            ERRORS.append({"section": "host", "op": name, "error": repr(e)[:500]})
            print(f"FAILED host {name}: {e!r}"[:300], flush=True)
            continue
        rows.append(row)
        print(f"host {name:24s} public {row['public_us']:6.1f} us  op {row['op_us']:6.1f}  bare Triton {row['bare_triton_us']:6.1f}"
              f"  PyTorch {row['torch_us']:6.1f}  ({row['launches']} launch(es))", flush=True)  # fmt: skip
    return rows


def markdown(results: dict[str, Any]) -> str:
    """The shipping sections as markdown tables: what notebook 10 and the lecture quote."""
    m = results.get("meta", {})
    out = [f"# Shipping the course's kernels: {m.get('gpu', '?')}, torch {m.get('torch', '?')}, triton {m.get('triton', '?')},"
           f" {m.get('dtype', '?')}, {m.get('date', '?')}", "", f"`{m.get('command', '')}`", ""]  # fmt: skip

    def table(title: str, rows: list[dict[str, Any]], key: tuple[str, ...], value: str, scale: float, unit: str) -> None:
        if not rows:
            return
        impls = list(dict.fromkeys(r["impl"] for r in rows))
        out.extend([f"## {title}", "", "| " + " | ".join(key) + " | " + " | ".join(f"{i} ({unit})" for i in impls) + " |",
                    "|" + "---|" * (len(key) + len(impls))])  # fmt: skip
        for k in dict.fromkeys(tuple(r[c] for c in key) for r in rows):
            cells = {r["impl"]: r[value] * scale for r in rows if tuple(r[c] for c in key) == k}
            out.append("| " + " | ".join(map(str, k)) + " | " + " | ".join(f"{cells[i]:.1f}" if i in cells else "-" for i in impls) + " |")
        out.append("")

    table("Decode, 4096-token cache (us per block)", results.get("shipping_decode", []), ("batch",), "ms", 1e3, "us")
    table("Prefill under torch.compile (ms per block)", results.get("shipping_prefill", []), ("batch", "seq"), "ms", 1, "ms")
    table("Training step, forward + backward (ms)", results.get("train", []), ("batch", "seq"), "ms", 1, "ms")
    host = results.get("host", [])
    if host:
        out += ["## Host time per call, eager (us)", "", "| op | public call | registered op | bare Triton launch | PyTorch |", "|---|---|---|---|---|"]
        out += [f"| {r['op']} | {r['public_us']:.1f} | {r['op_us']:.1f} | {r['bare_triton_us']:.1f} | {r['torch_us']:.1f} |" for r in host]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------


def meta(cfg: LlamaConfig, dtype: torch.dtype) -> dict[str, Any]:
    import triton

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu (Triton interpreter)"
    return {"gpu": gpu, "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
            "date": datetime.date.today().isoformat(), "dtype": str(dtype).replace("torch.", ""),
            "config": cfg.__dict__, "command": "python scripts/llama_block_bench.py " + " ".join(sys.argv[1:])}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--sections", default="check,attention,decode,breakdown,ablation,prefill")
    p.add_argument("--smoke", action="store_true", help="the tiny configuration on the CPU, one size per section")
    p.add_argument("--kernels", choices=("solutions", "assignments"), default="solutions",
                   help="the reference solutions (the committed tables), or yours where they run")
    args = p.parse_args()
    quick = args.smoke
    gpu = torch.cuda.is_available() and not quick
    cfg, dtype = (LLAMA3_8B, torch.bfloat16) if gpu else (TINY, torch.float32)
    device = course.env.DEVICE
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "llama_block.json"
    results: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    torch._dynamo.config.cache_size_limit = 64  # one compiled graph per shape, and there are 16 shapes
    with torch.inference_mode():
        bench = Bench(cfg, dtype, device, max_positions=4096 if gpu else 128, kernels=args.kernels)
        results["meta"] = {**meta(cfg, dtype), "kernels": bench.sources}
        for slug, why in bench.sources.items():
            print(f"{slug}: {why}", flush=True)
        for section in args.sections.split(","):
            t0 = time.perf_counter()
            if section == "check":
                results["check"] = section_check(bench, quick)
            elif section == "prefill":
                results["prefill"] = section_prefill(bench, quick, use_compile=gpu, graphs=gpu)
            elif section == "decode":
                results["decode"] = section_decode(bench, quick, use_compile=gpu, graphs=gpu)
            elif section == "ablation":
                results["ablation"] = section_ablation(bench, quick)
            elif section == "attention":
                results["attention"] = section_attention(bench, quick)
            elif section == "breakdown":
                results["breakdown"] = section_breakdown(bench, quick)
            elif section == "shipping_decode":
                results["shipping_decode"] = section_shipping_decode(bench, quick)
            elif section == "shipping_prefill":
                results["shipping_prefill"] = section_shipping_prefill(bench, quick, PREFILL_SIZES)
            elif section == "train":
                results["train"] = section_train(bench, quick)
            elif section == "host":
                results["host"] = section_host(bench, quick)
            else:
                raise SystemExit(f"unknown section {section!r}")
            print(f"[{section}: {time.perf_counter() - t0:.0f} s]", flush=True)
            results["errors"] = ERRORS
            path.write_text(json.dumps(results, indent=1) + "\n")
            (args.out / "shipping.md").write_text(markdown(results))  # after each section: a run cut short keeps it
    print(markdown(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
