"""Draw the figures of lecture 06 (RoPE) into lectures/figures/06_*.png.

    python lectures/figures/make_06_figures.py

Runs on a CPU in seconds. The bandwidth and sweep figures come from the committed H200 measurements
(results/h200/rope.json and tune_rope_swiglu_final.json); the others from the formulas and byte counts below.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common_06_07 import HERE, REPO_ROOT, bytes_bars, count_bytes, fig_bandwidth, load, plt, save  # noqa: E402


def fig_rotation(out: Path, base: float = 10000.0, head_dim: int = 128) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    ax = axes[0]
    circle = [(math.cos(t / 50 * 2 * math.pi), math.sin(t / 50 * 2 * math.pi)) for t in range(51)]
    ax.plot(*zip(*circle), color="lightgray")
    x0 = (0.9, 0.35)
    for pos, color in zip(range(0, 6), plt.cm.viridis([i / 5 for i in range(6)])):
        th = pos * 0.45
        c, s = math.cos(th), math.sin(th)
        y = (x0[0] * c - x0[1] * s, x0[1] * c + x0[0] * s)
        ax.annotate("", xy=y, xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": color, "lw": 1.6})
        ax.text(y[0] * 1.12, y[1] * 1.12, f"s={pos}", fontsize=7, ha="center", va="center", color=color)
    ax.set(aspect="equal", xlim=(-1.3, 1.3), ylim=(-1.3, 1.3), title="one pair (x_i, x_{i+D/2}) at positions s = 0..5")
    ax.set_xlabel("x_i"), ax.set_ylabel("x_{i+D/2}")
    ax = axes[1]
    pairs = range(head_dim // 2)
    for b, style in ((10000.0, "-"), (500000.0, "--")):
        ax.semilogy(pairs, [2 * math.pi * b ** (2 * i / head_dim) for i in pairs], style, label=f"base {b:g}")
    ax.axhline(8192, color="gray", linewidth=0.8, linestyle=":", label="8192 positions")
    ax.set(xlabel="pair i", ylabel="wavelength 2π/ω_i (positions)", title=f"D = {head_dim}: one frequency per pair")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "06_rotation.png", out)


def fig_pairings(out: Path, d: int = 8) -> None:
    fig, axes = plt.subplots(2, 1, figsize=(7, 3.2))
    for ax, (title, pairs) in zip(axes, (
        ("rotate-half (GPT-NeoX, Llama in transformers): x_i with x_{i+D/2}", [(i, i + d // 2) for i in range(d // 2)]),
        ("interleaved (RoFormer, GPT-J, Meta's LLaMA code): x_{2i} with x_{2i+1}", [(2 * i, 2 * i + 1) for i in range(d // 2)]),
    )):
        colors = plt.cm.tab10.colors
        for k, (a, b) in enumerate(pairs):
            for j in (a, b):
                ax.add_patch(plt.Rectangle((j, 0), 0.9, 0.6, color=colors[k], alpha=0.8))
                ax.text(j + 0.45, 0.3, f"{j}", ha="center", va="center", fontsize=9, color="white")
            mid, width = (a + b) / 2 + 0.45, b - a
            ax.add_patch(matplotlib_arc(mid, 0.6, width, colors[k]))
        ax.set(xlim=(-0.2, d + 0.1), ylim=(-0.1, 0.6 + d / 4), title=title)
        ax.title.set_fontsize(9)
        ax.axis("off")
    fig.tight_layout()
    save(fig, "06_pairings.png", out)


def matplotlib_arc(mid: float, y: float, width: float, color: tuple) -> object:
    from matplotlib.patches import Arc

    return Arc((mid, y), width, width / 2, theta1=0, theta2=180, color=color, lw=1.5)


def fig_bytes(out: Path, shape: tuple[int, int, int, int] = (1, 32, 8192, 128)) -> None:
    import torch

    sys.path.insert(0, str(REPO_ROOT))
    from autograder.specs.rope import eager_baseline, forward_bytes

    x = torch.empty(shape, dtype=torch.bfloat16, device="meta")
    table = torch.empty(shape[2], shape[3] // 2, device="meta")
    ops = count_bytes(lambda: eager_baseline({"x": x, "cos": table, "sin": table}, {}))
    fused = forward_bytes({"shape": list(shape), "dtype": "bfloat16"})
    fig, ax = plt.subplots(figsize=(6, 3.6))
    bytes_bars(ax, "eager PyTorch", ops, fused, "fused: x and tables in, y out")
    total = sum(r + w for _, r, w in ops)
    ax.set_title(f"RoPE forward {'×'.join(map(str, shape))} bf16: {total / 1e9:.2f} GB vs {fused / 1e9:.2f} GB", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    save(fig, "06_bytes_moved.png", out)


def fig_decode_sweep(sweep: dict, out: Path) -> None:
    rows = [r for r in sweep["rope_forward_sweep"] if r["shape"] == [8, 32, 1, 128]]
    loop = sorted((r["config"][1], r["us"]) for r in rows if r["variant"] == "headloop")
    tile = sorted((r["config"][1], r["us"]) for r in rows if r["variant"] == "3d")
    flat = min((r["us"], r["config"]) for r in rows if r["variant"] == "rows")
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot([h for h, _ in loop], [us for _, us in loop], "o-", label="head loop: load, store, next head")
    ax.plot([h for h, _ in tile], [us for _, us in tile], "s--", label="3-D tile: all heads' loads at once")
    ax.axhline(flat[0], color="black", linestyle=":", label=f"rows kernel, best ({flat[1][0]} rows, {flat[1][1]} warps)")
    ax.set(xscale="log", xlabel="heads per program", ylabel="µs (L2 flushed)",
           title="RoPE at decode, 8 × 32 heads × 1 position × 128, H200", ylim=(0, None))
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, "06_decode_sweep.png", out)


def main() -> None:
    out = HERE
    fig_rotation(out)
    fig_pairings(out)
    fig_bytes(out)
    results = load(REPO_ROOT / "results" / "h200" / "rope.json")
    if results:
        fig_bandwidth(results, "RoPE", "shape (B × H × S × D)", "06_bandwidth.png", out)
    sweep = load(REPO_ROOT / "results" / "h200" / "tune_rope_swiglu_final.json")
    if sweep:
        fig_decode_sweep(sweep, out)


if __name__ == "__main__":
    main()
