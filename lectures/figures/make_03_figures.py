"""Draw the figures of lecture 03 (coalescing) into lectures/figures/03_*.png.

    python lectures/figures/make_03_figures.py

Needs only matplotlib; runs on a CPU in a few seconds. The access-pattern figures are drawn from the
address arithmetic; the measured ones from results/h200/tune_coalescing.json (results/h200/NOTES.md)
and results/h200/coalescing.json (python -m autograder bench coalescing), both measured on an H200.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
RESULTS = REPO_ROOT / "results" / "h200"
PNG_META = {"Software": None}  # no matplotlib version in the file: regenerating changes nothing
READ, WRITE, SECTOR = "#1f77b4", "#d62728", "#ff7f0e"


def save(fig: plt.Figure, name: str) -> None:
    fig.savefig(HERE / name, dpi=110, metadata=PNG_META)
    plt.close(fig)
    print(f"wrote lectures/figures/{name}")


# --------------------------------------------------------------------------------------------------
# 1. One warp, 32 float32 loads: along a row (4 sectors) or down a column (32 sectors).
# --------------------------------------------------------------------------------------------------


def grid(ax: plt.Axes, rows: int, cols: int, title: str) -> None:
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    for r in range(rows + 1):
        ax.plot([0, cols], [r, r], color="0.88", lw=0.4)
    for c in range(cols + 1):
        ax.plot([c, c], [0, rows], color="0.88", lw=0.4)


def fig_warp_sectors() -> None:
    rows, cols, per_sector = 32, 48, 8  # float32: 8 elements per 32-byte sector
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 4.0))
    for ax, along_row in zip(axes, (True, False)):
        cells = [(4, 8 + i) for i in range(32)] if along_row else [(i, 13) for i in range(32)]
        sectors = {(r, c // per_sector) for r, c in cells}
        title = ("along a row: 32 consecutive addresses\n4 sectors (128 bytes), every byte used" if along_row
                 else "down a column: 32 addresses a row apart\n32 sectors (1024 bytes), 1/8 of them used")
        grid(ax, rows, cols, title)
        for r, s in sectors:
            ax.add_patch(Rectangle((s * per_sector, r), per_sector, 1, fill=True, color=SECTOR, alpha=0.35, lw=0))
        for r, c in cells:
            ax.add_patch(Rectangle((c, r), 1, 1, color=READ))
    fig.suptitle("One warp loads 32 float32 elements of a row-major matrix (48 columns shown)\n"
                 "blue: the elements asked for; orange: the 32-byte sectors memory delivers", fontsize=9)
    fig.tight_layout()
    save(fig, "03_warp_sectors.png")


# --------------------------------------------------------------------------------------------------
# 2. Which addresses one program touches: naive transposes against the tiled one.
# --------------------------------------------------------------------------------------------------


def fig_transpose_access() -> None:
    n = 16
    fig, axes = plt.subplots(3, 2, figsize=(6.4, 9.4))
    versions = [
        ("naive: one row of x in, one column of out", [(5, c) for c in range(n)], [(c, 5) for c in range(n)]),
        ("naive: one column of x in, one row of out", [(r, 5) for r in range(n)], [(5, r) for r in range(n)]),
        ("tiled: a 4 x 8 tile in, its 8 x 4 transpose out",
         [(r, c) for r in range(4, 8) for c in range(8, 16)], [(c, r) for r in range(4, 8) for c in range(8, 16)]),
    ]
    for (title, reads, writes), (ax_x, ax_out) in zip(versions, axes):
        grid(ax_x, n, n, f"x (read)  {title.split(':')[0]}")
        grid(ax_out, n, n, "out = x.T (written)")
        for r, c in reads:
            ax_x.add_patch(Rectangle((c, r), 1, 1, color=READ))
        for r, c in writes:
            ax_out.add_patch(Rectangle((c, r), 1, 1, color=WRITE))
        ax_x.text(0, n + 1.3, title.split(": ")[1], fontsize=8, va="top")
        runs_in = len({r for r, _ in reads})
        runs_out = len({r for r, _ in writes})
        ax_out.text(0, n + 1.3, f"contiguous runs: {runs_in} read, {runs_out} written", fontsize=8, va="top")
    fig.suptitle("Addresses one program touches (rows are contiguous in memory)", fontsize=10)
    fig.tight_layout()
    save(fig, "03_transpose_access.png")


# --------------------------------------------------------------------------------------------------
# 3. Measured on the H200.
# --------------------------------------------------------------------------------------------------


def fig_reads_and_variants(tune: dict) -> None:
    copy = tune["meta"]["copy_gbps"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 2]})
    reads = tune["reads"]
    axes[0].bar(range(len(reads)), [r["gbps"] for r in reads], color=[READ, SECTOR, SECTOR])
    axes[0].set_xticks(range(len(reads)), ["rows", "columns,\nneighbours\nin flight", "columns,\none at a\ntime"], fontsize=8)
    axes[0].set_ylabel("GB/s read")
    axes[0].set_title("Summing a float32 8192 x 8192 matrix", fontsize=9)
    for i, r in enumerate(reads):
        axes[0].text(i, r["gbps"] + 60, f"{r['gbps']:,.0f}", ha="center", fontsize=8)
    variants = tune["variants"]
    dtypes = ["bfloat16", "float32"]
    names = list(dict.fromkeys(v["impl"] for v in variants))
    width = 0.38
    for j, d in enumerate(dtypes):
        vals = [next(v["gbps"] for v in variants if v["impl"] == n and v["dtype"] == d) for n in names]
        axes[1].bar([i + (j - 0.5) * width for i in range(len(names))], vals, width, label=d)
        for i, v in enumerate(vals):
            axes[1].text(i + (j - 0.5) * width, v + 60, f"{100 * v / copy:.0f}%", ha="center", fontsize=7)
    labels = [n.replace("tiled (the solution)", "tiled, 64 x 64 tiles").replace(": ", ":\n").replace(", ", ",\n") for n in names]
    axes[1].set_xticks(range(len(names)), labels, fontsize=8)
    axes[1].set_ylabel("GB/s (read + written)")
    axes[1].set_title("Transposing an 8192 x 8192 matrix (labels: % of copy bandwidth)", fontsize=9)
    axes[1].legend(fontsize=8)
    for ax in axes:
        ax.axhline(copy, color="gray", ls="--", lw=1)
        ax.set_ylim(0, copy * 1.12)
    fig.suptitle(f"{tune['meta']['gpu']}, device copy {copy:,.0f} GB/s (dashed)", fontsize=9)
    fig.tight_layout()
    save(fig, "03_measured.png")


def fig_tile_sweep(tune: dict) -> None:
    rows = [r for r in tune["tile_sweep"] if r["shape"] == [8192, 8192] and r["config"] != "x.t().contiguous()"]
    configs = [c for c in dict.fromkeys(r["config"] for r in rows) if "grouped" not in c]
    fig, ax = plt.subplots(figsize=(11, 3.4))
    width = 0.4
    for j, d in enumerate(["bfloat16", "float32"]):
        vals = [next(r["pct_copy"] for r in rows if r["config"] == c and r["dtype"] == d) for c in configs]
        ax.bar([i + (j - 0.5) * width for i in range(len(configs))], vals, width, label=d)
    ax.set_xticks(range(len(configs)), [c.replace(" w", "\nw") for c in configs], fontsize=8)
    ax.set_ylabel("% of copy bandwidth")
    ax.set_ylim(50, 100)
    ax.axhline(85, color="gray", ls=":", lw=1)
    ax.set_title("Tiled transpose of 8192 x 8192: tile (BLOCK_M x BLOCK_N) and warps; dotted: the 85% target", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "03_tile_sweep.png")


def fig_sizes(bench: dict) -> None:
    copy = bench["meta"]["copy_gbps"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, d in zip(axes, ["bfloat16", "float32"]):
        mine = [r for r in bench["rows"] if r["dtype"] == d and r["shape"][0] == r["shape"][1]]
        shapes = sorted({r["shape"][0] for r in mine})
        for impl in dict.fromkeys(r["impl"] for r in mine):
            ax.plot(shapes, [next(r["gbps"] for r in mine if r["impl"] == impl and r["shape"][0] == s) for s in shapes],
                    marker="o", label=impl)
        ax.axhline(copy, color="gray", ls="--", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(shapes, [str(s) for s in shapes])
        ax.set_xlabel("n (an n x n matrix)")
        ax.set_ylabel("GB/s (read + written)")
        ax.set_ylim(0, copy * 1.1)
        ax.set_title(f"transpose, {d}", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"{bench['meta']['gpu']} ({bench['meta']['date']}, torch {bench['meta']['torch']}, "
                 f"triton {bench['meta']['triton']}); dashed: device copy", fontsize=9)
    fig.tight_layout()
    save(fig, "03_sizes.png")


def main() -> None:
    fig_warp_sectors()
    fig_transpose_access()
    tune_path, bench_path = RESULTS / "tune_coalescing.json", RESULTS / "coalescing.json"
    if tune_path.exists():
        tune = json.loads(tune_path.read_text())
        fig_reads_and_variants(tune)
        fig_tile_sweep(tune)
    if bench_path.exists():
        fig_sizes(json.loads(bench_path.read_text()))


if __name__ == "__main__":
    main()
