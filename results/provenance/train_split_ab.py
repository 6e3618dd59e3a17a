"""The training step (forward + backward, batch x 2048 tokens, issue 20) with module 08's dK/dV programs sharing a
GQA group (dkdv_split, the table's dkdv_programs_per_sm) and without (one program per KV head, as before), in turn
in one process, beside the PyTorch block eager and under torch.compile. Each is checked against float32 gradients.

    python results/provenance/train_split_ab.py OUT [BATCH ...]       (ROUNDS=n in the environment: rounds, 2 by default)"""
import os
import sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd())); sys.path.insert(0, str(Path.cwd() / "scripts"))
import torch
import llama_block_bench as lbb
from course.llama import block_forward, relative_error, rotary_tables, torch_ops, train_step, trainable
from course.results import Sections, run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
batches = [int(b) for b in sys.argv[2:]] or [1, 4]
run = Sections(out / "train_split_ab.json", run_meta("train_split_ab " + " ".join(sys.argv[2:])), budget_s=500)
torch._dynamo.config.cache_size_limit = 64
b = lbb.Bench(False, "solutions", run)
cfg = b.cfg
ROUNDS = int(os.environ.get("ROUNDS", "2"))
flash = b.kernels["flash_attention"]
shared = flash.dkdv_split


def one_program(group: int, programs: int, causal: bool, sms: int, programs_per_sm: int) -> int:
    return 1


def batch_rows(batch: int, seq: int = 2048) -> list[dict]:
    rows = []
    with torch.inference_mode(False), torch.enable_grad():
        rotary, rotary32 = (rotary_tables(cfg, b.rotary.cos.shape[0], dt, b.device) for dt in (b.dtype, torch.float32))
        x = b.inputs(batch, seq, False)[0].clone()
        grad_out = b.randn(*x.shape, seed=5)
        leaves = trainable(x, b.weights)
        ref = train_step(trainable(x.float(), b.weights.to(torch.float32)), cfg, torch_ops(), rotary32, grad_out.float())
        compiled = torch.compile(block_forward, fullgraph=True)
        for rnd in range(ROUNDS):
            for name, switched, forward, split in [("compile", (), compiled, None),
                                                   ("course compile, shared", lbb.ALL_BF16, compiled, shared),
                                                   ("course compile, one program", lbb.ALL_BF16, compiled, one_program),
                                                   ("course, shared", lbb.ALL_BF16, None, shared),
                                                   ("course, one program", lbb.ALL_BF16, None, one_program)]:
                if split is not None:
                    flash.dkdv_split = split
                try:
                    ops = b.ops(switched)
                    step = lambda ops=ops, forward=forward: train_step(leaves, cfg, ops, rotary, grad_out, forward)  # noqa: E731
                    grads = step()
                    err = max(relative_error(grads[k], ref[k]) for k in ref)
                    assert err < 5e-2, f"a gradient's relative error is {err:.3g}"
                    ms = b.ms(step, calls=3, reps=7)
                except Exception as e:  # noqa: BLE001
                    run.error(batch=batch, impl=name, error=repr(e)[:400]); continue
                finally:
                    flash.dkdv_split = shared
                rows.append({"batch": batch, "seq": seq, "round": rnd, "impl": name, "ms": ms, "max_grad_rel_err": err})
                print(f"train B={batch} round {rnd} {name:30s} {ms:8.3f} ms  max gradient error {err:.1e}", flush=True)
    return rows


for batch in batches:
    run.run(f"batch_{batch}", lambda batch=batch: batch_rows(batch), need_s=120)
names = ["compile", "course compile, shared", "course compile, one program", "course, shared", "course, one program"]
print("\n| batch | round | " + " | ".join(names) + " |\n|---:|---:|" + "---:|" * len(names))
for batch in batches:
    got = run.results.get(f"batch_{batch}") or []
    for rnd in range(ROUNDS):
        ms = {r["impl"]: r["ms"] for r in got if r["round"] == rnd}
        print(f"| {batch} | {rnd} | " + " | ".join(f"{ms[n]:.3f}" if n in ms else "-" for n in names) + " |")
