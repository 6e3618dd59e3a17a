"""Issue 20: torch.compile tracing into the course's ops (course/ops.py's traced rule), on a GPU.

Part "ops": each op of the solutions compiled alone with fullgraph=True, under AOTAutograd with graph recording
(is the op traced into: wrap_triton nodes in the graph, or one opaque course op?) and under Inductor (the
output against the eager call's, which runs the same kernel with the same settings).
Part "prefill": the module 10 block at 1x512, 4x512 and 1x2048 tokens compiled (dynamic=False): PyTorch, the
course block with its ops traced into, and with every op opaque (course.ops.trace_into_ops(False)); 5 rounds
in turn of 20 queued steps, host and wall microseconds per step.
Part "decode": the W4A16 block with fused projections under reduce-overhead without CUDA graph trees, traced
and opaque, batch 1 and 16 (checked against float32, then timed in turn).
Part "train": one training step at 1x2048, compiled, PyTorch and the course block traced and opaque.
Part "profile": both blocks compiled and traced, under torch.profiler at PROFILE_SIZE (default 1x512): tables of
host time and of GPU time per op and kernel.

    python results/provenance/traced_ops.py OUT [ops] [prefill] [decode] [train]"""
import json, os, statistics, sys, time, traceback
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import course.ops
import llama_block_bench as lbb
from course.llama import block_forward, relative_error, torch_ops, train_step, trainable, rotary_tables
from course.loader import load_kernels
from course.results import Sections, run_meta
from torch._dynamo.testing import AotEagerAndRecordGraphs

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
parts = set(sys.argv[2:]) or {"ops", "prefill", "decode", "train"}
run = Sections(out / "traced_ops.json", run_meta("traced_ops"))
torch._dynamo.config.cache_size_limit = 64
dev = "cuda"
report: dict = {"meta": run_meta("traced_ops")}


def r(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device=dev, dtype=dtype)


def timed(fns: dict, x, rounds: int = 5, steps: int = 20) -> dict:
    for f in fns.values():
        for _ in range(3):
            f(x)
    got = {name: {"host": [], "wall": []} for name in fns}
    for _ in range(rounds):
        for name, f in fns.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(steps):
                f(x)
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            got[name]["host"].append((t1 - t0) / steps * 1e6); got[name]["wall"].append((t2 - t0) / steps * 1e6)
    return {name: {k: (min(s), statistics.median(s)) for k, s in v.items()} for name, v in got.items()}


