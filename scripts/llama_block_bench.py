"""Time a Llama-3-8B decoder block on a GPU: PyTorch eager, torch.compile and the course's kernels (module 10).

    python scripts/llama_block_bench.py --out OUT [--sections check,attention,decode,breakdown,ablation,prefill]
                                        [--kernels solutions|assignments] [--smoke]

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
)

ALL_BF16 = ("rmsnorm", "rope", "attention", "swiglu")  # the course block with cuBLAS bf16 projections
ALL_W4 = (*ALL_BF16, "w4a16")
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
            else:
                raise SystemExit(f"unknown section {section!r}")
            print(f"[{section}: {time.perf_counter() - t0:.0f} s]", flush=True)
            results["errors"] = ERRORS
            path.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
