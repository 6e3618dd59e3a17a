"""Time a Llama-3-8B decoder block on a GPU: PyTorch eager, torch.compile and the course's kernels (module 10).

    python scripts/llama_block_bench.py --out OUT [--sections check,attention,decode,...] [--kernels assignments] [--smoke]

Sections (default: check,attention,decode,breakdown,ablation,prefill): check, every variant against a float32
block; attention, SDPA's backends against the course kernel; decode and prefill, eager, torch.compile, the
course's kernels, with and without CUDA graphs; breakdown, each stage alone; ablation, one course kernel at a time.
For shipping the kernels into a program (issue 20), in the order worth running them:

    python scripts/llama_block_bench.py --out OUT --sections host,shipping_decode,train,shipping_prefill

host: host microseconds per call of every course op (public call, registered op, bare Triton launch, PyTorch);
eager_decode: the decode step eager, batch 1-16, where each call's host cost shows. To measure a change of the
launch path, run `--sections host,eager_decode --out OUT/after_1` here and `--out OUT/before_1` in a worktree
of the commit before (each tree its own script), in turn a few times; `--out OUT --ab` prints the best of each.
shipping_decode: decode, batch 1-16, 4096-token cache, W4A16, eager and torch.compile mode="reduce-overhead"
(CUDA graphs with no hand capture), with and without Inductor's CUDA graph trees, and both blocks again on fused
projections (q, k, v as one, gate and up as one: course.llama.fuse_projections); train: forward and backward,
batch 1-4 x 2048, eager autograd and torch.compile, gradients checked against float32; shipping_prefill: batch
1-4 x 512-4096 under torch.compile.
They also write OUT/shipping.md, the tables notebook 10 and lectures/10 quote. hf: a Hugging Face Llama with the
course's kernels patched in (needs transformers; `--wheels DIR` installs it from wheels carried with the tree),
compared with the unpatched model, then prefill and decode timed (OUT/llama_block.json, "hf").

Writes OUT/llama_block.json (merged with what is there, section by section). `--smoke` runs every section on the
CPU with the tiny configuration (no compile, no graphs, one size each). A block time is the median over
repetitions of the mean of back-to-back calls (layers run back to back, so no cache flush), CUDA events, after
warm-up; every variant is checked against a float32 block first. breakdown times each stage alone with the
grader's timer (L2 flushed, a head start for the host) and also back to back, host launch included.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import course.env  # noqa: E402  (before triton)
from autograder.timing import back_to_back_ms, host_overhead_us, interleaved_ms  # noqa: E402
from course.llama import (  # noqa: E402
    LLAMA3_8B,
    STAGE_KIND,
    TINY,
    KVCache,
    LlamaConfig,
    Ops,
    block_flops,
    block_forward,
    course_ops,
    fuse_projections,
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
from course.launch import launch, plain_launches  # noqa: E402
from course.llama_plots import host_ab_markdown  # noqa: E402
from course.results import Sections, markdown_table, run_meta, section_parser  # noqa: E402

# The course block with cuBLAS bf16 projections (these four kernels also have a backward), and with W4A16 ones.
ALL_BF16 = ("rmsnorm", "rope", "attention", "swiglu")
ALL_W4 = (*ALL_BF16, "w4a16")
# Not a kernel: in a plan's switches, the block runs on fused projections (q, k, v as one; gate, up as one).
FUSED = "fused"
KV = 4096  # decode: the cache holds this many positions
DECODE_BATCHES = (1, 4, 8, 16)
PREFILL_SIZES = [(b, s) for b in (1, 2, 4) for s in (512, 1024, 2048, 4096)]
SHIPPING_PREFILL_SIZES = [(1, 512), (1, 2048), (1, 4096), (4, 512), (4, 2048), (4, 4096)]
WRAP: dict[str, Callable[[Callable], Callable]] = {
    "eager": lambda fn: fn,
    "compile": lambda fn: torch.compile(fn, dynamic=False, fullgraph=True),
    # shapes turn dynamic after the first: few compiles
    "compile, dynamic": lambda fn: torch.compile(fn, fullgraph=True),
    # CUDA graphs with no hand capture: the course ops are captured because they are registered ops (course/ops.py)
    "reduce-overhead": lambda fn: torch.compile(fn, fullgraph=True, mode="reduce-overhead"),
    # the same graphs replayed without Inductor's CUDA graph trees, whose bookkeeping costs a decode step's host
    # more than its kernels take (results/<gpu>/reduce_overhead_decode.md); a step is one graph, with no tree to share
    "reduce-overhead, no trees": lambda fn: torch.compile(
        fn, fullgraph=True, options={"triton.cudagraphs": True, "triton.cudagraph_trees": False}
    ),
}
Plan = tuple[str, tuple[str, ...], str, bool]  # name, course kernels switched on, WRAP key, replayed from a CUDA graph


class Bench:
    """One configuration's weights, tables and kernels, its inputs, and the ways of running a block on them."""

    def __init__(self, smoke: bool, kernels: str, run: Sections) -> None:
        self.smoke, self.gpu, self.run = smoke, torch.cuda.is_available() and not smoke, run
        self.cfg: LlamaConfig = LLAMA3_8B if self.gpu else TINY
        self.dtype, self.device = (torch.bfloat16 if self.gpu else torch.float32), course.env.DEVICE
        self.kv = KV if self.gpu else 64
        self.weights = random_weights(self.cfg, self.dtype, self.device, seed=0)
        self.weights_w4 = quantized(self.weights, self.cfg.group_size)
        self.fused = {False: fuse_projections(self.weights), True: fuse_projections(self.weights_w4)}  # by w4a16
        self.rotary = rotary_tables(self.cfg, 4096 if self.gpu else 128, self.dtype, self.device)
        self.kernels, self.sources = load_course_kernels(self.device, prefer=kernels)

    def sizes(self, full: list, tiny: Any) -> list:
        return full if self.gpu else [tiny]

    def ms(self, fn: Callable[[], Any], calls: int, reps: int = 7) -> float:
        """back_to_back_ms on a GPU; one call after one warm-up under --smoke (the interpreter's times mean nothing)."""
        return back_to_back_ms(fn, calls, reps) if self.gpu else back_to_back_ms(fn, 1, 1, warmup=1)

    def ops(self, switched_on: tuple[str, ...]) -> Ops:
        kernels = tuple(s for s in switched_on if s != FUSED)
        return course_ops(self.kernels, kernels, self.cfg.group_size) if kernels else torch_ops()

    def block(
        self, switched_on: tuple[str, ...], start: int = 0, cache: KVCache | None = None, **stage: Any
    ) -> Callable:
        w4 = "w4a16" in switched_on
        weights = self.fused[w4] if FUSED in switched_on else self.weights_w4 if w4 else self.weights
        ops = self.ops(switched_on)
        return lambda x: block_forward(x, weights, self.cfg, ops, self.rotary, start, cache, **stage)

    def randn(self, *shape: int, seed: int) -> torch.Tensor:
        g = torch.Generator(device="cpu").manual_seed(seed)
        return torch.randn(shape, generator=g).to(device=self.device, dtype=self.dtype)

    def inputs(self, batch: int, seq: int, decode: bool) -> tuple[torch.Tensor, KVCache | None, int]:
        """(x, cache, start): a prompt of seq tokens, or one new token per sequence after seq - 1 cached ones."""
        if not decode:
            return self.randn(batch, seq, self.cfg.hidden_size, seed=2), None, 0
        cache = KVCache.empty(self.cfg, batch, seq, self.dtype, self.device)
        cache.k.copy_(self.randn(*cache.k.shape, seed=1))
        cache.v.copy_(self.randn(*cache.v.shape, seed=3))
        return self.randn(batch, 1, self.cfg.hidden_size, seed=4), cache, seq - 1

    def error(self, x: torch.Tensor, fn: Callable, w4: bool, start: int = 0, cache: KVCache | None = None,
              limit: float | None = None) -> float:  # fmt: skip
        """Relative error of fn(x) against the PyTorch block in float32 (on the dequantized weights for W4A16)."""
        ref = reference_block(x, self.weights_w4 if w4 else self.weights, self.cfg, torch.float32, start, cache)
        err = relative_error(fn(x), ref)
        if limit is not None and not err < limit:
            raise AssertionError(f"relative error {err:.3g} against the float32 block, above {limit}")
        return err

    def time_plans(self, section: str, plans: list[Plan], batch: int, seq: int, decode: bool) -> list[dict[str, Any]]:
        """Each plan built, checked against the float32 block, then timed; a plan that fails is recorded and skipped."""
        x, cache, start = self.inputs(batch, seq, decode)
        if cache is not None and self.gpu and any(wrap.startswith("reduce-overhead") for _, _, wrap, _ in plans):
            for t in (cache.k, cache.v):  # written in place by every step: CUDA graphs must not copy it
                torch._dynamo.mark_static_address(t)
        flops = block_flops(self.cfg, batch, 1 if decode else seq, seq, causal=True)
        rows = []
        for name, switched, wrap, graph in plans:
            if (wrap != "eager" or graph) and not self.gpu:
                continue
            try:
                skips = cudagraph_skips()
                fn = WRAP[wrap](self.block(switched, start, cache))
                err = self.error(x, fn, "w4a16" in switched, start, cache, limit=2e-2)
                call = cuda_graph(lambda fn=fn: fn(x)) if graph else (lambda fn=fn: fn(x))
                ms = self.ms(call, calls=50 if decode else max(3, int(4e13 / flops)))
            except Exception as e:  # noqa: BLE001 - one failed variant must not cost the rest of the run
                self.run.error(section=section, batch=batch, seq=seq, impl=name, error=repr(e)[:500])
                continue
            row = {"batch": batch, "kv" if decode else "seq": seq, "impl": name, "ms": ms, "rel_err": err,
                   **({"tokens_per_s": batch / ms * 1e3} if decode else {"tflops": flops / ms / 1e9}),
                   "cudagraph_skips": cudagraph_skips() - skips}  # fmt: skip
            rows.append(row)
            print(f"{section} B={batch} S={seq:5d} {name:28s} {ms * 1e3:10.1f} us", flush=True)
        return rows


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
    return lambda: (graph.replay(), out)[1]


