"""Draw the figures of lecture 05 (RMSNorm) into lectures/figures/05_*.png.

    python lectures/figures/make_05_figures.py                    # committed results, if any
    python lectures/figures/make_05_figures.py --results FILE     # another results JSON

Needs only matplotlib; runs on a CPU in a few seconds. The bandwidth plot is drawn only when measurements
exist (results/h200/rmsnorm.json, written by `python -m autograder bench rmsnorm` on a GPU); the other
figures come from the byte counts and tile shapes below.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
PNG_META = {"Software": None}  # no matplotlib version in the file: regenerating changes nothing

# H200 SXM figures used in the lecture (NVIDIA datasheet; copy measured on an H200 for the course).
HBM_TBPS = 4.8
COPY_TBPS = 4.3
BF16_TENSOR_TFLOPS = 989.0
FP32_TFLOPS = 67.0


def save(fig: plt.Figure, name: str, out: Path) -> None:
    path = out / name
    fig.savefig(path, dpi=130, metadata=PNG_META)
    plt.close(fig)
    print(f"wrote {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")


# --------------------------------------------------------------------------------------------------
# 1. Bytes moved: eager PyTorch, op by op, against the fused minimum.
# --------------------------------------------------------------------------------------------------


def eager_ops(m: int, n: int, s: int = 2) -> list[tuple[str, int, int]]:
    """(op, bytes read, bytes written) of Llama-style eager RMSNorm on an (m, n) input of s-byte elements.

    The same list that the notebook counts with a TorchDispatchMode: float32 intermediates are 4 bytes.
    """
    mn, f32 = m * n, 4
    return [
        ("x.float()", s * mn, f32 * mn),
        ("pow(2)", f32 * mn, f32 * mn),
        ("mean(-1)", f32 * mn, f32 * m),
        ("+ eps", f32 * m, f32 * m),
        ("rsqrt", f32 * m, f32 * m),
        ("x * rstd", f32 * mn + f32 * m, f32 * mn),
        (".to(bf16)", f32 * mn, s * mn),
        ("* weight", s * mn + s * n, s * mn),
    ]


def fig_bytes(out: Path, m: int = 16384, n: int = 4096) -> None:
    ops = eager_ops(m, n)
    fused = 2 * m * n * 2 + n * 2
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    bottom = 0.0
    for (name, read, written), color in zip(ops, plt.cm.tab20.colors):
        gb = (read + written) / 1e9
        ax.bar(0, gb, bottom=bottom, color=color, width=0.6, label=name)
        bottom += gb
    ax.bar(1, fused / 1e9, color="black", width=0.6, label="fused: read x, w; write y")
    ax.text(0, bottom + 0.04, f"{bottom:.2f} GB", ha="center")
    ax.text(1, fused / 1e9 + 0.04, f"{fused / 1e9:.2f} GB", ha="center")
    ax.set_xticks([0, 1], ["eager PyTorch (8 kernels)", "fused Triton kernel"])
    ax.set_xlim(-0.6, 2.9)
    ax.set_ylim(0, bottom * 1.12)
    ax.set_ylabel("GB through HBM")
    ax.set_title(f"RMSNorm forward, {m}×{n} bf16: bytes moved ({bottom / (fused / 1e9):.1f}x)")
    ax.legend(fontsize=8, loc="upper right", title="eager op", title_fontsize=8)
    fig.tight_layout()
    save(fig, "05_bytes_moved.png", out)


# --------------------------------------------------------------------------------------------------
# 2. Tiles: how rows map to programs in v1, v2 and v3.
# --------------------------------------------------------------------------------------------------

PROGRAM_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3"]


def _cell(ax: plt.Axes, col: float, row: float, color: str, masked: bool = False) -> None:
    if masked:
        ax.add_patch(Rectangle((col, -row - 1), 1, 1, facecolor="#eeeeee", edgecolor="#999999",
                               hatch="////", linewidth=0.5))
    else:
        ax.add_patch(Rectangle((col, -row - 1), 1, 1, facecolor=color, edgecolor="white", linewidth=0.8))


def _frame(ax: plt.Axes, width: float, rows: int, title: str) -> None:
    ax.set_xlim(-3.2, width + 0.3)
    ax.set_ylim(-rows - 2.2, 1.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=10)


def fig_tiles(out: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4), gridspec_kw={"width_ratios": [1, 1, 1.9]})

    # v1: one program per row; BLOCK_N = 8 lanes for N = 6 columns.
    ax, n_rows, n_cols, block_n = axes[0], 6, 6, 8
    for r in range(n_rows):
        for c in range(block_n):
            _cell(ax, c, r, PROGRAM_COLORS[r % len(PROGRAM_COLORS)], masked=c >= n_cols)
        ax.text(-0.3, -r - 0.5, f"pid {r}", ha="right", va="center", fontsize=8)
    ax.annotate("", xy=(n_cols, 0.45), xytext=(0, 0.45), arrowprops={"arrowstyle": "<->", "lw": 0.8})
    ax.text(n_cols / 2, 0.55, "N", ha="center", va="bottom", fontsize=8)
    ax.text(block_n / 2, -n_rows - 0.7, "BLOCK_N = next_power_of_2(N)\nhatched: mask = cols < N",
            ha="center", va="top", fontsize=8)
    _frame(ax, block_n, n_rows, "v1: one program per row")

    # v2: BLOCK_M = 2 rows per program, M = 7 rows: the last program has a row past M.
    ax, n_rows, block_m = axes[1], 7, 2
    n_programs = math.ceil(n_rows / block_m)
    for r in range(n_programs * block_m):
        for c in range(block_n):
            _cell(ax, c, r, PROGRAM_COLORS[r // block_m], masked=c >= n_cols or r >= n_rows)
    for p in range(n_programs):
        ax.text(-0.3, -p * block_m - block_m / 2, f"pid {p}", ha="right", va="center", fontsize=8)
    ax.text(block_n / 2, -n_programs * block_m - 0.7,
            f"BLOCK_M = {block_m} rows per program, M = {n_rows}\ngrid = cdiv(M, BLOCK_M) = {n_programs}",
            ha="center", va="top", fontsize=8)
    _frame(ax, block_n, n_programs * block_m, "v2: BLOCK_M rows per program")

    # v3: one long row (N = 21) walked in tiles of BLOCK_N = 8, twice.
    ax, n_cols, block_n = axes[2], 21, 8
    n_tiles = math.ceil(n_cols / block_n)
    tile_colors = ["#4c72b0", "#6f8fc7", "#93acd9"]
    for row, label in ((1, "pass 1: acc += x * x"), (5, "pass 2: y = x * rstd * w")):
        for c in range(n_tiles * block_n):
            _cell(ax, c, row, tile_colors[c // block_n], masked=c >= n_cols)
        ax.text(-0.3, -row - 0.5, label.split(":")[0], ha="right", va="center", fontsize=8)
        ax.text(n_tiles * block_n / 2, -row + 0.15, label, ha="center", va="bottom", fontsize=9)
        for t in range(n_tiles - 1):
            ax.add_patch(FancyArrowPatch((t * block_n + block_n / 2, -row - 1.15),
                                         ((t + 1) * block_n + block_n / 2, -row - 1.15),
                                         connectionstyle="arc3,rad=0.35", arrowstyle="->", mutation_scale=8))
    ax.text(n_tiles * block_n / 2, -8.6,
            "same program, same row: rstd = 1/sqrt(sum(acc)/N + eps) between the passes;\n"
            "pass 2 re-reads x, mostly from L2",
            ha="center", va="top", fontsize=8)
    _frame(ax, n_tiles * block_n, 8, "v3: a row longer than one tile")

    fig.suptitle("RMSNorm forward: which program reads which elements (colour = program or tile)", fontsize=11)
    fig.tight_layout()
    save(fig, "05_tiles.png", out)


# --------------------------------------------------------------------------------------------------
# 3. Roofline: RMSNorm against the H200's ridge points.
# --------------------------------------------------------------------------------------------------


def fig_roofline(out: Path) -> None:
    ai = [10 ** (k / 20) for k in range(-30, 81)]  # 0.03 .. 10^4 FLOP/byte
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for peak, label, style in ((BF16_TENSOR_TFLOPS, "bf16 tensor cores, 989 TFLOP/s", "-"),
                               (FP32_TFLOPS, "float32 units, 67 TFLOP/s", "-.")):
        ax.plot(ai, [min(peak, a * HBM_TBPS) for a in ai], style, color="C0", label=label)
        ax.plot([peak / HBM_TBPS], [peak], "o", color="C0", markersize=4)
        ax.text(peak / HBM_TBPS / 1.5, peak * 1.5, f"ridge {peak / HBM_TBPS:.0f} FLOP/B", fontsize=8, ha="right")
    ax.plot(ai, [a * COPY_TBPS for a in ai], ":", color="gray", label=f"measured copy, {COPY_TBPS} TB/s")
    for x_ai, label in ((1.0, "RMSNorm bf16 (~1 FLOP/B)"), (0.5, "RMSNorm fp32 (~0.5)")):
        ax.plot([x_ai], [x_ai * COPY_TBPS], "s", color="C3")
        ax.annotate(label, (x_ai, x_ai * COPY_TBPS), xytext=(x_ai * 1.6, x_ai * COPY_TBPS / 5), fontsize=8,
                    arrowprops={"arrowstyle": "-", "lw": 0.6, "color": "C3"})
    mm = 8192**3 * 2 / (3 * 8192**2 * 2)  # bf16 8192^3 matmul: 2n^3 FLOPs over three n^2 matrices
    ax.plot([mm], [BF16_TENSOR_TFLOPS], "^", color="C2")
    ax.annotate(f"matmul 8192³ bf16\n(~{mm:.0f} FLOP/B)", (mm, BF16_TENSOR_TFLOPS),
                xytext=(mm * 0.5, BF16_TENSOR_TFLOPS * 0.12), fontsize=8,
                arrowprops={"arrowstyle": "-", "lw": 0.6, "color": "C2"})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(0.1, 4000)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of HBM traffic)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.set_title(f"H200 roofline (HBM {HBM_TBPS} TB/s datasheet)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save(fig, "05_roofline.png", out)


# --------------------------------------------------------------------------------------------------
# 4. dweight: per-program partial sums, then a second kernel.
# --------------------------------------------------------------------------------------------------


def fig_dweight(out: Path, n_rows: int = 9, n_programs: int = 3, n_cols: int = 6) -> None:
    fig, ax = plt.subplots(figsize=(10, 3.6))
    # Rows of dy * xhat, coloured by the program that owns them (row r -> program r % P).
    for r in range(n_rows):
        for c in range(n_cols):
            _cell(ax, c, r, PROGRAM_COLORS[r % n_programs])
        ax.text(-0.3, -r - 0.5, f"row {r}", ha="right", va="center", fontsize=7)
    ax.text(n_cols / 2, 0.3, "dy * xhat  (M × N)", ha="center", fontsize=9)
    # The (P, N) float32 partials.
    x0 = n_cols + 5
    for p in range(n_programs):
        for c in range(n_cols):
            _cell(ax, x0 + c, p + 3, PROGRAM_COLORS[p])
        ax.text(x0 + n_cols + 0.3, -p - 3.5, f"partial[{p}] = rows {p}, {p + n_programs}, {p + 2 * n_programs}",
                va="center", fontsize=7)
    ax.text(x0 + n_cols / 2, -2.7, "kernel 1: (P × N) float32\none row per program, no atomics",
            ha="center", fontsize=8)
    ax.add_patch(FancyArrowPatch((n_cols + 0.5, -n_rows / 2), (x0 - 0.5, -4.5), arrowstyle="->",
                                 mutation_scale=12))
    # The final sum.
    x1 = x0 + n_cols + 12
    for c in range(n_cols):
        _cell(ax, x1 + c, 4, "#333333")
    ax.text(x1 + n_cols / 2, -3.7, "kernel 2: dweight (N)\nsum over the P rows", ha="center", fontsize=8)
    ax.add_patch(FancyArrowPatch((x0 + n_cols + 8.5, -4.5), (x1 - 0.5, -4.5), arrowstyle="->",
                                 mutation_scale=12))
    ax.set_xlim(-2.5, x1 + n_cols + 0.5)
    ax.set_ylim(-n_rows - 0.5, 1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"Backward: dweight = sum over rows of dy * xhat, with P = {n_programs} persistent programs",
                 fontsize=10)
    fig.tight_layout()
    save(fig, "05_dweight.png", out)


# --------------------------------------------------------------------------------------------------
# 5. Bandwidth across sizes, from committed measurements.
# --------------------------------------------------------------------------------------------------


def fig_bandwidth(results: dict, out: Path) -> None:
    meta, rows = results["meta"], results["rows"]
    dtypes = [r["dtype"] for r in rows]
    dtype = "bfloat16" if "bfloat16" in dtypes else dtypes[0]
    rows = [r for r in rows if r["dtype"] == dtype]
    copy_gbps = meta["copy_gbps"]
    passes = [p for p in ("forward", "backward") if any(r["pass"] == p for r in rows)]
    fig, axes = plt.subplots(1, len(passes), figsize=(6.2 * len(passes), 4.0), squeeze=False)
    for ax, pass_ in zip(axes[0], passes):
        mine = [r for r in rows if r["pass"] == pass_]
        shapes = sorted({tuple(r["shape"]) for r in mine}, key=lambda s: (math.prod(s), s[-1]))
        for impl in dict.fromkeys(r["impl"] for r in mine):
            gbps = {tuple(r["shape"]): r["gbps"] for r in mine if r["impl"] == impl}
            xs = [i for i, shape in enumerate(shapes) if shape in gbps]
            ax.plot(xs, [gbps[shapes[i]] for i in xs], marker="o", label=impl)
        ax.axhline(copy_gbps, color="gray", linestyle="--", label=f"copy ({copy_gbps / 1000:.2f} TB/s)")
        ax.set_xticks(range(len(shapes)), ["×".join(map(str, s)) for s in shapes], rotation=30, fontsize=8)
        ax.set_xlabel("shape (M × N), by bytes moved")
        ax.set_ylabel("GB/s (minimum bytes / time)")
        ax.set_ylim(0, copy_gbps * 1.15)
        ax.set_title(f"{pass_}, {dtype}", fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(f"RMSNorm on {meta['gpu']} (torch {meta['torch']}, triton {meta['triton']}, {meta['date']})",
                 fontsize=10)
    fig.tight_layout()
    save(fig, "05_bandwidth.png", out)


def load(path: str | None) -> dict | None:
    if path:
        return json.loads(Path(path).read_text())
    sys.path.insert(0, str(REPO_ROOT))
    from course.results import load_results

    return load_results("rmsnorm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", help="a results JSON (default: the committed results/h200/rmsnorm.json)")
    parser.add_argument("--out", default=str(HERE), help="folder for the PNGs (default: beside this script)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig_bytes(out)
    fig_tiles(out)
    fig_roofline(out)
    fig_dweight(out)
    results = load(args.results)
    if results is None:
        print("no RMSNorm measurements committed yet (results/h200/rmsnorm.json): 05_bandwidth.png not drawn")
    else:
        fig_bandwidth(results, out)


if __name__ == "__main__":
    main()
