"""Flash attention forward with Hopper warp specialisation (issue 22), beside the solution and SDPA's cuDNN backend.

    python results/provenance/flash_ws_probe.py --ptx    # on the CPU: sm_90 compilations, warps, registers, smem
    python results/provenance/flash_ws_probe.py OUT      # on a GPU: every variant checked, then timed
    python results/provenance/flash_ws_probe.py --table RUN.json [RUN.json ...]   # the runs' page, beside the first

The kernel is in flash_ws_kernel.py. With `warp_specialize=True` and 4 warps, Triton 3.6 and 3.7 split a program
into a producer warp group (the TMA loads, 40 registers a thread) and two consumer warp groups of 64 query rows
each (232 registers): 12 warps, FlashAttention-3's layout. With 8 warps the flag changes nothing. Causal ranges
are one loop (every block masked), since two warp-specialised loops in a row fail to compile in Triton 3.6.

Timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of 20,
bf16, d = 128. Every variant's whole output is compared with cuDNN's, and its first four heads with float32 SDPA."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

if "--ptx" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import triton  # noqa: E402

from flash_ws_kernel import ws_fwd_kernel  # noqa: E402

LOG2E = 1.4426950408889634
# (BLOCK_M, BLOCK_N, warps, stages, warp specialised, causal as one loop (1: every block masked; 2, a branch that
# masks from the diagonal on, compiles without warp specialisation), host-made descriptors). Non-causal, ONE_LOOP
# changes nothing; causal, a warp-specialised variant must take one loop.
# The last field, "qo": Q loaded and O stored through pointers, as the solution does, K and V through device-made
# descriptors. Warp specialised, that does not compile in Triton 3.6 or 3.7 (--ptx), nor do host-made descriptors
# (they ran on the H100 and failed to compile there).
PLAIN = [(128, 128, 8, 3, False, 0, False, False), (128, 128, 8, 3, False, 0, True, False)]
VARIANTS = {False: PLAIN + [(128, 128, 4, 2, True, 0, False, False), (128, 64, 4, 2, True, 0, False, False),
                            (128, 128, 4, 2, True, 0, True, False), (128, 64, 4, 3, True, 0, True, False)],
            True: PLAIN + [(128, 128, 4, 2, True, 1, False, False), (128, 128, 4, 2, True, 1, True, False),
                           (128, 64, 4, 2, True, 1, True, False), (128, 128, 8, 3, False, 1, True, False)]}
PTX_ONLY = {False: [(128, 128, 4, 2, True, 0, False, True)], True: [(128, 128, 4, 2, True, 1, False, True)]}


def ws_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, bm: int, bn: int, warps: int,
               stages: int, ws: bool, one_loop: bool, host: bool, qo: bool) -> torch.Tensor:
    b, hq, s, d = q.shape
    hkv = k.shape[1]
    assert s % bm == 0, "the probe's lengths are multiples of BLOCK_M"
    o = torch.empty_like(q)
    args = (q, k, v, o)
    if host:
        from triton.tools.tensor_descriptor import TensorDescriptor

        args = (
            TensorDescriptor(q, shape=[q.numel() // d, d], strides=[d, 1], block_shape=[bm, d]),
            TensorDescriptor(k, shape=[k.numel() // d, d], strides=[d, 1], block_shape=[bn, d]),
            TensorDescriptor(v, shape=[v.numel() // d, d], strides=[d, 1], block_shape=[bn, d]),
            TensorDescriptor(o, shape=[o.numel() // d, d], strides=[d, 1], block_shape=[bm, d]))
    ws_fwd_kernel[(s // bm, b * hq)](*args, s, hq, hq // hkv, b * hq * s, b * hkv * s, d ** -0.5 * LOG2E,
                                     HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, WS=ws, ONE_LOOP=one_loop,
                                     HOST_DESC=host, QO_POINTERS=qo, num_warps=warps, num_stages=stages)
    return o


def label(v: tuple) -> str:
    bm, bn, w, st, ws, one, host, qo = v
    return f"{'ws' if ws else 'plain'} {'host' if host else 'device'}{' qo' if qo else ''} {bm}x{bn} w{w} s{st}{f' loop{one}' if one else ''}"


def ptx() -> None:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from autograder.diagnose import resource_usage

    sig = {n: "*bf16" for n in ("q_ptr", "k_ptr", "v_ptr", "o_ptr")}
    sig.update({n: "i32" for n in ("seqlen", "n_heads_q", "group", "rows_q", "rows_kv")})
    sig.update(qk_scale="fp32", **{n: "constexpr" for n in ("HEAD_DIM", "BLOCK_M", "BLOCK_N", "CAUSAL", "WS", "ONE_LOOP", "HOST_DESC", "QO_POINTERS")})
    for causal in (False, True):
        for v in VARIANTS[causal] + PTX_ONLY[causal]:
            bm, bn, w, st, ws, one, host, qo = v
            ce = dict(HEAD_DIM=128, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, WS=ws, ONE_LOOP=one, HOST_DESC=host,
                      QO_POINTERS=qo)
            if host:
                continue  # a host descriptor's signature ("tensordesc<...>") is left to the GPU run
            try:
                k = triton.compile(ASTSource(ws_fwd_kernel, sig, ce, {}), target=GPUTarget("cuda", 90, 32),
                                   options={"num_warps": w, "num_stages": st})
            except Exception as e:  # noqa: BLE001 - a variant that does not compile is the finding
                print(f"{label(v)} causal={causal}: does not compile ({str(e).strip().splitlines()[-1][:100]})")
                continue
            regs = sorted({int(r) for r in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", k.asm["ptx"])})
            use = resource_usage(k.asm["cubin"])
            print(f"{label(v)} causal={causal}: {k.metadata.num_warps} warps, setmaxnreg {regs}, {use['REG']} registers, "
                  f"stack {use.get('STACK', 0)} B, smem {k.metadata.shared} B")


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(group, dim=1) for t in (k, v))
    return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)


def gpu(out: Path) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from autograder.timing import median, time_interleaved
    from course.results import run_meta
    from solutions.flash_attention import kernels as fa

    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=dev))
    shapes = [(4, 32, 32, s) for s in (512, 1024, 2048, 4096, 8192, 16384)] + [(1, 32, 8, s) for s in (512, 2048, 4096)]
    rows = []
    for b, hq, hkv, s in shapes:
        for causal in (False, True):
            torch.manual_seed(s + causal)
            q = torch.randn(b, hq, s, 128, device=dev, dtype=torch.bfloat16)
            k, v = (torch.randn(b, hkv, s, 128, device=dev, dtype=torch.bfloat16) for _ in range(2))
            group = hq // hkv
            exact = reference(q[:1, :4], k[:1, : -(-4 // group)], v[:1, : -(-4 // group)], causal)

            def cudnn(i: int) -> torch.Tensor:
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                            enable_gqa=hq != hkv)

            fns = {"cudnn": cudnn, "solution": lambda i: fa.flash_attention(q, k, v, causal=causal)}
            for var in VARIANTS[causal]:
                fns[label(var)] = lambda i, var=var: ws_forward(q, k, v, causal, *var)
            theirs = cudnn(0)
            errors, good = {}, {}
            for lab, fn in fns.items():
                try:
                    got = fn(0)
                    torch.cuda.synchronize()
                    errors[lab] = max((got[:1, :4].float() - exact).abs().max().item(),
                                      (got.float() - theirs.float()).abs().max().item())
                except Exception as e:  # noqa: BLE001 - a setting that does not run is recorded, not fatal
                    errors[lab] = repr(e)[:160]
                    print("failed", b, hq, hkv, s, causal, lab, errors[lab], flush=True)
                    continue
                if errors[lab] < 0.03:
                    good[lab] = fn
                else:
                    print("wrong", b, hq, hkv, s, causal, lab, errors[lab], flush=True)
            del theirs
            times = time_interleaved(good, 1, 20, dev)
            us = {lab: median(t) * 1e3 for lab, t in times.items()}
            flops = 4 * b * hq * s * s * 128 / (2 if causal else 1)
            rows.append({"B": b, "Hq": hq, "Hkv": hkv, "S": s, "causal": causal, "us": us, "errors": errors,
                         "tflops": {lab: flops / t / 1e6 for lab, t in us.items()}})
            best = min((t, lab) for lab, t in us.items() if lab not in ("cudnn", "solution"))
            print(f"{b}x{hq}/{hkv}x{s} causal={causal}: cudnn {us['cudnn']:.1f} us, solution {us['solution']:.1f} "
                  f"({us['cudnn'] / us['solution']:.3f}x), best {best[1]} {best[0]:.1f} ({us['cudnn'] / best[0]:.3f}x)",
                  flush=True)
            (out / "flash_ws_probe.json").write_text(json.dumps({"meta": run_meta("flash_ws_probe"), "rows": rows},
                                                                indent=1))
            del q, k, v, exact
    labels = list(rows[0]["us"]) + [x for x in rows[1]["us"] if x not in rows[0]["us"]]
    print("\nvs cuDNN (higher is faster):")
    print("shape causal " + " | ".join(labels))
    for r in rows:
        print(f"{r['B']}x{r['Hq']}/{r['Hkv']}x{r['S']} {int(r['causal'])} "
              + " | ".join(f"{r['us']['cudnn'] / r['us'][x]:.3f}" if x in r["us"] else "-" for x in labels))


def table(runs: list[Path]) -> None:
    """One page for one or more runs of the same variants: each variant's ratio to cuDNN (cuDNN's time over its
    own, higher is faster), runs separated by a slash, and the solution's and cuDNN's TFLOP/s in the first run."""
    data = [json.loads(p.read_text()) for p in runs]
    meta = data[0]["meta"]
    labels: list[str] = []
    for r in data[0]["rows"]:
        labels += [lab for lab in r["us"] if lab not in labels and lab != "cudnn"]
    lines = [f"# Flash attention forward with warp specialisation: {meta['gpu']}, torch {meta['torch']}, "
             f"triton {meta['triton']}, {meta['date']}", "",
             f"`python results/provenance/flash_ws_probe.py OUT`, {len(runs)} run(s) ({', '.join(p.name for p in runs)}); "
             "this page: `--table`. bf16, d = 128. Each cell: cuDNN's time over the variant's (higher is faster), one "
             "value per run. ws: `tl.range(..., warp_specialize=True)` at 4 warps (a producer warp group and two "
             "consumer warp groups of 64 rows, 12 warps); plain: the same kernel without it at 8 warps; device / host: "
             "descriptors made by `tl.make_tensor_descriptor` or by the host; loop1: causal as one loop, every block "
             "masked. A variant missing from a row did not compile there (host descriptors with warp specialisation).",
             "", "| B x Hq/Hkv x S | causal | cuDNN TFLOP/s | solution TFLOP/s | " + " | ".join(labels) + " |",
             "|---|---|---:|---:|" + "---:|" * len(labels)]
    for i, r in enumerate(data[0]["rows"]):
        others = [d["rows"][i] for d in data]
        cells = []
        for lab in labels:
            got = [o["us"]["cudnn"] / o["us"][lab] for o in others if lab in o["us"]]
            cells.append(" / ".join(f"{g:.2f}" for g in got) if got else "-")
        lines.append(f"| {r['B']}x{r['Hq']}/{r['Hkv']}x{r['S']} | {'yes' if r['causal'] else 'no'} | "
                     f"{r['tflops']['cudnn']:.0f} | {r['tflops']['solution']:.0f} | " + " | ".join(cells) + " |")
    out = runs[0].with_suffix(".md")
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if "--table" in sys.argv:
        table([Path(a) for a in sys.argv[sys.argv.index("--table") + 1:]])
    elif "--ptx" in sys.argv:
        ptx()
    else:
        gpu(Path(sys.argv[1]))