def cudagraph_skips() -> int:
    """How many times Inductor has declined to use a CUDA graph so far (0 if this torch does not count it)."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"].get("cudagraph_skips", 0))


def gpu_ms(fn: Callable[[], Any]) -> float:
    """One call alone on the grader's timer (L2 flushed, a head start for the host), median of 30."""
    return interleaved_ms({"one": fn}, 30, torch.device("cuda"))["one"]


# --------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------


def section_check(b: Bench) -> list[dict[str, Any]]:
    """Every variant against the float32 block: prefill, decode after a cached prompt, and what 4-bit weights do."""
    rows = []
    for phase, batch, seq, plans in (("prefill", 1, 512 if b.gpu else 37, [(), *[(k,) for k in ALL_BF16], ALL_BF16, ("w4a16",), ALL_W4]),
                                     ("decode", 4, b.kv, [(), ALL_BF16, ALL_W4])):  # fmt: skip
        for switched in plans:
            x, cache, start = b.inputs(batch, seq, phase == "decode")
            err = b.error(x, b.block(switched, start, cache), "w4a16" in switched, start, cache)
            rows.append(
                {
                    "phase": phase,
                    "batch": batch,
                    "kv" if phase == "decode" else "seq": seq,
                    "switches": list(switched),
                    "rel_err": err,
                }
            )
            print(f"check {phase:7s} {'+'.join(switched) or 'eager':45s} relative error {err:.2e}", flush=True)
    xq = b.inputs(1, 64, False)[0]  # the block on W4A16 weights against the bf16 one, both in float32
    err = relative_error(*(reference_block(xq, w, b.cfg, torch.float32) for w in (b.weights_w4, b.weights)))
    rows.append({"phase": "quantization", "batch": 1, "seq": 64, "switches": [], "rel_err": err})
    return rows


