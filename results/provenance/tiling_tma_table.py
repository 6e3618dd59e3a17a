"""Tables of the TMA matmul probe and of the shipped TMA bonus, from their JSONs: results/<gpu>/tiling_tma.md.

    python results/provenance/tiling_tma_table.py results/h100
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(folder: Path) -> None:
    probe = json.loads((folder / "tiling_tma_probe.json").read_text())
    lines = [f"# Module 04's matmul through tensor descriptors (TMA): {probe['gpu']}, torch {probe['torch']}, "
             f"triton {probe['triton']}, {probe['date']}", "",
             "cuBLAS's time over each kernel's (above 1: faster than cuBLAS), every kernel checked against a float64 "
             "product first, timed with the grader's timer (L2 flushed, inputs cycled, interleaved, median of 20). "
             f"`{probe['command']}`; the kernels are in that file.", ""]  # fmt: skip
    names = [n for n in probe["rows"][0]["us"] if n not in ("solution", "cuBLAS")]
    lines.append("| shape (M x K x N) | dtype | cuBLAS (us) | pointer kernel (the solution of tiling.matmul) | "
                 + " | ".join(names) + " |")  # fmt: skip
    lines.append("|---|---|---:|---:|" + "---:|" * len(names))
    for r in probe["rows"]:
        cb = r["us"]["cuBLAS"]
        cells = [f"{cb / r['us'][n]:.3f}" if n in r["us"] else "-" for n in names]
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {r['dtype']} | {cb:.1f} | {cb / r['us']['solution']:.3f} | "
                     + " | ".join(cells) + " |")  # fmt: skip
    for tag, title in (("_more", "Around the shipped tile (`--more`)"),
                       ("_programs", "The shipped tile with fewer programs than SMs (`--programs`)")):
        extra = folder / f"tiling_tma_probe{tag}.json"
        if not extra.exists():
            continue
        e = json.loads(extra.read_text())
        names = [n for n in e["rows"][0]["us"] if n not in ("solution", "cuBLAS")]
        lines += ["", f"## {title}, {e['date']}", "", f"`{e['command']}`; cuBLAS's time over each kernel's.", "",
                  "| shape | dtype | cuBLAS (us) | pointer kernel | " + " | ".join(names) + " |",
                  "|---|---|---:|---:|" + "---:|" * len(names)]  # fmt: skip
        for r in e["rows"]:
            cb = r["us"]["cuBLAS"]
            cells = [f"{cb / r['us'][n]:.3f}" if n in r["us"] else "-" for n in names]
            lines.append(f"| {'x'.join(map(str, r['shape']))} | {r['dtype']} | {cb:.1f} | {cb / r['us']['solution']:.3f} | "
                         + " | ".join(cells) + " |")  # fmt: skip
    for shipped in (folder / "tiling_tma_solution.json", folder / "tiling_tma_solution_one_per_sm.json"):
        if shipped.exists():
            lines += _shipped(shipped)
    (folder / "tiling_tma.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {folder / 'tiling_tma.md'}")


def _shipped(shipped: Path) -> list[str]:
    """The table of one run of tiling_tma_solution.py."""
    s = json.loads(shipped.read_text())
    grid = "one program per SM" if "one_per_sm" in shipped.name else "the balanced grid"
    lines = ["", f"## The bonus as shipped (`matmul_tma`), {s['date']}, {grid} (`{shipped.name}`)", "",
             f"`{s['command']}`. Its 16-bit tile: {s['table_tile_16bit']}. \"probe twin\": the probe's persistent kernel "
             "with the same tile and one program per SM, which counts the stored tile apart from the loop's. float32 "
             "rows: tiles the table could take (tf32x3), each timed beside the pointer kernel's float32.", "",
             "| shape | dtype | kernel | vs cuBLAS |", "|---|---|---|---:|"]  # fmt: skip
    for r in s["rows"]:
        for name, ratio in sorted(r["vs_cublas"].items(), key=lambda kv: -kv[1]):
            if name != "cuBLAS":
                lines.append(f"| {'x'.join(map(str, r['shape']))} | {r['dtype']} | {name} | {ratio:.3f} |")
    return lines


if __name__ == "__main__":
    main(Path(sys.argv[1]))
