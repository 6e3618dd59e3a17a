"""Module 08's backward with its dK/dV programs sharing a GQA group (dkdv_split, as the table says) and with one
program per KV head (as before 2026-11-28), in turn in one process, beside SDPA's cuDNN backward.

    python results/provenance/flash_bwd_split_ab.py OUT

Timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of 20,
bf16, d = 128. Each variant's dq, dk, dv are first compared with float32 autograd through SDPA's math path."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

import torch  # noqa: E402
import triton  # noqa: E402

from autograder.portability import _load_solution  # noqa: E402
from autograder.timing import median, time_interleaved  # noqa: E402

SHAPES = [(1, 32, 8, 2048, True), (2, 32, 8, 2048, True), (4, 32, 8, 2048, True), (1, 32, 8, 4096, True),
          (1, 32, 8, 8192, True), (1, 32, 8, 1024, True), (1, 32, 8, 2048, False), (4, 32, 32, 2048, True),
          (4, 32, 32, 4096, False)]


def main(out: Path) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: PLC0415
    sol = _load_solution("flash_attention")
    shared = sol.dkdv_split
    dev = torch.device("cuda")
    rows = []
    for b, hq, hkv, s, causal in SHAPES:
        d, scale = 128, 128 ** -0.5
        g = torch.Generator(device="cpu").manual_seed(0)
        q, k, v, do = (torch.randn(shape, generator=g).to(dev, torch.bfloat16)
                       for shape in ((b, hq, s, d), (b, hkv, s, d), (b, hkv, s, d), (b, hq, s, d)))
        o, lse = sol.attention_forward(q, k, v, causal, scale, True)
        qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
        ref = torch.nn.functional.scaled_dot_product_attention(
            qf, kf.repeat_interleave(hq // hkv, 1), vf.repeat_interleave(hq // hkv, 1), is_causal=causal)
        ref.backward(do.float())
        want = (qf.grad, kf.grad, vf.grad)

        def run(split_rule):
            sol.dkdv_split = split_rule
            try:
                return sol.attention_backward(q, k, v, o, lse, do, causal, scale)
            finally:
                sol.dkdv_split = shared

        cfg = sol.backward_config(sol.device_of(q), q.dtype)
        n_split = shared(hq // hkv, triton.cdiv(s, cfg.dkdv_block_n) * b * hkv, causal, sol.device_of(q).sms,
                         cfg.dkdv_programs_per_sm)
        fns = {"shared": lambda i: run(shared), "one program": lambda i: run(lambda *a: 1)}
        errs = {name: [float((x.float() - y).abs().max() / y.abs().max()) for x, y in zip(fn(0), want)]
                for name, fn in fns.items()}
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            res = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, enable_gqa=hq != hkv)
        fns["SDPA cuDNN"] = lambda i: torch.autograd.grad(res, (qg, kg, vg), do, retain_graph=True)
        times = {name: median(ts) * 1e3 for name, ts in time_interleaved(fns, 1, 20, dev).items()}
        row = {"shape": f"{b}x{hq}/{hkv}x{s}x{d}", "causal": causal, "split": n_split, "us": times, "errors": errs}
        rows.append(row)
        print(row, flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": __import__("datetime").date.today().isoformat(),
            "table": sol.backward_config(sol.device_of(q), torch.bfloat16).__dict__}
    (out / "flash_bwd_split_ab.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"Measured on {meta['gpu']} ({meta['date']}; torch {meta['torch']}, triton {meta['triton']}), "
             "`python results/provenance/flash_bwd_split_ab.py OUT`. Backward, bf16, d = 128, the grader's timer "
             "(L2 flushed), median of 20, µs.", "",
             "| B x Hq/Hkv x S | causal | programs per KV head's group | one program | shared | cuDNN "
             "| shared vs one | shared vs cuDNN |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        t = r["us"]
        lines.append(f"| {r['shape']} | {r['causal']} | {r['split']} | {t['one program']:.1f} | {t['shared']:.1f} | "
                     f"{t['SDPA cuDNN']:.1f} | {t['one program'] / t['shared']:.2f}x | "
                     f"{t['SDPA cuDNN'] / t['shared']:.2f}x |")
    (out / "flash_bwd_split_ab.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    main(target)