def section_prefill(b: Bench) -> list[dict[str, Any]]:
    plans: list[Plan] = [
        ("eager", (), "eager", False),
        ("torch.compile", (), "compile", False),
        ("course", ALL_BF16, "eager", False),
        ("torch.compile + CUDA graph", (), "compile", True),
        ("course + CUDA graph", ALL_BF16, "eager", True),
    ]
    return [
        r for batch, seq in b.sizes(PREFILL_SIZES, (1, 37)) for r in b.time_plans("prefill", plans, batch, seq, False)
    ]


def section_decode(b: Bench) -> list[dict[str, Any]]:
    plans: list[Plan] = [("eager", (), "eager", False), ("torch.compile", (), "compile", False), ("course", ALL_BF16, "eager", False),
                         ("course W4A16", ALL_W4, "eager", False), ("eager + CUDA graph", (), "eager", True),
                         ("torch.compile + CUDA graph", (), "compile", True), ("course + CUDA graph", ALL_BF16, "eager", True),
                         ("course W4A16 + CUDA graph", ALL_W4, "eager", True)]  # fmt: skip
    return [r for batch in b.sizes(list(DECODE_BATCHES), 2) for r in b.time_plans("decode", plans, batch, b.kv, True)]


# The same blocks on fused projections (course.llama.fuse_projections), PyTorch's too: like for like.
FUSED_DECODE_PLANS: list[Plan] = [
    ("eager, fused", (FUSED,), "eager", False),
    ("course W4A16, fused", (*ALL_W4, FUSED), "eager", False),
    ("compile RO, no trees, fused", (FUSED,), "reduce-overhead, no trees", False),
    ("course W4A16 compile RO, no trees, fused", (*ALL_W4, FUSED), "reduce-overhead, no trees", False),
]


