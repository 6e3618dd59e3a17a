"""Check and tune the RoPE and SwiGLU solutions on a GPU, and time them against eager PyTorch and torch.compile.

    python3 scripts/tune_rope_swiglu.py [--json FILE] [--skip-compare] [--quick]

Its H200 output is committed: results/h200/tune_rope_swiglu_sweep.* (the full run, made before the RoPE
solution became the rows kernel) and results/h200/tune_rope_swiglu_final.* (--quick, on the final kernels).

1. correctness on cuda: every GPU-tier case of both specs (forward and backward, float32, float16,
   bfloat16) against the float64 reference and the graded tolerance, plus the GPU tier's catch of
   tests/submissions/swiglu/wrong_bf16_product.py, which the float32 CPU tier cannot see;
2. sweeps of the launch settings: the RoPE solution's rows per program (BLOCK_R) and warps, against two
   alternatives that reuse a table tile across heads (a head loop, a 3-D tile); SwiGLU elements per program
   (BLOCK) and warps; forward and backward;
3. the solution against eager PyTorch and torch.compile (forward, and the compiled backward) at the
   bench shapes, with Dynamo's recompile limit lifted as the specs do;
4. the decode-sized SwiGLU call (16 rows): GPU time, host time per call, CUDA-graph replay, and the
   bandwidth floor, to show it is bound by launch overhead.
Prints a table per step and writes everything measured to --json. Without a GPU it runs a dry pass under
the Triton interpreter (tiny shapes, nothing timed) to check the script itself.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import course.env  # noqa: E402,F401  (before triton)
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import autograder.specs.rope as rope_spec  # noqa: E402
import autograder.specs.swiglu as swiglu_spec  # noqa: E402
from autograder.checking import compare  # noqa: E402
from autograder.spec import DTYPES, generator  # noqa: E402
from course.loader import load_kernels, load_module  # noqa: E402

DEV = course.env.DEVICE
GPU = DEV.type == "cuda"
REPO = Path(__file__).resolve().parent.parent
rope_k = load_kernels("rope", "solutions")
swiglu_k = load_kernels("swiglu", "solutions")
REPORT: dict = {}
T0 = time.perf_counter()
JSON_PATH: Path | None = None


def save() -> None:
    """Write what has been measured so far (a run cut short by a time limit keeps its numbers)."""
    if JSON_PATH is not None:
        # NaN (the dry run's times) becomes null, so the file stays valid JSON
        JSON_PATH.write_text(json.dumps(json.loads(json.dumps(REPORT), parse_constant=lambda c: None), indent=1) + "\n")


def say(text: str = "") -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {text}" if text else "", flush=True)


if GPU:
    from autograder import timing

    COPY_GBPS = timing.copy_bandwidth_gbps(DEV)

    def time_ms(fn: Callable[[], object], reps: int = 15) -> float:
        """Median GPU time of fn, L2 flushed before each call (the grader's timing, short warm-up)."""
        return timing.median(timing.time_interleaved({"f": lambda i: fn()}, 1, reps, DEV, warmup_ms=10, min_warmup_calls=3)["f"])
else:
    COPY_GBPS = float("nan")

    def time_ms(fn: Callable[[], object], reps: int = 15) -> float:
        fn()  # dry run: check that the launch works, time nothing
        return float("nan")


# --------------------------------------------------------------------------------------------------
# 1. Correctness on the device, with the graded tolerances
# --------------------------------------------------------------------------------------------------


def check_correctness() -> bool:
    say("1. correctness: every GPU-tier case, solution against the float64 reference")
    ok = True
    rows = []
    for spec, module in ((rope_spec, rope_k), (swiglu_spec, swiglu_k)):
        for part in spec.ASSIGNMENT.parts:
            for case in part.cases_for("gpu"):
                params = dict(case.params)
                if not GPU:  # dry run: the same code on a tiny shape
                    params["shape"] = [1, 2, 5, params["shape"][-1]] if spec is rope_spec else [3, 37]
                    if params["dtype"] != "float32":
                        continue
                inputs = part.make_inputs(params, generator(1234, DEV), DEV)
                out = part.call(module, inputs, params)
                ref = part.reference(inputs, params)
                worst = 0.0
                for name, want in ref.items():
                    verdict = compare(name, out[name], want, part.tolerances[params["dtype"]])
                    worst = max(worst, verdict.max_error)
                    if not verdict.ok:
                        ok = False
                        say(f"   FAIL {part.task} {case.name}: {verdict.message[:300]}")
                rows.append({"task": part.task, "case": case.name, "max_error_of_tolerance": worst})
    worst = {}
    for r in rows:
        worst[r["task"]] = max(worst.get(r["task"], 0.0), r["max_error_of_tolerance"])
    for task, w in worst.items():
        say(f"   {task:18s} worst error {100 * w:5.1f}% of the tolerance over {sum(r['task'] == task for r in rows)} cases")
    REPORT["correctness"] = rows

    # The bf16 product before the activation: invisible in float32, caught in float16 and bfloat16.
    wrong = load_module(REPO / "tests" / "submissions" / "swiglu" / "wrong_bf16_product.py", name="wrong_bf16_product")
    part = swiglu_spec.ASSIGNMENT.part("swiglu.forward")
    caught = []
    for case in part.cases_for("gpu"):
        params = case.params if GPU else {**case.params, "shape": [3, 37]}
        if not GPU and params["dtype"] != "float32":
            continue
        inputs = part.make_inputs(params, generator(99, DEV), DEV)
        verdict = compare("y", wrong.swiglu(inputs["gate"], inputs["up"]), part.reference(inputs, params)["y"],
                          part.tolerances[params["dtype"]])
        bad = 0 if verdict.ok else int(verdict.message.split(" of ")[0].split(": ")[1].replace(",", ""))
        caught.append({"case": case.name, "passed": verdict.ok, "bad_elements": bad, "max_error_of_tolerance": verdict.max_error})
        say(f"   wrong_bf16_product {case.name:28s} {'passes' if verdict.ok else 'FAILS'} "
            f"({bad} bad elements, max error {verdict.max_error:.2f} of the tolerance)")
        if params["dtype"] != "float32" and verdict.ok:
            ok = False
            say("   ^ the GPU tier should have caught this one")
    REPORT["wrong_bf16_product_on_gpu"] = caught
    return ok


# --------------------------------------------------------------------------------------------------
# 2. Sweeps
# --------------------------------------------------------------------------------------------------


@triton.jit
def _rope_fwd_headloop(x_ptr, cos_ptr, sin_ptr, y_ptr, n_heads, seq_len, half,
                       BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, HEADS: tl.constexpr):
    """An alternative: a (BLOCK_S, BLOCK_D) table tile loaded once, then reused from registers for HEADS heads."""
    pos = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    cols = tl.arange(0, BLOCK_D)
    tile_mask = (pos[:, None] < seq_len) & (cols[None, :] < half)
    table = pos[:, None] * half + cols[None, :]
    cos = tl.load(cos_ptr + table, mask=tile_mask, other=0.0)
    sin = tl.load(sin_ptr + table, mask=tile_mask, other=0.0)
    row = pos[:, None].to(tl.int64) * (2 * half) + cols[None, :]
    for i in range(HEADS):
        head = tl.program_id(1) * HEADS + i
        mask = tile_mask & (head < n_heads)
        base = head.to(tl.int64) * seq_len * (2 * half)
        x1 = tl.load(x_ptr + base + row, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(x_ptr + base + row + half, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + row, (x1 * cos - x2 * sin).to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(y_ptr + base + row + half, (x2 * cos + x1 * sin).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rope_fwd_3d(x_ptr, cos_ptr, sin_ptr, y_ptr, n_heads, seq_len, half,
                 BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, HEADS: tl.constexpr):
    """An alternative: HEADS heads as one (HEADS, BLOCK_S, BLOCK_D) tile, the table broadcast along the heads."""
    pos = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    cols = tl.arange(0, BLOCK_D)
    heads = tl.program_id(1) * HEADS + tl.arange(0, HEADS)
    tile_mask = (pos[:, None] < seq_len) & (cols[None, :] < half)
    table = pos[:, None] * half + cols[None, :]
    cos = tl.load(cos_ptr + table, mask=tile_mask, other=0.0)[None, :, :]
    sin = tl.load(sin_ptr + table, mask=tile_mask, other=0.0)[None, :, :]
    offs = (heads[:, None, None].to(tl.int64) * seq_len * (2 * half)
            + pos[None, :, None].to(tl.int64) * (2 * half) + cols[None, None, :])
    mask = tile_mask[None, :, :] & (heads[:, None, None] < n_heads)
    x1 = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + offs + half, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (x1 * cos - x2 * sin).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + offs + half, (x2 * cos + x1 * sin).to(y_ptr.dtype.element_ty), mask=mask)


def rope_inputs(shape: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    params = {"shape": shape, "dtype": "bfloat16"}
    inputs = rope_spec.make_forward_inputs(params, generator(7, DEV), DEV)
    return inputs["x"], inputs["cos"], inputs["sin"]


def rope_launcher(variant: str, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, y: torch.Tensor,
                  cfg: tuple[int, ...]) -> Callable[[], object]:
    """A zero-argument launch of one forward variant. rows: cfg = (BLOCK_R, warps); headloop, 3d: (BLOCK_S, HEADS, warps)."""
    batch, heads, seq_len, head_dim = x.shape
    half = head_dim // 2
    block_d = triton.next_power_of_2(half)
    if variant == "rows":
        block_r, warps = cfg
        n_rows = batch * heads * seq_len
        return lambda: rope_k._rope_fwd_kernel[(triton.cdiv(n_rows, block_r),)](
            x, cos, sin, y, n_rows, seq_len, half, BLOCK_R=block_r, BLOCK_D=block_d, num_warps=warps)
    block_s, per_program, warps = cfg
    kernel = _rope_fwd_headloop if variant == "headloop" else _rope_fwd_3d
    grid = (triton.cdiv(seq_len, block_s), triton.cdiv(batch * heads, per_program))
    return lambda: kernel[grid](x, cos, sin, y, batch * heads, seq_len, half,
                                BLOCK_S=block_s, BLOCK_D=block_d, HEADS=per_program, num_warps=warps)


def sweep_rope(quick: bool = False) -> None:
    say("2a. RoPE forward sweep (bf16): the solution's rows kernel (BLOCK_R x warps), and two alternatives that keep")
    say("    the table in registers across heads: a head loop (BLOCK_S, HEADS, warps) and a 3-D tile")
    shapes = [[1, 32, 8192, 128], [8, 32, 1, 128], [1, 32, 2048, 128], [1, 32, 2048, 96]] if GPU else [[1, 3, 9, 24], [4, 3, 1, 16]]
    if quick:
        shapes = shapes[:2]
    results = []
    for shape in shapes:
        x, cos, sin = rope_inputs(shape)
        seq_len = shape[2]
        expected = rope_k.rope_forward(x, cos, sin)
        nbytes = rope_spec.forward_bytes({"shape": shape, "dtype": "bfloat16"})
        if seq_len == 1:
            space = [("rows", (r, w)) for r in (1, 2, 4, 8, 16) for w in (1, 2, 4)]
            space += [("headloop", (1, h, 2)) for h in (1, 2, 4)] + [("3d", (1, h, 2)) for h in (2, 8, 16)]
        else:
            space = [("rows", (r, w)) for r in (8, 16, 32) for w in (4, 8)]
            space += [("headloop", (16, h, 4)) for h in (1, 2, 4, 8)] + [("3d", (8, 2, 4))]
        if not GPU:
            space = [c for i, c in enumerate(space) if i % 4 == 0]
        timed = []
        for variant, cfg in space:
            y = torch.empty_like(x)
            launch = rope_launcher(variant, x, cos, sin, y, cfg)
            launch()
            if not torch.equal(y, expected):
                say(f"   MISMATCH {variant} {cfg} on {shape}")
                continue
            ms = time_ms(launch)
            timed.append((ms, variant, cfg))
            results.append({"shape": shape, "variant": variant, "config": list(cfg), "us": ms * 1e3,
                            "pct_copy": 100 * nbytes / (ms * 1e-3) / 1e9 / COPY_GBPS})
        cur = rope_k._config(shape[0] * shape[1] * seq_len, shape[3] // 2)
        cur_ms = time_ms(lambda: rope_k.rope_forward(x, cos, sin))  # noqa: B023
        timed.sort(key=lambda t: t[0])
        pct = lambda ms: 100 * nbytes / (ms * 1e-3) / 1e9 / COPY_GBPS  # noqa: E731
        say(f"   {str(shape):20s} best {timed[0][1]} {timed[0][2]}: {timed[0][0] * 1e3:6.2f} us ({pct(timed[0][0]):3.0f}% of copy); "
            f"solution {cur}: {cur_ms * 1e3:6.2f} us ({pct(cur_ms):3.0f}%)")
        say("      " + "; ".join(f"{v} {'/'.join(map(str, c))} {ms * 1e3:.2f}us" for ms, v, c in timed))
    REPORT["rope_forward_sweep"] = results

    say("2b. RoPE backward (rows kernel, BLOCK_R x warps)")
    rows = []
    for shape in shapes[:2]:
        x, cos, sin = rope_inputs(shape)
        n_rows, seq_len, half = shape[0] * shape[1] * shape[2], shape[2], shape[3] // 2
        nbytes = rope_spec.backward_bytes({"shape": shape, "dtype": "bfloat16"})
        block_r0, block_d, warps0 = rope_k._config(n_rows, half)
        for block_r, warps in dict.fromkeys([(block_r0, warps0), (max(1, block_r0 // 2), warps0), (block_r0 * 2, min(8, warps0 * 2))]):
            dx = torch.empty_like(x)
            ms = time_ms(lambda: rope_k._rope_bwd_kernel[(triton.cdiv(n_rows, block_r),)](  # noqa: B023
                x, cos, sin, dx, n_rows, seq_len, half, BLOCK_R=block_r, BLOCK_D=block_d, num_warps=warps))  # noqa: B023
            rows.append({"shape": shape, "BLOCK_R": block_r, "num_warps": warps, "us": ms * 1e3,
                         "pct_copy": 100 * nbytes / (ms * 1e-3) / 1e9 / COPY_GBPS})
            say(f"   {str(shape):20s} BLOCK_R={block_r:3d} warps={warps}: {ms * 1e3:7.2f} us ({rows[-1]['pct_copy']:4.0f}% of copy)")
    REPORT["rope_backward_sweep"] = rows


def swiglu_inputs(shape: list[int], backward: bool = False) -> dict:
    params = {"shape": shape, "dtype": "bfloat16"}
    make = swiglu_spec.make_backward_inputs if backward else swiglu_spec.make_forward_inputs
    return make(params, generator(7, DEV), DEV)


def sweep_swiglu(quick: bool = False) -> None:
    say("2c. SwiGLU forward sweep (bf16): BLOCK x warps")
    shapes = [[8192, 14336], [2048, 14336], [16, 14336]] if GPU else [[3, 1000]]
    if quick:
        shapes = shapes[2:]
    space = [(b, w) for b in (512, 1024, 2048, 4096, 8192) for w in (2, 4, 8, 16) if b // (32 * w) >= 4]
    results = []
    for shape in shapes:
        inputs = swiglu_inputs(shape)
        gate, up = inputs["gate"], inputs["up"]
        n = gate.numel()
        nbytes = swiglu_spec.forward_bytes({"shape": shape, "dtype": "bfloat16"})
        expected = swiglu_k.swiglu_forward(gate, up)
        timed = []
        for block, w in (space if GPU else space[:3]):
            out = torch.empty_like(gate)
            launch = lambda: swiglu_k._swiglu_fwd_kernel[(triton.cdiv(n, block),)](gate, up, out, n, BLOCK=block, num_warps=w)  # noqa: E731,B023
            launch()
            if not torch.equal(out, expected):
                say(f"   MISMATCH BLOCK={block} warps={w}")
                continue
            ms = time_ms(launch)
            timed.append((ms, block, w))
            results.append({"shape": shape, "BLOCK": block, "num_warps": w, "us": ms * 1e3,
                            "pct_copy": 100 * nbytes / (ms * 1e-3) / 1e9 / COPY_GBPS})
        cur_ms = time_ms(lambda: swiglu_k.swiglu_forward(gate, up))
        timed.sort()
        pct = lambda ms: 100 * nbytes / (ms * 1e-3) / 1e9 / COPY_GBPS  # noqa: E731
        say(f"   {str(shape):14s} best BLOCK={timed[0][1]} warps={timed[0][2]}: {timed[0][0] * 1e3:7.1f} us ({pct(timed[0][0]):4.0f}%); "
            f"current {swiglu_k._config(n)}: {cur_ms * 1e3:7.1f} us ({pct(cur_ms):4.0f}%)")
        say("      all: " + "; ".join(f"{b}/{w} {pct(ms):.0f}%" for ms, b, w in sorted(timed, key=lambda t: (t[1], t[2]))))
    REPORT["swiglu_forward_sweep"] = results

    say("2d. SwiGLU backward sweep (bf16): BLOCK x warps")
    rows = []
    for shape in ([[16, 14336]] if quick else [[8192, 14336], [2048, 14336], [16, 14336]]) if GPU else shapes:
        inputs = swiglu_inputs(shape, backward=True)
        gate, up, dy = inputs["gate"], inputs["up"], inputs["dy"]
        n = gate.numel()
        nbytes = swiglu_spec.backward_bytes({"shape": shape, "dtype": "bfloat16"})
        timed = []
        for block, w in [(b, w) for b in (512, 1024, 2048, 4096) for w in (2, 4, 8) if b // (32 * w) >= 2]:
            dg, du = torch.empty_like(gate), torch.empty_like(up)
            ms = time_ms(lambda: swiglu_k._swiglu_bwd_kernel[(triton.cdiv(n, block),)](gate, up, dy, dg, du, n, BLOCK=block, num_warps=w))  # noqa: B023
            timed.append((ms, block, w))
            rows.append({"shape": shape, "BLOCK": block, "num_warps": w, "us": ms * 1e3,
                         "pct_copy": 100 * nbytes / (ms * 1e-3) / 1e9 / COPY_GBPS})
        timed.sort()
        cur_ms = time_ms(lambda: swiglu_k.swiglu_backward(gate, up, dy))  # noqa: B023
        say(f"   {str(shape):14s} solution {swiglu_k._config(n, backward=True)}: {cur_ms * 1e3:.2f} us; "
            + "; ".join(f"{b}/{w} {ms * 1e3:.2f}us" for ms, b, w in timed))
    REPORT["swiglu_backward_sweep"] = rows


# --------------------------------------------------------------------------------------------------
# 3. Against eager PyTorch and torch.compile, forward and backward, at the bench shapes
# --------------------------------------------------------------------------------------------------


def compare_baselines() -> None:
    say("3. solution vs eager vs torch.compile at the bench shapes (bf16; compile ratio > 1 means the solution is faster)")
    rows = []
    for slug, spec, module in (("rope", rope_spec, rope_k), ("swiglu", swiglu_spec, swiglu_k)):
        suite = spec.bench_suite(module)
        if not GPU:
            suite = suite[:2]
        for case in suite:
            if not GPU:
                case.params["shape"] = [1, 2, 5, 16] if slug == "rope" else [3, 37]
            inputs = case.make_inputs(case.params, generator(1000, DEV), DEV)
            calls = {impl: prepare(inputs) for impl, prepare in case.impls.items() if GPU or impl != "torch.compile"}
            if GPU:
                times = timing.time_interleaved({k: (lambda i, c=c: c()) for k, c in calls.items()}, 1, 20, DEV)
                ms = {k: statistics.median(v) for k, v in times.items()}
            else:
                ms = {k: (c(), float("nan"))[1] for k, c in calls.items()}
            nbytes = case.bytes_moved
            row = {"slug": slug, "pass": case.pass_name, "shape": case.params["shape"],
                   **{f"{k}_us": v * 1e3 for k, v in ms.items()},
                   "solution_pct_copy": 100 * nbytes / (ms["solution"] * 1e-3) / 1e9 / COPY_GBPS}
            if "torch.compile" in ms:
                row["vs_compile"] = ms["torch.compile"] / ms["solution"]
                row["compile_pct_copy"] = 100 * nbytes / (ms["torch.compile"] * 1e-3) / 1e9 / COPY_GBPS
            row["vs_eager"] = ms["eager"] / ms["solution"]
            rows.append(row)
            REPORT["baselines"] = rows
            save()
            say(f"   {slug:6s} {case.pass_name:8s} {str(case.params['shape']):18s} solution {ms['solution'] * 1e3:8.1f} us "
                f"({row['solution_pct_copy']:3.0f}% copy)  eager {ms['eager'] * 1e3:8.1f} us ({row['vs_eager']:5.2f}x)  "
                + (f"compile {ms['torch.compile'] * 1e3:8.1f} us ({row['compile_pct_copy']:3.0f}% copy, solution {row['vs_compile']:4.2f}x)"
                   if "torch.compile" in ms else ""))
    REPORT["baselines"] = rows


# --------------------------------------------------------------------------------------------------
# 4. Decode-sized SwiGLU: launch-bound
# --------------------------------------------------------------------------------------------------


def decode_launch_bound() -> None:
    say("4. decode-sized SwiGLU (16 x 14336 bf16): what bounds it")
    shape = [16, 14336] if GPU else [2, 100]
    inputs = swiglu_inputs(shape)
    gate, up = inputs["gate"], inputs["up"]
    n = gate.numel()
    nbytes = swiglu_spec.forward_bytes({"shape": shape, "dtype": "bfloat16"})
    out = torch.empty_like(gate)
    block, warps = swiglu_k._config(n)
    fns = {
        "kernel launch only": lambda: swiglu_k._swiglu_fwd_kernel[(triton.cdiv(n, block),)](gate, up, out, n, BLOCK=block, num_warps=warps),
        "swiglu (checks + autograd.Function)": lambda: swiglu_k.swiglu(gate, up),
        "eager F.silu(gate) * up": lambda: swiglu_spec.eager_baseline(inputs, {}),
    }
    if GPU:
        fns["torch.compile"] = swiglu_spec.compiled_baseline()
        compiled = fns["torch.compile"]
        fns["torch.compile"] = lambda: compiled(inputs, {})
    result = {"shape": shape, "bytes": nbytes, "floor_us": nbytes / (COPY_GBPS * 1e9) * 1e6, "rows": []}
    for name, fn in fns.items():
        gpu_us = time_ms(fn, reps=30) * 1e3
        host_us = timing.host_overhead_us(fn) if GPU else float("nan")
        result["rows"].append({"impl": name, "gpu_us": gpu_us, "host_us_per_call": host_us})
        say(f"   {name:36s} GPU {gpu_us:6.2f} us (L2 flushed)   host {host_us:6.2f} us per call back to back")
    if GPU:  # a CUDA graph replays the launches without Python: what is left is the GPU's own time
        graph, calls = torch.cuda.CUDAGraph(), 100
        swiglu_k.swiglu(gate, up)
        with torch.cuda.graph(graph):
            for _ in range(calls):
                swiglu_k.swiglu_forward(gate, up)
        graph.replay()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        result["graph_us_per_call"] = start.elapsed_time(end) * 1e3 / (5 * calls)
        say(f"   CUDA graph of 100 swiglu calls: {result['graph_us_per_call']:.2f} us per call (L2 warm)")
        say(f"   bandwidth floor: {nbytes / 1e6:.2f} MB at {COPY_GBPS / 1e3:.2f} TB/s = {result['floor_us']:.2f} us")
    REPORT["decode_swiglu"] = result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--skip-compare", action="store_true", help="skip step 3 (torch.compile is slow to compile)")
    parser.add_argument("--quick", action="store_true", help="only the decode-sized sweeps (and the largest RoPE shape)")
    args = parser.parse_args()
    global JSON_PATH
    JSON_PATH = args.json
    REPORT["meta"] = {"gpu": torch.cuda.get_device_name(0) if GPU else "none (dry run)", "torch": torch.__version__,
                      "triton": triton.__version__, "date": datetime.date.today().isoformat(), "copy_gbps": COPY_GBPS,
                      "command": "python3 scripts/tune_rope_swiglu.py"}
    say(f"{REPORT['meta']['gpu']}; torch {torch.__version__}, triton {triton.__version__}; copy {COPY_GBPS:,.0f} GB/s")

    ok = True if args.quick else check_correctness()
    save()
    steps = [lambda: sweep_swiglu(args.quick), lambda: sweep_rope(args.quick), decode_launch_bound]
    steps += [] if args.skip_compare or args.quick else [compare_baselines]
    for step in steps:
        try:
            step()
        except Exception as exc:  # noqa: BLE001  (one failed step must not cost the others' numbers)
            ok = False
            say(f"   a step failed: {type(exc).__name__}: {exc}")
        save()
    say("done" if ok else "done, with failures above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
