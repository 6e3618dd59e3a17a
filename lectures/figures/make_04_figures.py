"""Draw the figures of lecture 04 (tiling) into lectures/figures/04_*.png.

    python lectures/figures/make_04_figures.py

Needs only matplotlib; runs on a CPU in a few seconds. The traffic model and the launch-order picture
come from arithmetic; the measured figures from results/h200/tune_tiling.json (results/h200/NOTES.md)
and results/h200/tiling.json (python -m autograder bench tiling), both measured on an H200.
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
PNG_META = {"Software": None}
HBM_TBPS, BF16_TFLOPS = 4.8, 989.0  # H200 SXM datasheet


def save(fig: plt.Figure, name: str) -> None:
    fig.savefig(HERE / name, dpi=110, metadata=PNG_META)
    plt.close(fig)
    print(f"wrote lectures/figures/{name}")


# --------------------------------------------------------------------------------------------------
# 1. Traffic: how many bytes a matmul reads from memory, as a function of the tile.
# --------------------------------------------------------------------------------------------------


def traffic_bytes(n: int, tile_m: int, tile_n: int, s: int = 2) -> float:
    """Bytes read and written for an n^3 matmul whose (tile_m, tile_n) output tiles each read a row
    block of A and a column block of B once: A is read n / tile_n times, B n / tile_m times."""
    return s * (n * n * n / tile_n + n * n * n / tile_m + n * n)


def fig_traffic() -> None:
    n = 4096
    tiles = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    fig, ax = plt.subplots(figsize=(6.6, 3.8))
    gb = [traffic_bytes(n, t, t) / 1e9 for t in tiles]
    ax.plot(tiles, gb, marker="o", label="square T x T tiles")
    ax.plot([128], [traffic_bytes(n, 128, 256) / 1e9], marker="*", ms=12, ls="", color="C3", label="128 x 256 tiles")
    ax.axhline(3 * n * n * 2 / 1e9, color="gray", ls="--", label="each matrix once (0.10 GB)")
    flops = 2 * n**3
    ax.axhline(flops / BF16_TFLOPS / 1e12 * HBM_TBPS * 1e12 / 1e9, color="C2", ls=":",
               label="bytes HBM moves while the tensor cores\ndo the FLOPs (datasheet rates)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(tiles, [str(t) for t in tiles])
    ax.set_xlabel("tile edge T (elements of C per program, each way)")
    ax.set_ylabel("GB read + written")
    ax.set_title(f"A {n}^3 fp16 matmul: memory traffic against tile size", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, "04_traffic.png")


# --------------------------------------------------------------------------------------------------
# 2. Launch order: row-major against grouped.
# --------------------------------------------------------------------------------------------------


def grouped_order(num_m: int, num_n: int, group: int) -> dict[tuple[int, int], int]:
    order = {}
    for pid in range(num_m * num_n):
        per_group = group * num_n
        first = (pid // per_group) * group
        size = min(num_m - first, group)
        order[(first + (pid % per_group) % size, (pid % per_group) // size)] = pid
    return order


def fig_launch_order() -> None:
    num, wave = 8, 16
    fig, axes = plt.subplots(1, 2, figsize=(8.6, 4.4))
    orders = [("row-major order (GROUP_M = 1)", grouped_order(num, num, 1)), ("grouped order (GROUP_M = 4)", grouped_order(num, num, 4))]
    for ax, (title, order) in zip(axes, orders):
        first = {t for t, pid in order.items() if pid < wave}
        rows, cols = {m for m, _ in first}, {n for _, n in first}
        ax.set_xlim(0, num)
        ax.set_ylim(num, 0)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        for (m, n), pid in order.items():
            ax.add_patch(Rectangle((n, m), 1, 1, fill=True, color="#1f77b4" if pid < wave else "white", ec="0.6", lw=0.6))
            ax.text(n + 0.5, m + 0.55, str(pid), ha="center", va="center", fontsize=7, color="white" if pid < wave else "0.3")
        ax.set_title(f"{title}\nfirst {wave} programs need {len(rows)} row blocks of A and {len(cols)} column blocks of B",
                     fontsize=8)
    fig.suptitle("Tiles of C, numbered by program id; blue: the programs that run first", fontsize=9)
    fig.tight_layout()
    save(fig, "04_launch_order.png")


# --------------------------------------------------------------------------------------------------
# 3. Measured on the H200.
# --------------------------------------------------------------------------------------------------


def fig_progression(tune: dict) -> None:
    prog = [r for r in tune["progression"] if r["size"] == 4096]
    fig, ax = plt.subplots(figsize=(8.6, 3.6))
    names = [r["version"] for r in prog]
    vals = [r["tflops"] for r in prog]
    ax.barh(range(len(prog)), vals, color=["C0"] * (len(prog) - 1) + ["0.5"])
    for i, v in enumerate(vals):
        ax.text(v + 8, i, f"{v:.0f}", va="center", fontsize=8)
    ax.set_yticks(range(len(prog)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("TFLOP/s")
    naive = next(r for r in tune["progression"] if r["version"].startswith("v0"))
    ax.set_title(f"fp16 4096^3, one version after another (v0, one output element per program: "
                 f"{naive['tflops']:.1f} TFLOP/s at {naive['size']}^3)", fontsize=9)
    ax.set_xlim(0, max(vals) * 1.12)
    fig.tight_layout()
    save(fig, "04_progression.png")


def fig_block_sweep(tune: dict) -> None:
    sweep = [r for r in tune["sweep"] if r["dtype"] == "float16" and r["config"] != "cuBLAS"]
    sizes = [4096, 1793]
    configs = [c for c in dict.fromkeys(r["config"] for r in sweep if r["size"] == 4096)]
    fig, ax = plt.subplots(figsize=(11, 3.6))
    width = 0.4
    for j, s in enumerate(sizes):
        vals = [next((r["tflops"] for r in sweep if r["config"] == c and r["size"] == s), 0) for c in configs]
        ax.bar([i + (j - 0.5) * width for i in range(len(configs))], vals, width, label=f"{s}^3" + (" (padded)" if s % 16 else ""))
        cub = next(r["tflops"] for r in tune["sweep"] if r["config"] == "cuBLAS" and r["size"] == s and r["dtype"] == "float16")
        ax.axhline(cub, color=f"C{j}", ls="--", lw=1)
        ax.text(len(configs) - 0.5, cub + 8, f"cuBLAS {s}^3", fontsize=7, ha="right", color=f"C{j}")
    ax.set_xticks(range(len(configs)), [c.replace(" s", "\ns") for c in configs], fontsize=7)
    ax.set_ylabel("TFLOP/s")
    ax.set_title("Block-size sweep, fp16 (BLOCK_M x BLOCK_N x BLOCK_K, pipeline stages, warps)", fontsize=9)
    ax.legend(fontsize=8, loc="upper right", bbox_to_anchor=(0.85, 1.0))
    fig.tight_layout()
    save(fig, "04_block_sweep.png")


def fig_sizes(bench: dict) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, d in zip(axes, ["float16", "bfloat16"]):
        rows = [r for r in bench["rows"] if r["dtype"] == d and len(set(r["shape"])) == 1]
        sizes = sorted({r["shape"][0] for r in rows})
        for impl in ("solution", "cuBLAS"):
            ax.plot(range(len(sizes)), [next(r["tflops"] for r in rows if r["impl"] == impl and r["shape"][0] == s) for s in sizes],
                    marker="o", label=impl)
        ax.set_xticks(range(len(sizes)), [str(s) for s in sizes], fontsize=8, rotation=30)
        ax.set_xlabel("n (an n x n x n product)")
        ax.set_ylabel("TFLOP/s")
        ax.set_ylim(0, 800)
        ax.set_title(f"matmul, {d}", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"{bench['meta']['gpu']} ({bench['meta']['date']}, torch {bench['meta']['torch']}, triton "
                 f"{bench['meta']['triton']}); median of {bench['meta']['reps']} calls, L2 flushed", fontsize=9)
    fig.tight_layout()
    save(fig, "04_sizes.png")


def fig_alignment(tune: dict) -> None:
    rows = tune["alignment"]
    sizes = [r["size"] for r in rows]
    impls = ["cuBLAS", "solution", "solution, no padding (128x256x64)"]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    width = 0.27
    for j, impl in enumerate(impls):
        vals = [r["tflops"].get(impl, 0) for r in rows]
        ax.bar([i + (j - 1) * width for i in range(len(sizes))], vals, width, label=impl.replace("solution", "Triton kernel"))
    ax.set_xticks(range(len(sizes)), [f"{s}\n({'%d-byte' % (2 * s & -(2 * s)) if s % 8 else '16-byte+'} rows)" for s in sizes], fontsize=7)
    ax.set_ylabel("TFLOP/s")
    ax.set_title("fp16 n^3 around 1792: row alignment, not tile count, makes the cliff (Triton kernel pads rows to 16 elements)",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "04_alignment.png")


def fig_waves(tune: dict) -> None:
    rows = tune["waves"]
    sms = tune["meta"]["sms"]
    tiles = [r["tiles"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    axes[0].plot(tiles, [r["ms"] * 1e3 for r in rows], marker="o", label="Triton, 128 x 256 tiles")
    axes[0].plot(tiles, [r["cublas_ms"] * 1e3 for r in rows], marker=".", label="cuBLAS")
    axes[0].set_ylabel("time (us)")
    axes[1].plot(tiles, [r["tflops"] for r in rows], marker="o", label="Triton, 128 x 256 tiles")
    axes[1].plot(tiles, [r["cublas_tflops"] for r in rows], marker=".", label="cuBLAS")
    axes[1].set_ylabel("TFLOP/s")
    for ax in axes:
        for w in range(1, max(tiles) // sms + 1):
            ax.axvline(w * sms, color="gray", ls=":", lw=1)
        ax.set_xlabel(f"tiles of C (M = 8 x tiles, N = K = 4096); dotted: multiples of {sms} SMs")
        ax.legend(fontsize=8)
    fig.suptitle("Wave quantization: fp16, one 128 x 256 tile per SM at a time", fontsize=9)
    fig.tight_layout()
    save(fig, "04_waves.png")


def main() -> None:
    fig_traffic()
    fig_launch_order()
    tune_path, bench_path = RESULTS / "tune_tiling.json", RESULTS / "tiling.json"
    if tune_path.exists():
        tune = json.loads(tune_path.read_text())
        fig_progression(tune)
        fig_block_sweep(tune)
        fig_alignment(tune)
        fig_waves(tune)
    if bench_path.exists():
        fig_sizes(json.loads(bench_path.read_text()))


if __name__ == "__main__":
    main()
