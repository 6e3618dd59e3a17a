"""Where the compiled training step's time goes (issue 20: course block 0.94-0.97x compiled PyTorch), on a GPU.

    python results/provenance/train_profile.py OUT [BATCH ...]      # default batches 1 and 2, 2048 tokens

Four blocks, each compiled as `traced_ops.py train` compiles them (torch.compile(fullgraph=True, dynamic=False) of
block_forward, the backward through autograd, every course op traced into):

- PyTorch: the block of module 10 in PyTorch ops (SDPA picks its backend; cuDNN's on Hopper);
- course: RMSNorm, RoPE, SwiGLU and flash attention from solutions/ (forward and backward kernels), cuBLAS projections;
- course, SDPA attention: the same with PyTorch's attention (the ablation that isolates the attention kernels);
- PyTorch, course attention: PyTorch's block with only the course's flash attention.

Each block's gradients are compared with the float32 PyTorch block's first (max relative error over the ten
leaves). Then the four are timed in interleaved rounds (7 rounds of 3 queued steps, wall time, median and best),
and each is profiled over 5 steps: the GPU time of every kernel, summed per step into kinds by kernel name
(projections' GEMMs, course attention forward and backward, SDPA's attention, the course's other kernels,
Inductor's generated kernels, ATen's copies and fills, other). Writes OUT/train_profile.json and prints the tables last.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path.cwd() / "scripts"))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import llama_block_bench as lbb  # noqa: E402
from course.llama import block_forward, relative_error, rotary_tables, torch_ops, train_step, trainable  # noqa: E402
from course.results import Sections, run_meta  # noqa: E402

SEQ = 2048 if torch.cuda.is_available() else 16  # the CPU (interpreter, tiny config) only checks that it runs
BLOCKS: dict[str, tuple[str, ...]] = {
    "PyTorch": (),
    "course": lbb.ALL_BF16,
    "course, SDPA attention": ("rmsnorm", "rope", "swiglu"),
    "PyTorch, course attention": ("attention",),
}

# Kernel name -> kind, first match wins (names as the profiler reports them: Triton kernels by their function name,
# library kernels by their mangled or plain names).
KINDS: list[tuple[str, tuple[str, ...]]] = [
    ("course attention fwd", ("_attn_fwd_kernel",)),
    ("course attention bwd", ("_attn_bwd_",)),
    ("SDPA attention", ("cudnn", "fmha", "flash_fwd", "flash_bwd", "flash::", "sdpa", "attention", "fprop", "bprop",
                        "dgrad_", "cutlass3x_sm90_fmha")),
    ("projections (GEMM)", ("gemm", "nvjet", "xmma", "cutlass", "cublas", "splitkreduce", "sm90_", "sm80_")),
    ("course rmsnorm/rope/swiglu", ("_rmsnorm_", "_rope_", "_swiglu_")),
    ("Inductor's kernels", ("triton_",)),
    ("ATen copies and fills", ("copy", "elementwise_kernel", "catarray", "fill", "memset", "memcpy")),
]


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def kind_of(name: str) -> str:
    low = name.lower()
    for kind, keys in KINDS:
        if any(k.lower() in low for k in keys):
            return kind
    return "other"


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    batches = [int(a) for a in sys.argv[2:]] or [1, 2]
    torch._dynamo.config.cache_size_limit = 64
    run = Sections(out / "train_profile_bench.json", run_meta("train_profile"))
    b = lbb.Bench(False, "solutions", run)
    cfg = b.cfg
    report: dict = {"meta": run_meta("train_profile"), "seq": SEQ, "rows": {}}
    with torch.enable_grad():
        rotary, rotary32 = (rotary_tables(cfg, b.rotary.cos.shape[0], dt, b.device) for dt in (b.dtype, torch.float32))
        for batch in batches:
            x = b.inputs(batch, SEQ, False)[0].clone()
            grad_out = b.randn(*x.shape, seed=5)
            leaves = trainable(x, b.weights)
            ref = train_step(trainable(x.float(), b.weights.to(torch.float32)), cfg, torch_ops(), rotary32,
                             grad_out.float())
            steps, rows = {}, {}
            for i, (name, switched) in enumerate(BLOCKS.items()):
                # a fresh function object per block: torch.compile caches by code object
                fwd = eval(compile("lambda *a, **k: block_forward(*a, **k)", f"<train {batch} {i}>", "eval"),
                           {"block_forward": block_forward})
                forward = torch.compile(fwd, fullgraph=True, dynamic=False)
                ops = b.ops(switched)

                def step(ops=ops, forward=forward) -> dict[str, torch.Tensor]:
                    return train_step(leaves, cfg, ops, rotary, grad_out, forward)

                grads = step()
                rows[name] = {"max_grad_rel_err": max(relative_error(grads[k], ref[k]) for k in ref)}
                steps[name] = step
            for f in steps.values():  # warm-up
                for _ in range(2):
                    f()
            walls: dict[str, list[float]] = {n: [] for n in steps}
            for _ in range(7):
                for name, f in steps.items():
                    sync()
                    t0 = time.perf_counter()
                    for _ in range(3):
                        f()
                    sync()
                    walls[name].append((time.perf_counter() - t0) / 3 * 1e6)
            for name, f in steps.items():
                activity = ProfilerActivity.CUDA if torch.cuda.is_available() else ProfilerActivity.CPU
                with profile(activities=[activity]) as prof:
                    for _ in range(5):
                        f()
                    sync()
                kernels: dict[str, float] = {}
                for e in prof.key_averages():
                    if e.self_device_time_total > 0:
                        kernels[e.key] = kernels.get(e.key, 0.0) + e.self_device_time_total / 5
                by_kind: dict[str, float] = {}
                for k, us in kernels.items():
                    by_kind[kind_of(k)] = by_kind.get(kind_of(k), 0.0) + us
                rows[name].update(
                    wall_us_median=statistics.median(walls[name]), wall_us_best=min(walls[name]),
                    gpu_us=sum(kernels.values()), by_kind=by_kind,
                    top_kernels=dict(sorted(kernels.items(), key=lambda kv: -kv[1])[:25]),
                )
            report["rows"][f"{batch}x{SEQ}"] = rows
            (out / "train_profile.json").write_text(json.dumps(report, indent=1))
            print_tables(batch, rows)


def print_tables(batch: int, rows: dict) -> None:
    base = rows["PyTorch"]["wall_us_median"]
    print(f"\n{batch}x{SEQ}: wall us per step (median of 7 rounds, best), vs PyTorch compiled; GPU us per step; grad err")
    for name, r in rows.items():
        print(f"  {name:27s} {r['wall_us_median']:8.1f} ({r['wall_us_best']:8.1f})  {base / r['wall_us_median']:5.3f}x"
              f"  gpu {r['gpu_us']:8.1f}  err {r['max_grad_rel_err']:.1e}")
    kinds = [k for k, _ in KINDS] + ["other"]
    print("  GPU us per step by kind: " + " | ".join(rows))
    for k in kinds:
        vals = [rows[n]["by_kind"].get(k, 0.0) for n in rows]
        if any(vals):
            print(f"  {k:27s} " + " ".join(f"{v:9.1f}" for v in vals))
    for name in ("PyTorch", "course"):
        print(f"  {name}: largest kernels, us per step")
        for k, us in list(rows[name]["top_kernels"].items())[:12]:
            print(f"    {us:8.1f}  {k[:110]}")


if __name__ == "__main__":
    main()
