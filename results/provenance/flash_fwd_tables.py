"""Write results/<gpu>/flash_fwd_probe.md and flash_fwd_lengths.md from the JSONs of flash_fwd_probe.py.

    python results/provenance/flash_fwd_tables.py results/h200"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def shape(r: dict) -> str:
    return f"{r.get('B', 4)}x{r.get('Hq', 32)}/{r.get('Hkv', 32)}x{r['S']}" + (" causal" if r["causal"] else "")


def ratio_table(rows: list[dict], labels: list[str]) -> list[str]:
    """cuDNN's time over each label's, one column per shape; '-' where a label was not timed (not run, or wrong)."""
    out = ["| | " + " | ".join(shape(r) for r in rows) + " |", "|---|" + "---:|" * len(rows),
           "| cuDNN (us) | " + " | ".join(f"{r['us']['cudnn']:,.1f}" for r in rows) + " |"]
    for lab in labels:
        cells = [f"{r['us']['cudnn'] / r['us'][lab]:.2f}x" if lab in r["us"] else "-" for r in rows]
        out.append(f"| {lab} | " + " | ".join(cells) + " |")
    return out


def main(folder: Path) -> None:
    probe = json.loads((folder / "flash_fwd_probe.json").read_text())
    m = probe["meta"]
    labels = [lab for lab in probe["rows"][0]["us"] if lab != "cudnn"]
    lines = [f"# Flash attention forward: tiles per length, and two query halves per program ({m['gpu']}, torch "
             f"{m['torch']}, triton {m['triton']}, {m['date']})", "",
             "`python results/provenance/flash_fwd_probe.py OUT` (tables: `results/provenance/flash_fwd_tables.py`). "
             "bf16, d = 128, 4 x 32 heads; the grader's timer (L2 flushed, order alternated), median of 20. Each cell is "
             "cuDNN's time over the variant's (above 1: faster than cuDNN). *solution*: the launcher with the table of "
             "that day (128 x 128 tiles, 8 warps, 3 stages at every length); *tile BMxBN wW sS*: the solution's kernel "
             "with those settings; *halves*: a kernel whose program holds its queries as two independent halves of "
             "64 rows (two chains of dot, softmax, dot per key block on one K and V tile). Causal runs skip tiles "
             "whose BLOCK_N does not divide BLOCK_M (the kernel's diagonal needs it). Every timed output was within "
             "0.03 of float32 SDPA's.", ""]
    lines += ratio_table(probe["rows"], labels)
    lines += ["", "Compiled for sm_90 (`--ptx`, Triton 3.7 on the CPU), both kernels wait for every `wgmma` before the "
              "exponentials that read its scores (`wgmma.wait_group 0`), the halves kernel included: it issues both halves' "
              "QK^T products, waits for both, then runs both softmaxes, so nothing overlaps that did not before, and its "
              "64-row products split each warpgroup's work along the keys.", ""]
    lengths = json.loads((folder / "flash_fwd_lengths.json").read_text())
    m = lengths["meta"]
    lines += [f"## The two entries' tiles over lengths and batches ({m['date']}, after `tune flash_attention --kernels forward`)", "",
              "`python results/provenance/flash_fwd_probe.py OUT --lengths`: the solution as launched (its length classes, "
              "`SHORT_ATTENTION`), the long entry's tile (128 x 128, 8 warps) and the short entries' (64 x 64, 4 warps), "
              "at 4 x 32 heads and at the module 10 block's 1 x 32 query heads over 8 KV heads. An earlier run of the same "
              "script, with a table that had the class S<=1024 only (`flash_fwd_lengths_first.json`), showed the small "
              "tile ahead causal at 2048 too (0.89x against 0.84x at 4 x 32), which is why there is a second class.", ""]
    lines += ratio_table(lengths["rows"], ["solution", "tile 128x128 w8 s3", "tile 64x64 w4 s3"])
    (folder / "flash_fwd_probe.md").write_text("\n".join(lines) + "\n")
    print("wrote", folder / "flash_fwd_probe.md")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
