"""Write results/h200/traced_ops.md from the rows of results/provenance/traced_ops.py (issue 20).

    python results/provenance/traced_ops_table.py results/h200"""
import json, sys
from pathlib import Path

folder = Path(sys.argv[1])
rows = json.loads((folder / "traced_ops_rows.json").read_text())
earlier = json.loads((folder / "traced_ops_rows_eps_refused.json").read_text())  # the run before RMSNorm's eps was cast
old = json.loads((folder / "traced_ops_float64_rows.json").read_text())
m = rows["meta"]
lines = [f"# torch.compile tracing into the course's ops: {m['gpu']}, torch {m['torch']}, triton {m['triton']}, {m['date']}", "",
         "Written by `results/provenance/traced_ops_table.py` from `traced_ops_rows.json` (`results/provenance/traced_ops.py`, one run), "
         "`traced_ops_rows_eps_refused.json` (the run before RMSNorm's kernel cast `eps` to float32, when its forward op stayed opaque) "
         "and `traced_ops_float64_rows.json` (the runs before float arguments were refused). Traced: AOTAutograd ran the op's "
         "launcher on the trace's tensors and recorded its kernels (course/ops.py), so Inductor launches them itself. Opaque: the op "
         "is one node, called through the dispatcher (`course.ops.trace_into_ops(False)`, or an op that cannot be traced).", "",
         "## Each op compiled alone (fullgraph=True), bf16 (W4A16 fp16)", "",
         "| op | traced | Inductor's output equals the eager call's |", "|---|---|---|"]
why = {"attention_forward": "opaque: TMA descriptors, and the scale is a float",
       "attention_decode": "opaque: the scale is a float", "attention_decode 4096": "opaque: the scale is a float",
       "attention_backward": "opaque: the scale is a float", "w4a16": "opaque: traced=False (split-K counters kept between calls)"}
for r in rows["ops"]:
    lines.append(f"| {r['op']} | {'yes' if r['traced'] else why.get(r['op'], 'no')} | {'bitwise' if r.get('inductor_equal') else r.get('error', 'no')} |")
lines += ["", "## The module 10 block compiled (dynamic=False), prefill, bf16 projections by cuBLAS", "",
          "5 rounds in turn of 20 queued steps; best (median) microseconds per step. The 1 x 512 size was measured twice, first and "
          "last; the last is shown. The two runs were made an hour apart on the same kind of machine; the H200's host moves their "
          "absolute times (PyTorch's 4x512 host time: 359 and 580 us), so compare within a run.", "",
          "| size | block | host | wall | wall vs PyTorch | the run before: wall vs PyTorch |", "|---|---|---:|---:|---:|---:|"]
for key, v in rows["prefill"].items():
    size, name = key.split(" ", 1)
    base = rows["prefill"][f"{size} PyTorch"]["wall"][0]
    before = earlier["prefill"][key]["wall"][0]
    before_base = earlier["prefill"][f"{size} PyTorch"]["wall"][0]
    lines.append(f"| {size} | {name} | {v['host'][0]:.0f} ({v['host'][1]:.0f}) | {v['wall'][0]:.0f} ({v['wall'][1]:.0f}) | "
                 f"{base / v['wall'][0]:.2f}x | {before_base / before:.2f}x |")
lines += ["", "## Decode, W4A16 block on fused projections, reduce-overhead without CUDA graph trees (4096-token cache)", "",
          "Batch 16 compiles after batch 1 from the same code, so Dynamo makes its shapes symbolic, and every op stays opaque there. "
          "Batch 1 is bound by the replay's host time, which this run's host doubled (PyTorch's: 97 us, 54 in the run before, "
          "where the course block took 101 us traced and 100 opaque against PyTorch's 151).", "",
          "| batch | block | host | wall |", "|---|---|---:|---:|"]
for key, v in rows["decode"].items():
    batch, name = key.split(" ", 1)
    lines.append(f"| {batch} | {name} | {v['host'][0]:.0f} ({v['host'][1]:.0f}) | {v['wall'][0]:.0f} ({v['wall'][1]:.0f}) |")
lines += ["", "## Training step, 1 x 2048, block_forward compiled (forward and backward)", "",
          "| kernels' floats | block | host | wall | largest gradient error vs float32 |", "|---|---|---:|---:|---:|"]
for label, src in (("refused, or cast to float32 by the kernel (now)", rows), ("refused, RMSNorm forward opaque", earlier),
                   ("traced as float64 (before)", old)):
    for name, v in src["train"].items():
        lines.append(f"| {label} | {name} | {v['host'][0]:.0f} | {v['wall'][0]:.0f} ({v['wall'][1]:.0f}) | {v['max_grad_rel_err']:.1e} |")
lines += ["", "With the floats traced, Inductor passed each float argument to the kernels as a float64 (its "
          "`_use_fp64_for_unbacked_floats`): the step took 17% longer than with the ops opaque (most likely in the attention "
          "backward, whose scores the scale then turned float64), and the decode kernel failed to compile, at the dot whose "
          "accumulator the scale turns float64 (`ops_decode_error` in the float64 rows).", ""]
(folder / "traced_ops.md").write_text("\n".join(lines))
