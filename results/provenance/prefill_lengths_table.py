"""Write results/h200/prefill_lengths_ab.md from the runs of results/provenance/prefill_lengths_ab.sh: the module 10
block's prefill with flash attention's short-sequence tiles (new) and without them (old), in the order new, old, new
in one session, eager (scripts/llama_block_bench.py --sections prefill) and compiled (traced_ops.py prefill).

    python results/provenance/prefill_lengths_table.py results/h200"""
from __future__ import annotations

import json
import sys
from pathlib import Path

folder = Path(sys.argv[1])
runs = ("new_a", "old", "new_b")
eager = {r: json.loads((folder / "prefill_lengths_ab" / f"{r}_llama_block.json").read_text()) for r in runs}
traced = {r: json.loads((folder / "prefill_lengths_ab" / f"{r}_traced.json").read_text()) for r in runs}
meta = eager["old"]["meta"]


def ms(run: str) -> dict[tuple[int, int, str], float]:
    return {(r["batch"], r["seq"], r["impl"]): r["ms"] for r in eager[run]["prefill"]}


times = {r: ms(r) for r in runs}
sizes = sorted({(b, s) for b, s, _ in times["old"]})
lines = [f"# Module 10 prefill with and without flash attention's short-sequence tiles ({meta['gpu']}, torch "
         f"{meta['torch']}, triton {meta['triton']}, {meta['date']})", "",
         "`OUT=... bash results/provenance/prefill_lengths_ab.sh` (this page: `results/provenance/prefill_lengths_table.py`). "
         "*new*: `solutions/flash_attention/configs.json` as committed, with 64-query tiles causal up to 2048 tokens; "
         "*old*: the same table with every short entry set to its long one (128-query tiles at every length), the settings "
         "before. Run in the order new (a), old, new (b) in one session; the files are in `prefill_lengths_ab/`.", "",
         "## Eager: the course block's time (ms) and torch.compile's over it", "",
         "| batch x tokens | course, new a | course, old | course, new b | compile / course, new a | old | new b |",
         "|---|---:|---:|---:|---:|---:|---:|"]
for b, s in sizes:
    course = [times[r][b, s, "course"] for r in runs]
    ratio = [times[r][b, s, "torch.compile"] / times[r][b, s, "course"] for r in runs]
    lines.append(f"| {b} x {s} | " + " | ".join(f"{c:.3f}" for c in course) + " | "
                 + " | ".join(f"{x:.3f}x" for x in ratio) + " |")
lines += ["", "## Both blocks compiled (dynamic=False), course ops traced: wall microseconds per step, best of 5 rounds", "",
          "| size | PyTorch, new a | course, new a | PyTorch, old | course, old | PyTorch, new b | course, new b |",
          "|---|---:|---:|---:|---:|---:|---:|"]
for size in ("1x512", "4x512", "1x2048"):
    cells = []
    for r in runs:
        p = traced[r]["prefill"]
        cells += [f"{p[f'{size} PyTorch']['wall'][0]:.0f}", f"{p[f'{size} course, traced']['wall'][0]:.0f}"]
    lines.append(f"| {size} | " + " | ".join(cells) + " |")
(folder / "prefill_lengths_ab.md").write_text("\n".join(lines) + "\n")
print("wrote", folder / "prefill_lengths_ab.md")