def section_shipping_decode(b: Bench) -> list[dict[str, Any]]:
    """Decode without hand capture: eager PyTorch and the course block eager, then both under
    torch.compile(mode="reduce-overhead"), which captures CUDA graphs itself: with Inductor's CUDA graph trees
    (the default) and without."""
    plans: list[Plan] = [
        ("eager", (), "eager", False),
        ("course W4A16", ALL_W4, "eager", False),
        ("compile RO", (), "reduce-overhead", False),
        ("course W4A16 compile RO", ALL_W4, "reduce-overhead", False),
        ("course bf16 compile RO", ALL_BF16, "reduce-overhead", False),
        ("compile RO, no trees", (), "reduce-overhead, no trees", False),
        ("course W4A16 compile RO, no trees", ALL_W4, "reduce-overhead, no trees", False),
        *FUSED_DECODE_PLANS,
    ]
    # The weights and tables stay where they are: CUDA graphs read them in place rather than copying each
    # into the graph's memory before every replay (as a model's parameters are treated).
    static = [b.rotary.cos, b.rotary.sin, b.rotary.cos_full, b.rotary.sin_full]
    for w in (b.weights, b.weights_w4, *b.fused.values()):
        static += [
            w.attn_norm,
            w.ffn_norm,
            *(t for lin in w.linears.values() for t in (lin.weight, lin.w_packed, lin.scales)),
        ]
    for t in static if b.gpu else []:
        if t is not None:
            torch._dynamo.mark_static_address(t)
    rows = []
    for batch in b.sizes(list(DECODE_BATCHES), 2):
        rows += b.time_plans("shipping_decode", plans, batch, b.kv, True)
    return rows


def section_eager_decode(b: Bench) -> list[dict[str, Any]]:
    """The decode step eager, PyTorch and course, where every call's host cost shows (the lean launch's measure)."""
    plans: list[Plan] = [("eager", (), "eager", False), ("course bf16", ALL_BF16, "eager", False),
                         ("course W4A16", ALL_W4, "eager", False), ("course W4A16 + CUDA graph", ALL_W4, "eager", True),
                         ("eager, fused", (FUSED,), "eager", False), ("course W4A16, fused", (*ALL_W4, FUSED), "eager", False)]  # fmt: skip
    return [r for batch in b.sizes([1, 4, 16], 2) for r in b.time_plans("eager_decode", plans, batch, b.kv, True)]


def section_shipping_prefill(b: Bench) -> list[dict[str, Any]]:
    """Prefill under torch.compile (default mode): the PyTorch block against the course block (bf16 projections)."""
    plans: list[Plan] = [
        ("compile", (), "compile, dynamic", False),
        ("course compile", ALL_BF16, "compile, dynamic", False),
    ]
    plans = plans if b.gpu else [("course", ALL_BF16, "eager", False)]
    return [
        r
        for batch, seq in b.sizes(SHIPPING_PREFILL_SIZES, (1, 37))
        for r in b.time_plans("shipping_prefill", plans, batch, seq, False)
    ]


def section_ablation(b: Bench) -> list[dict[str, Any]]:
    """The eager block with one course kernel switched on at a time, then all of them (decode also from a CUDA graph)."""
    rows = []
    for phase, batch, seq in b.sizes(
        [("prefill", 1, 4096), ("prefill", 4, 512), ("decode", 1, KV), ("decode", 16, KV)], ("prefill", 1, 37)
    ):
        decode = phase == "decode"
        x, cache, start = b.inputs(batch, seq, decode)
        singles = [(k,) for k in (ALL_W4 if decode else ALL_BF16)]
        for switched in [(), *singles, ALL_BF16, *([ALL_W4] if decode else [])]:
            fn = b.block(switched, start, cache)
            calls = 50 if decode else max(3, int(4e13 / block_flops(b.cfg, batch, seq, seq, True)))
            row = {
                "phase": phase,
                "batch": batch,
                "seq": seq,
                "switches": list(switched),
                "ms": b.ms(lambda: fn(x), calls),
            }
            if decode and b.gpu:  # the same without launch overhead
                row["graph_ms"] = back_to_back_ms(cuda_graph(lambda: fn(x)), calls)
            rows.append(row)
            print(f"ablation {phase} B={batch} S={seq} {'+'.join(switched) or 'eager':40s} {row['ms']:8.3f} ms "
                  f"{row.get('graph_ms', float('nan')):8.3f} ms with a graph", flush=True)  # fmt: skip
    return rows


def section_breakdown(b: Bench) -> list[dict[str, Any]]:
    """Each stage of the block timed alone, for the eager block and the course block: ms, the GPU's time for the
    stage alone; loop_ms, its cost called back to back (the host's launch time whenever that is longer)."""
    rows = []
    for phase, batch, seq in b.sizes([("prefill", 1, 4096), ("decode", 1, KV), ("decode", 16, KV)], ("prefill", 1, 37)):
        decode = phase == "decode"
        for impl, switched in (("eager", ()), ("course", ALL_W4 if decode else ALL_BF16)):
            recorded: list[tuple[str, Callable[..., torch.Tensor], tuple[Any, ...]]] = []

            def record(name: str, fn: Callable[..., torch.Tensor], *args: Any) -> torch.Tensor:
                recorded.append((name, fn, args))
                return fn(*args)

            x, cache, start = b.inputs(batch, seq, decode)
            b.block(switched, start, cache, stage=record)(x)
            for name, fn, args in recorded:
                one = lambda fn=fn, args=args: fn(*args)  # noqa: E731
                rows.append(
                    {
                        "phase": phase,
                        "batch": batch,
                        "seq": seq,
                        "impl": impl,
                        "stage": name,
                        "kind": STAGE_KIND[name],
                        "ms": gpu_ms(one) if b.gpu else b.ms(one, 1),
                        "loop_ms": b.ms(one, 100),
                    }
                )
            total = sum(r["ms"] for r in rows if (r["phase"], r["batch"], r["impl"]) == (phase, batch, impl))
            print(f"breakdown {phase} B={batch} {impl:8s} sum of stages {total:.3f} ms", flush=True)
    return rows


