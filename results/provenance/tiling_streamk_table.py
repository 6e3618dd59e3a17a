"""Writes results/h200/tiling_streamk_probe.md from the probe's two JSON files (tiling_streamk_probe.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

GPU = sys.argv[1] if len(sys.argv) > 1 else "h200"
HERE = Path(__file__).resolve().parents[1] / GPU


def main() -> None:
    sweep = json.loads((HERE / "tiling_streamk_probe.json").read_text())
    diag = json.loads((HERE / "tiling_streamk_probe_diag.json").read_text())
    out = [f"# Stream-K for module 04's matmul, a measured probe: {sweep['gpu']}, torch {sweep['torch']}, "
           f"triton {sweep['triton']}, {sweep['date']}", "",
           "Written by `results/provenance/tiling_streamk_table.py` from `tiling_streamk_probe.json` and "
           "`tiling_streamk_probe_diag.json` (`python results/provenance/tiling_streamk_probe.py [--diag]`; the "
           "kernel and how it shares the work are in that script's docstring). do_bench medians with the L2 "
           "flushed, in us; every stream-K variant checked against a float64 product, twice in a row (its "
           "counters must be back at zero), before it was timed. Ratios are cuBLAS's time over the variant's.", "",
           "## The sweep: the best stream-K variant of eight (four tiles, alone or after whole waves)", "",
           "| dtype | M x K x N | cuBLAS | solution | vs cuBLAS | best stream-K | vs cuBLAS | which |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in sweep["rows"]:
        best = min(r["variants"], key=r["variants"].get)
        t = r["variants"][best]
        m, k, n = r["shape"]
        out.append(f"| {r['dtype']} | {m}x{k}x{n} | {r['cublas_us']:.1f} | {r['solution_us']:.1f} | "
                   f"{r['cublas_us'] / r['solution_us']:.2f}x | {t:.1f} | {r['cublas_us'] / t:.2f}x | {best} |")
    out += ["", "## Where the time goes (bf16, one tile: 128 x 256 x 32, 4 stages, 8 warps, 132 programs)", "",
            "Rows marked *timed only* compute wrong sums on purpose: they leave out part of the hand-over of partial tiles.", ""]
    labels = [("stream-K", "stream-K, as checked"),
              ("no hand-over (timing only)", "the same runs, no partial handed over (*timed only*)"),
              ("partials stored only (timing only)", "partials stored, no flag, no wait (*timed only*)"),
              ("partials stored, flags waited for, not added (timing only)", "stored, flagged and waited for, not added (*timed only*)"),
              ("whole tiles, runs", "persistent, whole tiles, each program a run of them"),
              ("whole tiles, strided", "persistent, whole tiles, program p taking p, p + P, ...")]
    shapes = [r["shape"] for r in diag["rows"]]
    out.append("| variant | " + " | ".join(f"{s[0]}^3" for s in shapes) + " |")
    out.append("|---|" + "---:|" * len(shapes))
    rows = {tuple(r["shape"]): r for r in diag["rows"]}
    out.append("| cuBLAS | " + " | ".join(f"{rows[tuple(s)]['cublas_us']:.1f}" for s in shapes) + " |")
    out.append("| solution | " + " | ".join(f"{rows[tuple(s)]['solution_us']:.1f}" for s in shapes) + " |")
    for key, label in labels:
        name = f"{key} 128x256 k32 x132"
        out.append(f"| {label} | " + " | ".join(f"{rows[tuple(s)]['variants'][name]:.1f}" for s in shapes) + " |")
    flat = [rows[tuple(s)]["variants"]["stream-K flat 128x256 k32 x132"] for s in shapes]
    wrong = sum(t is None for t in flat)  # null: the variant's sums were wrong
    out += ["", f"The same share of work walked as one flat loop (`_streamk_flat_kernel`, the loop of Triton's persistent "
            f"matmul tutorial, with each tile's hand-over inside it) gave wrong sums on the GPU with this tile at "
            f"{wrong} of {len(flat)} sizes, though right ones in the interpreter; why was not found. Where it was right "
            f"(128 x 256 x 64, 2 stages: see the JSON) it was slower than the kernel above, and it was not pursued."]
    (HERE / "tiling_streamk_probe.md").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