if "ops" in parts:
    k = {s: load_kernels(s, "solutions") for s in ("rmsnorm", "rope", "swiglu", "fusion", "coalescing", "tiling", "flash_attention", "quant_matmul")}
    torch.manual_seed(0)
    q, kk, vv = r(2, 32, 512, 128), r(2, 8, 512, 128), r(2, 8, 512, 128)
    cos, sin = r(512, 64), r(512, 64)
    w_packed = torch.randint(0, 256, (4096, 2048), dtype=torch.uint8, device=dev)
    only = os.environ.get("OPS")
    cases = [
        ("rmsnorm_forward", k["rmsnorm"].rmsnorm_forward_op, (r(512, 4096), r(4096), 1e-5, True)),
        ("rmsnorm_backward", k["rmsnorm"].rmsnorm_backward_op, (r(512, 4096), r(4096), torch.rand(512, device=dev), r(512, 4096))),
        ("rope_forward", k["rope"].rope_forward_op, (r(2, 32, 512, 128), cos, sin)),
        ("swiglu_forward", k["swiglu"].swiglu_forward_op, (r(512, 14336), r(512, 14336))),
        ("swiglu_backward", k["swiglu"].swiglu_backward_op, (r(512, 14336), r(512, 14336), r(512, 14336))),
        ("gelu", k["fusion"].gelu_op, (r(512, 4096),)),
        ("softmax 32000", k["fusion"].softmax_op, (r(64, 32000),)),
        ("softmax 128256", k["fusion"].softmax_op, (r(64, 128256),)),
        ("transpose", k["coalescing"].transpose_op, (r(1000, 3000),)),
        ("matmul", k["tiling"].matmul_op, (r(1024, 1024), r(1024, 1024))),
        ("attention_forward", k["flash_attention"].attention_forward_op, (q, kk, vv, True, 128 ** -0.5, True)),
        ("attention_decode", k["flash_attention"].attention_decode_op, (r(2, 32, 1, 128), kk, vv, 128 ** -0.5)),
        ("attention_backward", k["flash_attention"].attention_backward_op,
         (q, kk, vv, r(2, 32, 512, 128), torch.rand(2, 32, 512, device=dev), r(2, 32, 512, 128), True, 128 ** -0.5)),
        ("attention_decode 4096", k["flash_attention"].attention_decode_op, (r(8, 32, 1, 128), r(8, 8, 4096, 128), r(8, 8, 4096, 128), 128 ** -0.5)),
        ("w4a16", k["quant_matmul"].w4a16_op, (r(16, 4096, dtype=torch.float16), w_packed, r(4096, 32, dtype=torch.float16), 128)),
    ]
    rows = []
    for name, op, args in (c for c in cases if not only or c[0] in only.split(",")):
        row = {"op": name}
        try:
            eager = op(*args)
            eager = eager if isinstance(eager, tuple) else (eager,)
            torch._dynamo.reset()
            rec = AotEagerAndRecordGraphs()
            got = torch.compile(lambda *a: op(*a), backend=rec, fullgraph=True)(*args)
            code = "\n".join(g.code for g in rec.fw_graphs)
            row["traced"] = "triton_kernel_wrapper" in code
            row["opaque"] = ".course" in code or "torch.ops.course" in code
            torch._dynamo.reset()
            f = torch.compile(lambda *a: op(*a), fullgraph=True)
            got = f(*args)
            got = got if isinstance(got, tuple) else (got,)
            row["inductor_equal"] = all(torch.equal(a, b) for a, b in zip(eager, got) if a.numel())
            row["inductor_max_diff"] = max(float((a.float() - b.float()).abs().max()) for a, b in zip(eager, got) if a.numel())
        except Exception as e:  # noqa: BLE001
            chain, seen = [], e
            while seen is not None and len(chain) < 6:
                chain.append(f"{type(seen).__name__}: {str(seen)[-1500:]}")
                seen = seen.__cause__ or seen.__context__
            row["error"] = "\n---\n".join(chain)
        rows.append(row)
        print("ops", json.dumps(row)[:400], flush=True)
    report["ops"] = rows

if "prefill" in parts:
    with torch.inference_mode():
        b = lbb.Bench(False, "solutions", run)
        res = {}
        sizes = os.environ.get("SIZES", "1x512,4x512,1x2048")
        for batch, seq in (tuple(map(int, size.split("x"))) for size in sizes.split(",")):
            x, _, _ = b.inputs(batch, seq, False)
            fns, errs = {}, {}
            for i, (name, switched, traced) in enumerate((("PyTorch", (), True), ("course, traced", lbb.ALL_BF16, True),
                                                          ("course, opaque", lbb.ALL_BF16, False))):
                ops = b.ops(switched)
                step = eval(compile("lambda x: block_forward(x, w, cfg, ops, rot)", f"<plan {batch} {seq} {i}>", "eval"),
                            {"block_forward": block_forward, "w": b.weights, "cfg": b.cfg, "ops": ops, "rot": b.rotary})
                f = torch.compile(step, dynamic=False, fullgraph=True)
                course.ops.trace_into_ops(traced)
                try:
                    errs[name] = b.error(x, f, False, limit=2e-2)  # compiles with the setting above
                finally:
                    course.ops.trace_into_ops(True)
                fns[name] = f
            t = timed(fns, x)
            for name, v in t.items():
                res[f"{batch}x{seq} {name}"] = {**v, "rel_err": errs[name]}
                print(f"prefill {batch}x{seq} {name:16s} host {v['host'][0]:7.1f} ({v['host'][1]:7.1f})  wall {v['wall'][0]:7.1f} ({v['wall'][1]:7.1f}) us  err {errs[name]:.1e}", flush=True)
        report["prefill"] = res

if "profile" in parts:
    from torch.profiler import ProfilerActivity, profile
    with torch.inference_mode():
        b = lbb.Bench(False, "solutions", run)
        size = os.environ.get("PROFILE_SIZE", "1x512")
        x, _, _ = b.inputs(*map(int, size.split("x")), False)
        prof_rows = {}
        for i, (name, switched) in enumerate((("PyTorch", ()), ("course, traced", lbb.ALL_BF16))):
            ops = b.ops(switched)
            step = eval(compile("lambda x: block_forward(x, w, cfg, ops, rot)", f"<prof {i}>", "eval"),
                        {"block_forward": block_forward, "w": b.weights, "cfg": b.cfg, "ops": ops, "rot": b.rotary})
            f = torch.compile(step, dynamic=False, fullgraph=True)
            for _ in range(5):
                f(x)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(20):
                    f(x)
                torch.cuda.synchronize()
            table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=70)
            kernels = prof.key_averages().table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=70)
            (out / f"profile_{size}_{i}.txt").write_text(table + "\n\n" + kernels)
            print(name); print(kernels[:7000], flush=True)