def section_attention(b: Bench) -> list[dict[str, Any]]:
    """The attention of the block alone: SDPA with each of its backends forced, against the course kernel."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    cfg, rows, flash = b.cfg, [], b.kernels["flash_attention"].flash_attention
    for batch, seq, keys in b.sizes([(1, 4096, 4096), (4, 4096, 4096), (4, 512, 512), (16, 1, 4096)], (1, 37, 37)):
        q, k, v = (
            b.randn(batch, h, s, cfg.head_dim, seed=3 + i)
            for i, (h, s) in enumerate(((cfg.n_heads, seq), (cfg.n_kv_heads, keys), (cfg.n_kv_heads, keys)))
        )
        causal = seq > 1
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal, enable_gqa=True)

        def sdpa(backends: list[SDPBackend] | None = None) -> torch.Tensor:
            if backends is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            with sdpa_kernel(backends):
                return sdpa()

        impls = {"course": lambda: flash(q, k, v, causal=causal), "SDPA default": sdpa}
        for name, backend in (
            ("flash", SDPBackend.FLASH_ATTENTION),
            ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION),
        ):
            impls[f"SDPA {name}"] = lambda backend=backend: sdpa([backend])
        for name, fn in impls.items():
            row: dict[str, Any] = {"batch": batch, "seq": seq, "keys": keys, "impl": name}
            try:
                row.update(rel_err=relative_error(fn(), ref), ms=gpu_ms(fn) if b.gpu else b.ms(fn, 1))
            except Exception as e:  # noqa: BLE001 - a backend that does not take these inputs
                row["error"] = repr(e)[:300]
            rows.append(row)
            print(
                f"attention B={batch} S={seq} keys={keys} {name:14s} {row.get('ms', float('nan')) * 1e3:8.1f} us",
                flush=True,
            )
    return rows


def section_train(b: Bench) -> list[dict[str, Any]]:
    """One training step (forward + backward of the block): the PyTorch block and the course block (the kernels
    with a backward; cuBLAS projections), eager and compiled; the gradients checked against float32 ones."""
    rows, cfg = [], b.cfg
    with torch.inference_mode(False), torch.enable_grad():
        # tables made outside inference mode: autograd saves them for the backward
        rotary, rotary32 = (rotary_tables(cfg, b.rotary.cos.shape[0], dt, b.device) for dt in (b.dtype, torch.float32))
        for batch, seq in b.sizes([(1, 2048), (2, 2048), (4, 2048)], (1, 37)):
            x = b.inputs(batch, seq, False)[0].clone()
            grad_out = b.randn(*x.shape, seed=5)
            leaves = trainable(x, b.weights)
            ref = train_step(
                trainable(x.float(), b.weights.to(torch.float32)), cfg, torch_ops(), rotary32, grad_out.float()
            )
            for name, switched, compiled in [
                ("eager autograd", (), False),
                ("course", ALL_BF16, False),
                *([("compile", (), True), ("course compile", ALL_BF16, True)] if b.gpu else []),
            ]:
                try:
                    forward = torch.compile(block_forward, fullgraph=True) if compiled else None
                    ops = b.ops(switched)

                    def step(ops: Ops = ops, forward: Callable | None = forward) -> dict[str, torch.Tensor]:
                        return train_step(leaves, cfg, ops, rotary, grad_out, forward)

                    grads = step()
                    err = max(relative_error(grads[k], ref[k]) for k in ref)
                    if not err < 5e-2:
                        raise AssertionError(f"a gradient's relative error is {err:.3g} against float32")
                    rows.append(
                        {
                            "batch": batch,
                            "seq": seq,
                            "impl": name,
                            "ms": b.ms(step, calls=3, reps=5),
                            "max_grad_rel_err": err,
                        }
                    )
                except Exception as e:  # noqa: BLE001
                    b.run.error(section="train", batch=batch, seq=seq, impl=name, error=repr(e)[:500])
                    continue
                print(
                    f"train B={batch} S={seq} {name:16s} {rows[-1]['ms']:8.3f} ms  max gradient error {err:.1e}",
                    flush=True,
                )
    return rows


def captured_launches(fn: Callable[[], Any]) -> list[tuple[Any, Any, tuple, dict]]:
    """The Triton launches one call of fn makes: (kernel, grid, args, kwargs) as JITFunction.run got them."""
    from triton.runtime.jit import JITFunction

    seen, original = [], JITFunction.run

    def spy(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        seen.append((self, grid, args, kwargs))
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    JITFunction.run = spy
    try:
        with plain_launches():  # every launch through JITFunction.run, where the spy sees it
            fn()
    finally:
        JITFunction.run = original
    return seen


def section_host(b: Bench) -> list[dict[str, Any]]:
    """Host time per call of every course op at a decode size (tiny shapes, so the GPU keeps up): the public call
    (checks, autograd Function, registered op, launcher), the registered op alone, the bare Triton launch(es) it
    makes (JITFunction.run with every argument ready), and the PyTorch op that does the same work."""
    from course.loader import load_kernels

    m = {
        s: load_kernels(s, "solutions")
        for s in ("rmsnorm", "rope", "swiglu", "flash_attention", "quant_matmul", "fusion", "coalescing", "tiling")
    }
    r = lambda *shape: torch.randn(*shape, device=b.device, dtype=b.dtype)  # noqa: E731
    h, i, kv = (4096, 14336, 4096) if b.gpu else (128, 384, 64)
    d, hq, hkv, gs = b.cfg.head_dim, b.cfg.n_heads, b.cfg.n_kv_heads, 128 if b.gpu else h
    x, w, gate, up, xr, a, sq = (
        r(16, h),
        r(h),
        r(16, i),
        r(16, i),
        r(16, hq, 1, d),
        r(h, h),
        r(1024, 1024) if b.gpu else r(33, 65),
    )
    q1, kc, vc, qp, kp, vp = (
        r(16, hq, 1, d),
        r(16, hkv, kv, d),
        r(16, hkv, kv, d),
        r(1, hq, 128, d),
        r(1, hkv, 128, d),
        r(1, hkv, 128, d),
    )
    cos, sin = torch.randn(1, d // 2, device=b.device), torch.randn(1, d // 2, device=b.device)
    cos_f, sin_f = torch.cat((cos, cos), -1).to(b.dtype), torch.cat((sin, sin), -1).to(b.dtype)
    w8, s8, dense = torch.randint(-128, 128, (i, h), dtype=torch.int8, device=b.device), r(i), r(i, h)
    w4, s4 = torch.randint(0, 256, (i, h // 2), dtype=torch.uint8, device=b.device), r(i, h // gs)
    fa, qm, fu = m["flash_attention"], m["quant_matmul"], m["fusion"]
    sdpa = lambda q, k, v, causal: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)  # noqa: E731
    # name: (public call, registered op call, PyTorch call)
    cases: dict[str, tuple[Callable[[], Any], ...]] = {
        "rmsnorm": (lambda: m["rmsnorm"].rmsnorm(x, w), lambda: m["rmsnorm"].rmsnorm_forward_op(x, w, 1e-6, False), lambda: F.rms_norm(x, (h,), w, 1e-6)),
        "rope": (lambda: m["rope"].rope(xr, cos, sin), lambda: m["rope"].rope_forward_op(xr, cos, sin),
                 lambda: xr * cos_f + torch.cat((-xr[..., d // 2:], xr[..., : d // 2]), dim=-1) * sin_f),
        "swiglu": (lambda: m["swiglu"].swiglu(gate, up), lambda: m["swiglu"].swiglu_forward_op(gate, up), lambda: F.silu(gate) * up),
        "flash_attention decode": (lambda: fa.flash_attention(q1, kc, vc), lambda: fa.attention_decode_op(q1, kc, vc, d**-0.5), lambda: sdpa(q1, kc, vc, False)),
        "flash_attention prefill": (lambda: fa.flash_attention(qp, kp, vp, causal=True), lambda: fa.attention_forward_op(qp, kp, vp, True, d**-0.5, False),
                                    lambda: sdpa(qp, kp, vp, True)),
        "w8a16_matmul": (lambda: qm.w8a16_matmul(x, w8, s8), lambda: qm.w8a16_op(x, w8, s8), lambda: F.linear(x, dense)),
        "w4a16_matmul": (lambda: qm.w4a16_matmul(x, w4, s4, gs), lambda: qm.w4a16_op(x, w4, s4, gs), lambda: F.linear(x, dense)),
        "gelu": (lambda: fu.gelu(x), lambda: fu.gelu_op(x), lambda: F.gelu(x, approximate="tanh")),
        "softmax": (lambda: fu.softmax(x), lambda: fu.softmax_op(x), lambda: torch.softmax(x, -1)),
        "transpose": (lambda: m["coalescing"].transpose(sq), lambda: m["coalescing"].transpose_op(sq), lambda: sq.t().contiguous()),
        "matmul": (lambda: m["tiling"].matmul(x, a), lambda: m["tiling"].matmul_op(x, a), lambda: x @ a),
    }  # fmt: skip
    # the best of 5 runs of 200 queued calls: a cloud machine's host is shared, and one run reads 30% high at times
    timer = (lambda f: host_overhead_us(f, reps=5, warmup=20)) if b.gpu else (lambda f: host_overhead_us(f, calls=1, warmup=0))
    rows = []
    for name, (public, op, reference) in cases.items():
        try:
            for _ in range(3):  # compile and autotune first: only the launches of a settled call are replayed
                public()
            launches = captured_launches(public)

            def bare(launches: list = launches) -> None:
                for kernel, grid, args, kwargs in launches:
                    kernel[grid](*args, **kwargs)

            def direct(launches: list = launches) -> None:
                for kernel, grid, args, kwargs in launches:
                    launch(kernel, grid, *args, **kwargs)

            row = {
                "op": name,
                "public_us": timer(public),
                "op_us": timer(op),
                "bare_triton_us": timer(bare),
                "direct_us": timer(direct),
                "torch_us": timer(reference),
                "launches": len(launches),
            }
        except Exception as e:  # noqa: BLE001
            b.run.error(section="host", op=name, error=repr(e)[:500])
            continue
        rows.append(row)
        print(f"host {name:24s} public {row['public_us']:6.1f} us  op {row['op_us']:6.1f}  bare Triton {row['bare_triton_us']:6.1f}"
              f"  direct {row['direct_us']:6.1f}  PyTorch {row['torch_us']:6.1f}  ({row['launches']} launch(es))", flush=True)  # fmt: skip
    return rows


def section_hf(b: Bench, layers: int = 2) -> dict[str, Any]:
    """A Hugging Face Llama patched with the course's kernels against the same model unpatched: a tiny random one in
    float32 and bfloat16, then `layers` layers of Llama-3-8B's shape in bf16, compared, and timed (a prefill of
    1 x 2048 tokens; a decode step at batch 8 after a 2048-token prefill)."""
    from course import hf_patch

    if not hf_patch.available():
        print(f"hf: skipped: {hf_patch.missing_sentence()}")
        return {"skipped": hf_patch.missing_sentence()}
    from transformers import DynamicCache

    out: dict[str, Any] = {"transformers": hf_patch.transformers.__version__, "layers": layers, "compare": {}}
    for dtype in (torch.float32, torch.bfloat16) if b.gpu else (torch.float32,):
        r = hf_patch.compare_logits(b.kernels, hf_patch.tiny_config(2), dtype, b.device, batch=2, seq=33, steps=4)
        out["compare"][f"tiny {dtype}"] = r
        print(
            f"hf tiny {dtype}: relative error {r['relative_error']:.2e}, same tokens {r['same_tokens']}, patched {r['patched']}"
        )
    if not b.gpu:
        return out
    config = hf_patch.llama3_8b_config(layers)
    models = {
        name: hf_patch.build_model(config, torch.bfloat16, b.device) for name in ("PyTorch (SDPA)", "course kernels")
    }
    r = {
        "patched": hf_patch.patch(models["course kernels"], b.kernels),
        **hf_patch.compare_models(*models.values(), batch=1, seq=256, steps=4),
    }
    out["compare"]["llama3-8b shape bf16"] = r
    print(
        f"hf {layers} layers of Llama-3-8B bf16: relative error {r['relative_error']:.2e}, same tokens {r['same_tokens']}"
    )
    prompt, batch, context, steps = 2048, 8, 2048, 16
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, config.vocab_size, (1, prompt), generator=g).to(b.device)
    decode_prompt = torch.randint(0, config.vocab_size, (batch, context), generator=g).to(b.device)
    out["setup"] = {"prefill_tokens": prompt, "decode_batch": batch, "decode_context": context, "decode_steps": steps}
    out["timings"] = {}
    for name, model in models.items():

        def generate(n: int, m: Any = model) -> None:  # a prefill of the decode prompt, then n decode steps
            cache = DynamicCache(config=config)
            m(input_ids=decode_prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
            for _ in range(n):
                m(input_ids=decode_prompt[:, -1:], past_key_values=cache, use_cache=True, logits_to_keep=1)

        prefill = back_to_back_ms(lambda m=model: m(input_ids=tokens, use_cache=False, logits_to_keep=1), reps=10)
        step = (back_to_back_ms(lambda: generate(steps), reps=5) - back_to_back_ms(lambda: generate(0), reps=5)) / steps
        out["timings"][name] = {"prefill_ms": prefill, "decode_step_ms": step}
        print(
            f"hf {name}: prefill 1x{prompt} {prefill:.2f} ms, decode step (batch {batch}, ~{context} keys) {step:.3f} ms",
            flush=True,
        )
    return out


def install_wheels(wheels: Path) -> None:
    """Every wheel of `wheels` into a temporary folder put on sys.path, where transformers is missing (a GPU machine
    with no network). Made here for the GPU machine's Python, e.g. `pip download transformers==5.23.0
    --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 -d hf_wheels`, less the wheels of
    packages the GPU image has (numpy, packaging, pyyaml ...)."""
    import importlib.util
    import subprocess
    import tempfile

    if importlib.util.find_spec("transformers") is not None:
        return
    target = tempfile.mkdtemp(prefix="hf_site_")
    pip = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--target", target]
    proc = subprocess.run([*pip, *map(str, sorted(wheels.glob("*.whl")))], capture_output=True, text=True)
    print(f"installing the wheels of {wheels}: exit {proc.returncode} {proc.stderr.strip()[-300:]}")
    if proc.returncode == 0:
        sys.path.append(target)


def shipping_markdown(results: dict[str, Any]) -> str:
    """The shipping sections as markdown tables: what notebook 10 and the lecture quote."""
    m = results.get("meta", {})
    out = [f"# Shipping the course's kernels: {m.get('gpu', '?')}, torch {m.get('torch', '?')}, triton {m.get('triton', '?')},"
           f" {m.get('dtype', '?')}, {m.get('date', '?')}", "", f"`{m.get('command', '')}`", ""]  # fmt: skip
    for title, section, key, scale, unit in (
        ("Decode, 4096-token cache (us per block)", "shipping_decode", ("batch",), 1e3, "us"),
        ("Prefill under torch.compile (ms per block)", "shipping_prefill", ("batch", "seq"), 1, "ms"),
        ("Training step, forward + backward (ms)", "train", ("batch", "seq"), 1, "ms"),
    ):
        rows = results.get(section) or []
        impls = list(dict.fromkeys(r["impl"] for r in rows))
        cells = {(*(r[c] for c in key), r["impl"]): r["ms"] * scale for r in rows}
        keys = list(dict.fromkeys(tuple(r[c] for c in key) for r in rows))
        body = [[*k, *(f"{cells[(*k, i)]:.1f}" if (*k, i) in cells else "-" for i in impls)] for k in keys]
        out += [f"## {title}", "", *markdown_table([*key, *(f"{i} ({unit})" for i in impls)], body), ""] if rows else []
    host = results.get("host") or []
    if host:
        body = [[r["op"], *(f"{r[k]:.1f}" if k in r else "-" for k in ("public_us", "op_us", "bare_triton_us", "direct_us", "torch_us"))]
                for r in host]  # fmt: skip
        out += [
            "## Host time per call, eager (us)",
            "",
            *markdown_table(["op", "public call", "registered op", "bare Triton launch", "direct launch", "PyTorch"], body),
        ]
    return "\n".join(out) + "\n"


SECTIONS: dict[str, Callable[[Bench], Any]] = {
    "check": section_check, "attention": section_attention, "decode": section_decode, "breakdown": section_breakdown,
    "ablation": section_ablation, "prefill": section_prefill, "host": section_host, "eager_decode": section_eager_decode, "shipping_decode": section_shipping_decode,
    "train": section_train, "shipping_prefill": section_shipping_prefill, "hf": section_hf,
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = section_parser(
        __doc__, list(SECTIONS), default=["check", "attention", "decode", "breakdown", "ablation", "prefill"]
    )
    parser.add_argument("--kernels", choices=("solutions", "assignments"), default="solutions",
                        help="the reference solutions (the committed tables), or yours where they run")  # fmt: skip
    parser.add_argument("--hf-layers", type=int, default=2, help="hf: layers of Llama-3-8B's shape")
    parser.add_argument("--wheels", type=Path, help="hf: a folder of wheels holding transformers and what it needs")
    parser.add_argument("--ab", action="store_true", help="print the before/after tables of the runs under --out and stop")
    args = parser.parse_args(argv)
    if args.ab:
        print(host_ab_markdown(args.out))
        return 0
    if args.wheels is not None:
        install_wheels(args.wheels)
    torch._dynamo.config.cache_size_limit = 64  # one compiled graph per shape, and there are 16 shapes
    run = Sections(
        args.out / "llama_block.json",
        run_meta("python scripts/llama_block_bench.py " + " ".join(argv or sys.argv[1:])),
        merge=True,
    )
    with torch.inference_mode():
        bench = Bench(args.smoke, args.kernels, run)
        run.results["meta"].update(
            dtype=str(bench.dtype).replace("torch.", ""), config=bench.cfg.__dict__, kernels=bench.sources
        )
        for slug, why in bench.sources.items():
            print(f"{slug}: {why}", flush=True)
        for name in args.sections:
            measure = SECTIONS[name] if name != "hf" else (lambda b: section_hf(b, args.hf_layers))
            run.run(name, lambda measure=measure: measure(bench))
            # after each section, as the JSON: a run cut short keeps it
            (args.out / "shipping.md").write_text(shipping_markdown(run.results))
    print(shipping_markdown(run.results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
