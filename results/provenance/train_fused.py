"""The training step (forward + backward, batch x 2048 tokens) with separate and fused projections (issue 20): the
PyTorch block and the course block (its backward kernels; cuBLAS projections), eager and under torch.compile, each
checked against float32 gradients of the same weights. Each batch is a section, so a run cut short keeps what finished.

    python results/provenance/train_fused.py OUT [BATCH ...]"""
import sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import llama_block_bench as lbb
from course.llama import block_forward, fuse_projections, relative_error, rotary_tables, torch_ops, train_step, trainable
from course.results import Sections, run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
batches = [int(b) for b in sys.argv[2:]] or [1, 4]
run = Sections(out / "train_fused.json", run_meta("train_fused " + " ".join(sys.argv[2:])), budget_s=500)
torch._dynamo.config.cache_size_limit = 64
b = lbb.Bench(False, "solutions", run)
cfg = b.cfg


def batch_rows(batch: int, seq: int = 2048) -> list[dict]:
    rows = []
    with torch.inference_mode(False), torch.enable_grad():
        rotary, rotary32 = (rotary_tables(cfg, b.rotary.cos.shape[0], dt, b.device) for dt in (b.dtype, torch.float32))
        x = b.inputs(batch, seq, False)[0].clone()
        grad_out = b.randn(*x.shape, seed=5)
        for fused in (False, True):
            weights = fuse_projections(b.weights) if fused else b.weights
            leaves = trainable(x, weights)
            ref = train_step(trainable(x.float(), weights.to(torch.float32)), cfg, torch_ops(), rotary32, grad_out.float())
            for name, switched, compiled in [("eager autograd", (), False), ("course", lbb.ALL_BF16, False),
                                             ("compile", (), True), ("course compile", lbb.ALL_BF16, True)]:
                name = f"{name}, fused" if fused else name
                try:
                    forward = torch.compile(block_forward, fullgraph=True) if compiled else None
                    ops = b.ops(switched)
                    step = lambda ops=ops, forward=forward: train_step(leaves, cfg, ops, rotary, grad_out, forward)  # noqa: E731
                    grads = step()
                    err = max(relative_error(grads[k], ref[k]) for k in ref)
                    assert err < 5e-2, f"a gradient's relative error is {err:.3g}"
                    ms = b.ms(step, calls=3, reps=7)
                except Exception as e:  # noqa: BLE001
                    run.error(batch=batch, impl=name, error=repr(e)[:400]); continue
                rows.append({"batch": batch, "seq": seq, "impl": name, "ms": ms, "max_grad_rel_err": err})
                print(f"train B={batch} {name:28s} {ms:8.3f} ms  max gradient error {err:.1e}", flush=True)
    return rows


for batch in batches:
    run.run(f"batch_{batch}", lambda batch=batch: batch_rows(batch), need_s=90)
names = ["eager autograd", "course", "compile", "course compile"]
print("\n| batch | " + " | ".join(names + [n + ", fused" for n in names]) + " |\n|---:|" + "---:|" * 8)
for batch in batches:
    got = {r["impl"]: r["ms"] for r in run.results.get(f"batch_{batch}") or []}
    print(f"| {batch} | " + " | ".join(f"{got[n]:.2f}" if n in got else "-" for n in names + [n + ", fused" for n in names]) + " |")