if "decode" in parts:
    with torch.inference_mode():
        b = lbb.Bench(False, "solutions", run)
        static = [b.rotary.cos, b.rotary.sin, b.rotary.cos_full, b.rotary.sin_full]
        for w in b.fused.values():
            static += [w.attn_norm, w.ffn_norm, *(t for lin in w.linears.values() for t in (lin.weight, lin.w_packed, lin.scales))]
        for t in static:
            if t is not None:
                torch._dynamo.mark_static_address(t)
        res = {}
        for batch in (1, 16):
            x, cache, start = b.inputs(batch, b.kv, True)
            for t in (cache.k, cache.v):
                torch._dynamo.mark_static_address(t)
            fns, errs = {}, {}
            for name, switched, traced in (("PyTorch", (lbb.FUSED,), True), ("course W4A16, traced", (*lbb.ALL_W4, lbb.FUSED), True),
                                           ("course W4A16, opaque", (*lbb.ALL_W4, lbb.FUSED), False)):
                f = lbb.WRAP["reduce-overhead, no trees"](b.block(switched, start, cache))
                course.ops.trace_into_ops(traced)
                try:
                    errs[name] = b.error(x, f, "w4a16" in switched, start, cache, limit=2e-2)
                    fns[name] = f
                except Exception as e:  # noqa: BLE001
                    print("decode", batch, name, "failed:", repr(e)[:800], flush=True)
                finally:
                    course.ops.trace_into_ops(True)
            t = timed(fns, x, steps=50)
            for name, v in t.items():
                res[f"{batch} {name}"] = {**v, "rel_err": errs[name]}
                print(f"decode b{batch} {name:22s} host {v['host'][0]:7.1f} ({v['host'][1]:7.1f})  wall {v['wall'][0]:7.1f} ({v['wall'][1]:7.1f}) us  err {errs[name]:.1e}", flush=True)
        report["decode"] = res

if "train" in parts:
    b = lbb.Bench(False, "solutions", run)
    cfg = b.cfg
    res = {}
    with torch.enable_grad():
        rotary, rotary32 = (rotary_tables(cfg, b.rotary.cos.shape[0], dt, b.device) for dt in (b.dtype, torch.float32))
        x = b.inputs(1, 2048, False)[0].clone()
        grad_out = b.randn(*x.shape, seed=5)
        leaves = trainable(x, b.weights)
        ref = train_step(trainable(x.float(), b.weights.to(torch.float32)), cfg, torch_ops(), rotary32, grad_out.float())
        fns = {}
        for i, (name, switched, traced) in enumerate((("PyTorch", (), True), ("course, traced", lbb.ALL_BF16, True),
                                                      ("course, opaque", lbb.ALL_BF16, False))):
            fwd = eval(compile("lambda *a, **k: block_forward(*a, **k)", f"<train {i}>", "eval"), {"block_forward": block_forward})
            forward = torch.compile(fwd, fullgraph=True, dynamic=False)
            ops = b.ops(switched)
            step = lambda _x, ops=ops, forward=forward: train_step(leaves, cfg, ops, rotary, grad_out, forward)
            course.ops.trace_into_ops(traced)
            try:
                grads = step(None)
            finally:
                course.ops.trace_into_ops(True)
            err = max(relative_error(grads[k], ref[k]) for k in ref)
            fns[name] = step
            res[name] = {"max_grad_rel_err": err}
        t = timed(fns, None, rounds=5, steps=3)
        for name, v in t.items():
            res[name].update(v)
            print(f"train 1x2048 {name:16s} wall {v['wall'][0]:9.1f} ({v['wall'][1]:9.1f}) us  grad err {res[name]['max_grad_rel_err']:.1e}", flush=True)
        report["train"] = res

(out / f"traced_ops_rows_{'_'.join(sorted(parts))}.json").write_text(json.dumps(report, indent=1))
