"""Draw the figures of lecture 02 (fusion) into lectures/figures/02_*.png.

    python lectures/figures/make_02_figures.py

Reads results/h200/fusion.json (`python -m autograder bench fusion`) and results/h200/fusion_tune.json
(scripts/profiling_experiments.py). The byte-count figure needs no measurement. Needs only matplotlib.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
RESULTS = REPO_ROOT / "results" / "h200"
PNG_META = {"Software": None}


def save(fig: plt.Figure, name: str) -> None:
    fig.savefig(HERE / name, dpi=110, metadata=PNG_META)
    plt.close(fig)
    print(f"wrote lectures/figures/{name}")


def bytes_moved() -> None:
    # Tensor-sized reads and writes of each kernel of the written-out GeLU and softmax (counted op by op
    # in notebooks/02_fusion.ipynb), against one read and one write when fused.
    gelu = [("0.5*x", 1, 1), ("x**3", 1, 1), ("0.044715*", 1, 1), ("x+", 2, 1), ("c*", 1, 1), ("tanh", 1, 1),
            ("1+", 1, 1), ("*", 2, 1)]
    softmax = [("amax", 1, 0), ("x-max", 1, 1), ("exp", 1, 1), ("sum", 1, 0), ("/sum", 1, 1)]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for i, (label, ops) in enumerate((("GeLU", gelu), ("softmax", softmax))):
        bottom = 0
        for j, (name, r, w) in enumerate(ops):
            ax.bar(2 * i, r + w, bottom=bottom, color=plt.cm.tab20(j), edgecolor="white")
            ax.text(2 * i, bottom + (r + w) / 2, name, ha="center", va="center", fontsize=7)
            bottom += r + w
        ax.bar(2 * i + 0.9, 2, color="black")
        ax.text(2 * i, bottom + 0.3, f"{label}: {bottom} tensors", ha="center", fontsize=8)
    ax.set_xticks([0, 0.9, 2, 2.9], ["GeLU\nops", "GeLU\nfused", "softmax\nops", "softmax\nfused"], fontsize=8)
    ax.set_ylabel("tensor-sized transfers through HBM")
    ax.set_title("Bytes moved: one kernel per op against one fused kernel", fontsize=9)
    fig.tight_layout()
    save(fig, "02_bytes_moved.png")


def bandwidth(bench: dict) -> None:
    copy = bench["meta"]["copy_gbps"]
    ops = list(dict.fromkeys(r["pass"] for r in bench["rows"]))
    fig, axes = plt.subplots(1, len(ops), figsize=(11, 3.6))
    for ax, op in zip(axes, ops):
        rows = [r for r in bench["rows"] if r["pass"] == op]
        shapes = list(dict.fromkeys("x".join(map(str, r["shape"])) for r in rows))
        impls = list(dict.fromkeys(r["impl"] for r in rows))
        width = 0.8 / len(impls)
        for i, impl in enumerate(impls):
            pct = {"x".join(map(str, r["shape"])): 100 * r["gbps"] / copy for r in rows if r["impl"] == impl}
            ax.bar([j + i * width for j in range(len(shapes))], [pct.get(s, 0) for s in shapes], width, label=impl)
        ax.axhline(100, color="gray", ls="--", lw=1)
        ax.axhline(85, color="red", ls=":", lw=1, label="target 85%")
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(shapes))], shapes, rotation=20, fontsize=8)
        ax.set_ylabel("% of copy bandwidth")
        ax.set_title(f"{op}, bf16", fontsize=9)
        ax.legend(fontsize=7)
    m = bench["meta"]
    fig.suptitle(f"{m['gpu']}, torch {m['torch']}, triton {m['triton']}, copy {copy:,.0f} GB/s", fontsize=9)
    fig.tight_layout()
    save(fig, "02_bandwidth.png")


def softmax_sweep(tune: dict) -> None:
    rows = tune["softmax_sweep"]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for single, label, marker in ((True, "row in one tile", "o"), (False, "looped (online), best tile", "s")):
        best: dict[int, float] = {}
        for r in rows:
            if r["single"] == single:
                best[r["n_cols"]] = max(best.get(r["n_cols"], 0), r["pct_copy"])
        ns = sorted(best)
        ax.plot(ns, [best[n] for n in ns], marker=marker, label=label)
    ax.axhline(85, color="red", ls=":", lw=1, label="target 85%")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 105)
    ax.set_xlabel("row length N (bf16, about 64M elements per tensor)")
    ax.set_ylabel("% of copy bandwidth (best setting)")
    ax.set_title("Fused softmax: one tile per row until the registers run out", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "02_softmax_sweep.png")


def main() -> None:
    bytes_moved()
    bandwidth(json.loads((RESULTS / "fusion.json").read_text()))
    softmax_sweep(json.loads((RESULTS / "fusion_tune.json").read_text()))


if __name__ == "__main__":
    main()
