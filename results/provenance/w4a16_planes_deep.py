"""W4A16 planes with deeper products: BLOCK_K = 256 (each plane's dot 32 deep, half the MMA waits per weight),
which with groups of 128 puts two groups in a step, so each word is scaled before its dot (the kernel's path for
several groups per step). The committed solution's kernel, settings from launch arguments only; against its
own choice (pick_config). Outputs checked against a float64 product; the grader's timer, medians of 20.

    python results/provenance/w4a16_planes_deep.py OUT"""
import itertools, json, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
import torch.nn.functional as F
from autograder.timing import median, time_interleaved
from course.loader import load_kernels
from course.results import run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
qm = load_kernels("quant_matmul", "solutions")
DC = qm.DotConfig
dev = torch.device("cuda")
rows = []
for m, k, n in [(m, k, n) for m in (4, 16, 32, 64) for k, n in ((4096, 14336), (14336, 4096), (4096, 4096))]:
    torch.manual_seed(0)
    x = torch.randn(m, k, dtype=torch.float16, device=dev)
    w_packed = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
    words = w_packed.view(torch.int32)
    scales = (torch.rand(n, k // 128, device=dev) * 0.01 + 0.001).half()
    q = torch.stack((w_packed & 15, w_packed >> 4), dim=-1).reshape(n, k).double() - 8
    exact = x.double() @ (q * scales.double().repeat_interleave(128, dim=1)).T
    size = exact.abs().mean().item()
    bm = max(16, 1 << (m - 1).bit_length())
    cands = {"picked": qm.pick_config(4, m, x)}
    for bn, w, st, pps in itertools.product((64, 128), (4, 8), (2, 3), (1, 2)):
        cands[f"deep n{bn} w{w} s{st} p{pps}"] = DC(bn, bm, 256, w, st, pps, True, True)
    fns, errors = {}, {}
    for label, c in cands.items():
        try:
            got = qm.w4a16_launch(x, words, scales, 128, c); torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            errors[label] = repr(e)[:120]; continue
        errors[label] = float((got.double() - exact).abs().max()) / size
        if errors[label] > 0.05:
            print("wrong", m, k, n, label, errors[label], flush=True); continue
        fns[label] = lambda i, c=c: qm.w4a16_launch(x, words, scales, 128, c)
    times = time_interleaved(fns, 1, 20, dev)
    us = {lab: median(t) * 1e3 for lab, t in times.items()}
    best = min((t, lab) for lab, t in us.items() if lab != "picked")
    rows.append({"M": m, "K": k, "N": n, "us": us, "errors": errors, "picked": str(cands["picked"])})
    print(f"{m}x{k}x{n}: picked {us['picked']:.1f} us, best deep {best[0]:.1f} ({best[1]})", flush=True)
    (out / "w4a16_planes_deep.json").write_text(json.dumps({"meta": run_meta("w4a16_planes_deep"), "rows": rows}, indent=1))
