"""Issue 22 (W4A16 at M = 2..64) and issue 20 (decode at batch 4..16): where the dot kernel's time goes.

Compiled for sm_90 (triton 3.6), the solution's `_w4a16_dot_kernel` decodes a (64, 128) tile in a blocked
layout, re-interleaves it into k order (`_planes_to_k`), and then stores it to shared memory and loads it back
in the wgmma operand layout: 16 KB through shared memory per step, which Nsight Compute shows as the L1/shared
pipe 78% busy with DRAM 16% busy (results/h200/ncu_w4a16/m16_4096x14336.txt).

The variants (`w4a16_planes_kernel.py`) never re-interleave: plane i (nibble i of every word, k = 8j + i) is its
own 64 x 16 operand, and it meets the activations x[8j + i]. Because a plane is elementwise in the words, Triton
loads the words from shared memory straight into the operand layout and decodes them there (no round trip):

- "planes": x[8j + i] loaded per plane (strided, from cache), one scale per row applied after the step's 8 dots;
- "planes xsplit": x loaded once per step in k order and split into its 8 planes in registers;
- "planes scale-in": the scale multiplied into each weight before its dot (any group size);
- the settings: channels per program 32 (two warps: mma.sync) or 64 (four warps: wgmma), programs per SM.

Every output is checked against a float64 product of the dequantized weights; times use the grader's timer
(flush, interleaved, medians of 20), fp16 and bf16, M = 1..64 on the three Llama-3-8B shapes.

Two runs (results/h200/w4a16_planes.md): the first with VARIANTS = {"planes": SCALE_AFTER, "planes xsplit":
SCALE_AFTER + XSPLIT, "planes scale-in": not SCALE_AFTER} over OLD_SETTINGS (w4a16_planes_probe_first.json), the
second as this file stands, x split against x permuted by the launcher (XPERM), over SETTINGS.

    python results/provenance/w4a16_planes_probe.py OUT"""
import itertools, json, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path(__file__).parent))
import torch
import torch.nn.functional as F
from autograder.timing import median, time_interleaved
from course.launch import cdiv
from course.device import device_of
from course.loader import load_kernels
from course.results import run_meta
from w4a16_planes_kernel import planes_dot_kernel

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
qm = load_kernels("quant_matmul", "solutions")
dev = torch.device("cuda")
VARIANTS = {"planes xsplit": dict(SCALE_AFTER=True, XSPLIT=True), "planes xperm": dict(SCALE_AFTER=True, XPERM=True)}
SETTINGS = [(bn, w, st, pps) for bn, w in ((64, 4), (128, 4), (128, 8), (256, 8)) for st in (2, 3, 4) for pps in (1, 2, 4, 6)]
OLD_SETTINGS = [(bn, w, st, pps) for bn, w in ((32, 2), (64, 4)) for st in (2, 3) for pps in (2, 4, 8)] + [(128, 4, 3, 4), (64, 8, 3, 4)]


def launcher(extra, bn, bw, warps, stages, pps, x, words, scales):
    (m, k), n = x.shape, words.shape[0]
    bm = max(16, min(64, triton_next_pow2(m)))
    tiles = cdiv(n, bn) * cdiv(m, bm)
    splits, k_split = qm._split_k(tiles, k, 8 * bw, pps, device_of(x))
    perm = extra.get("XPERM", False)
    def call():
        xx = x.view(m, k // (8 * bw), bw, 8).transpose(2, 3).reshape(m, k) if perm else x  # one copy a call
        y = x.new_empty((m, n))
        part, locks = qm._split_buffers(splits, tiles, x, m, n)
        planes_dot_kernel[(cdiv(n, bn), splits, cdiv(m, bm))](
            xx, words, scales, y, part, locks, m, n, k, x.stride(0), words.stride(0), scales.stride(0), n, k_split,
            GROUP_SIZE=128, BLOCK_N=bn, BLOCK_M=bm, BLOCK_W=bw, EVEN_K=k % (8 * bw) == 0, SPLIT=splits > 1,
            num_warps=warps, num_stages=stages, **extra)
        return y
    return call


def triton_next_pow2(v: int) -> int:
    return 1 << (v - 1).bit_length()


rows = []
summary = []
shapes = [(m, 4096, 14336) for m in (1, 2, 4, 8, 16, 32, 64)] + [(m, 14336, 4096) for m in (4, 16)] + [(m, 4096, 4096) for m in (4, 16)]
for dt in (torch.float16, torch.bfloat16):
    for m, k, n in shapes:
        if dt == torch.bfloat16 and (m, k, n) not in ((16, 4096, 14336), (4, 4096, 14336), (16, 4096, 4096)):
            continue
        torch.manual_seed(0)
        x = torch.randn(m, k, dtype=dt, device=dev)
        w_packed = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
        words = w_packed.view(torch.int32)
        scales = (torch.rand(n, k // 128, device=dev) * 0.01 + 0.001).to(dt)
        dense = torch.randn(n, k, dtype=dt, device=dev)
        q = torch.stack((w_packed & 15, w_packed >> 4), dim=-1).reshape(n, k).double() - 8
        exact = x.double() @ (q * scales.double().repeat_interleave(128, dim=1)).T
        scale = exact.abs().mean().item()
        sol = lambda i: qm.w4a16_matmul(x, w_packed, scales, 128)
        sol_err = float((sol(0).double() - exact).abs().max()) / scale
        fns = {"solution": sol, "cuBLAS": lambda i: F.linear(x, dense)}
        errors = {}
        for (name, extra), (bn, warps, st, pps) in itertools.product(VARIANTS.items(), SETTINGS):
            label = f"{name} n{bn} w{warps} s{st} p{pps}"
            f = launcher(extra, bn, 16, warps, st, pps, x, words, scales)
            try:
                got = f(); torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                errors[label] = repr(e)[:160]
                continue
            err = float((got.double() - exact).abs().max()) / scale
            errors[label] = err
            if err > max(4 * sol_err, 1e-2):
                print("wrong", m, k, n, label, err, sol_err, flush=True)
                continue
            fns[label] = lambda i, f=f: f()
        times = time_interleaved(fns, 1, 20, dev)
        res = {"shape": f"{m}x{k}x{n}", "dtype": str(dt)[6:], "solution_error": sol_err, "errors": errors,
               "us": {lab: median(t) * 1e3 for lab, t in times.items()}}
        rows.append(res)
        us = res["us"]
        best = {}
        for lab, t in us.items():
            kind = lab.split(" n")[0]
            if kind not in best or t < best[kind][1]:
                best[kind] = (lab, t)
        line = {"shape": res["shape"], "dtype": res["dtype"], **{kind: [round(t, 2), lab] for kind, (lab, t) in best.items()}}
        summary.append(line)
        print(json.dumps(line), flush=True)
        (out / "w4a16_planes_probe.json").write_text(json.dumps({"meta": run_meta("w4a16_planes_probe"), "rows": rows, "summary": summary}, indent=1))
(out / "w4a16_planes_probe.json").write_text(json.dumps({"meta": run_meta("w4a16_planes_probe"), "rows": rows, "summary": summary}, indent=1))
print("\n| shape | dtype | solution | cuBLAS | xsplit | xperm (with its copy) | best setting |")
for s in summary:
    g = lambda k: s.get(k, [None])[0]
    b = min((s[k] for k in VARIANTS if k in s), key=lambda v: v[0], default=[None, ""])
    print(f"| {s['shape']} | {s['dtype']} | {g('solution')} | {g('cuBLAS')} | {g('planes xsplit')} | {g('planes xperm')} | {b[1]} |")
