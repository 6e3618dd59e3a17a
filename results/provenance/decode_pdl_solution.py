"""Decode attention (issue 22): the solution's own decode, whose combine kernel is a programmatic dependent launch
on Hopper and newer, against the same call with that launch turned off (`Device.dependent_launch` patched to
False, so the combine is launched plainly and its `AFTER_SPLIT` wait compiled out), and SDPA. Outputs are
compared bitwise. Then the same decode captured in a CUDA graph, as module 10's decode step is: the replay
must give the eager call's output, and is timed both ways too.

    python results/provenance/decode_pdl_solution.py OUT"""
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
from autograder.timing import median, time_interleaved
from course.device import Device
from course.loader import load_kernels
from course.results import run_meta

fa = load_kernels("flash_attention", "solutions")
hopper = Device.dependent_launch
flag = {"on": True}
Device.dependent_launch = property(lambda self: flag["on"] and hopper.fget(self))


def call(q, k, v, pdl: bool):
    flag["on"] = pdl
    try:
        return fa.flash_attention(q, k, v)
    finally:
        flag["on"] = True


def graphed(q, k, v, pdl: bool):
    """The decode captured once in a CUDA graph; returns (replay, its output tensor)."""
    for _ in range(3):
        call(q, k, v, pdl)  # compile and warm outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = call(q, k, v, pdl)
    return graph.replay, out


out_dir = Path(sys.argv[1]); out_dir.mkdir(parents=True, exist_ok=True)
dev = torch.device("cuda")
rows = []
for batch, sk in ((8, 1024), (8, 4096), (8, 16384), (1, 4096)):
    torch.manual_seed(sk + batch)
    q = torch.randn(batch, 32, 1, 128, device=dev, dtype=torch.bfloat16)
    k, v = (torch.randn(batch, 8, sk, 128, device=dev, dtype=torch.bfloat16) for _ in range(2))
    eager = call(q, k, v, False)
    pdl = call(q, k, v, True)
    replay_pdl, graph_out_pdl = graphed(q, k, v, True)
    replay_off, graph_out_off = graphed(q, k, v, False)
    replay_pdl(); replay_off(); torch.cuda.synchronize()
    equal = {"PDL eager": bool(torch.equal(pdl, eager)), "PDL graph": bool(torch.equal(graph_out_pdl, eager)),
             "graph without": bool(torch.equal(graph_out_off, eager))}
    fns = {
        "solution (PDL)": lambda i: call(q, k, v, True),
        "without PDL": lambda i: call(q, k, v, False),
        "graph, PDL": lambda i: replay_pdl(),
        "graph, without": lambda i: replay_off(),
        "SDPA": lambda i: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
    }
    times = time_interleaved(fns, 1, 50, dev)
    us = {lab: median(t) * 1e3 for lab, t in times.items()}
    gb = 2 * batch * 8 * sk * 128 * 2 / 1e9
    rows.append({"B": batch, "Sk": sk, "us": us, "bitwise_equal": equal, "kv_gb": gb})
    print(f"{batch}x{sk}: " + ", ".join(f"{lab} {t:.1f}" for lab, t in us.items()) + f" us; equal {equal}", flush=True)
(out_dir / "decode_pdl_solution.json").write_text(json.dumps({"meta": run_meta("decode_pdl_solution"), "rows": rows},
                                                             indent=1))
print("| B x keys | solution (PDL), us | without PDL | graph PDL | graph without | SDPA | K+V read at PDL |")
print("|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    u = r["us"]
    print(f"| {r['B']}x{r['Sk']} | {u['solution (PDL)']:.1f} | {u['without PDL']:.1f} | {u['graph, PDL']:.1f} | "
          f"{u['graph, without']:.1f} | {u['SDPA']:.1f} | {r['kv_gb'] / (u['solution (PDL)'] * 1e-6):.0f} GB/s |")
