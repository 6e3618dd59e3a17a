"""Draw the figures of lecture 09 (weight-only quantized matmul) into lectures/figures/09_*.png.

    python lectures/figures/make_09_figures.py                    # committed results, if any
    python lectures/figures/make_09_figures.py --results FILE     # another bench results JSON

Needs matplotlib and torch (CPU); runs in a few seconds. The time-against-M plot is drawn only when
measurements exist (results/h200/quant_matmul.json, written by `python -m autograder bench quant_matmul`
on a GPU); the other figures come from the model's shapes and from quantizing a random matrix here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
PNG_META = {"Software": None}  # no matplotlib version in the file: regenerating changes nothing
COPY_TBPS = 4.3  # device-to-device copy on an H200, measured for the course

# Llama-3-8B: the weights one decoding step reads (the embedding is a lookup, the output layer is not)
HIDDEN, INTER, KV, VOCAB, LAYERS = 4096, 14336, 1024, 128256, 32
WEIGHTS = LAYERS * (2 * HIDDEN * HIDDEN + 2 * KV * HIDDEN + 3 * INTER * HIDDEN) + VOCAB * HIDDEN


def save(fig: plt.Figure, name: str, out: Path) -> None:
    path = out / name
    fig.savefig(path, dpi=130, metadata=PNG_META)
    plt.close(fig)
    print(f"wrote {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")


def bytes_per_token(out: Path) -> None:
    formats = [("bf16", 16.0), ("int8\nper channel", 8.0 + 16 / HIDDEN), ("int4\nG = 128", 4.0 + 16 / 128),
               ("int4\nG = 32", 4.0 + 16 / 32)]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    gb = [WEIGHTS * bits / 8 / 1e9 for _, bits in formats]
    bars = ax.bar([name for name, _ in formats], gb, color=["#999999", "#4c72b0", "#dd8452", "#c44e52"])
    for bar, g in zip(bars, gb):
        ax.text(bar.get_x() + bar.get_width() / 2, g, f"{g:.1f} GB\n{g / COPY_TBPS:.2f} ms", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("weights read per token (GB)")
    ax.set_ylim(0, max(gb) * 1.3)
    ax.set_title(f"Llama-3-8B, one decoding step: {WEIGHTS / 1e9:.2f} B weights; time floor at {COPY_TBPS} TB/s", fontsize=9)
    fig.tight_layout()
    save(fig, "09_bytes_per_token.png", out)


def group_error(out: Path) -> None:
    """Relative error of the weights and of a layer's output against bits per weight."""
    g = torch.Generator().manual_seed(9)
    n, k = 1024, 4096
    w = torch.randn(n, k, generator=g) * 0.02 * (1 + 3 * (torch.rand(n, 1, generator=g) < 0.05))
    x = torch.randn(64, k, generator=g)
    y = x @ w.T
    points = []
    s8 = w.abs().amax(dim=1, keepdim=True) / 127
    w8 = torch.round(w / s8).clamp(-127, 127) * s8
    points.append(("int8, per channel", 8 + 16 / k, w8))
    for group in (k, 512, 256, 128, 64, 32, 16):
        grp = w.reshape(n, k // group, group)
        s = grp.abs().amax(dim=2, keepdim=True) / 7
        wq = ((torch.round(grp / s) + 8).clamp(0, 15) - 8) * s
        points.append((f"G = {group}" if group < k else "int4, per channel", 4 + 16 / group, wq.reshape(n, k)))
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for label, bits, wq in points:
        ew = ((wq - w).norm() / w.norm()).item()
        ey = ((x @ wq.T - y).norm() / y.norm()).item()
        ax.scatter(bits, ew, color="#4c72b0", zorder=3)
        ax.scatter(bits, ey, color="#dd8452", marker="x", zorder=3)
        ax.annotate(label, (bits, ew), textcoords="offset points", xytext=(5, 4), fontsize=7)
    ax.scatter([], [], color="#4c72b0", label="weights")
    ax.scatter([], [], color="#dd8452", marker="x", label="layer output (64 x 4096 @ 4096 x 1024)")
    ax.set_yscale("log")
    ax.set_xlabel("bits per weight, scales (16 bits each) included")
    ax.set_ylabel("relative error (Frobenius)")
    ax.set_title("Round-to-nearest quantization of a random layer", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save(fig, "09_group_error.png", out)


def word_layout(out: Path) -> None:
    """One 32-bit word of w_packed.view(int32): 8 nibbles, and the exact-float trick on one of them."""
    fig, ax = plt.subplots(figsize=(7.2, 2.4))
    for i in range(8):
        x0 = 7 - i  # bit 31 on the left
        ax.add_patch(Rectangle((x0, 1), 1, 0.8, facecolor="#dd8452" if i % 2 else "#4c72b0", alpha=0.35, edgecolor="k"))
        ax.text(x0 + 0.5, 1.4, f"k = 8j+{i}", ha="center", va="center", fontsize=8)
        ax.text(x0 + 0.5, 1.9, f"bits {4 * i + 3}..{4 * i}", ha="center", va="bottom", fontsize=6)
    for b in range(4):
        ax.text(7 - 2 * b - 0.0, 0.85, f"byte {4 * 0 + b}: (k odd | k even)", ha="center", va="top", fontsize=6)
    ax.text(0, 0.35, "nibble i, left in place:  (word | 0x4B000000) & (0x4B000000 | 0xF << 4i)  is the float 2^23 + q * 16^i;",
            fontsize=7)
    ax.text(0, 0.08, "one float subtract of (2^23 + 8 * 16^i) leaves (q - 8) * 16^i exactly; x is multiplied by 16^-i instead",
            fontsize=7)
    ax.set_xlim(-0.1, 8.1)
    ax.set_ylim(0, 2.3)
    ax.axis("off")
    ax.set_title("w_packed viewed as int32: word j of a row holds k = 8j .. 8j + 7 (little-endian bytes)", fontsize=9)
    fig.tight_layout()
    save(fig, "09_word_layout.png", out)


def time_vs_m(results: dict, out: Path) -> None:
    rows = [r for r in results["rows"] if r["pass"] == "w4a16" and tuple(r["shape"][1:]) == (4096, 14336)]
    meta = results["meta"]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for impl, style in (("solution", "o-"), ("cuBLAS fp16", "s--"), ("torch int4 (bf16)", "^:")):
        pts = sorted((r["shape"][0], r["ms"] * 1e3) for r in rows if r["impl"] == impl)
        ax.plot([m for m, _ in pts], [t for _, t in pts], style, label=impl)
    floor = (4096 * 14336 / 2) / (COPY_TBPS * 1e12) * 1e6
    ax.axhline(floor, color="gray", lw=0.8, ls="-.")
    ax.text(1, floor * 1.05, f"reading 4-bit weights at {COPY_TBPS} TB/s: {floor:.1f} µs", fontsize=7, color="gray")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("M (rows of activations)")
    ax.set_ylabel("time per call (µs), median, L2 flushed")
    ax.set_title(f"W4A16, K=4096, N=14336 on {meta['gpu']} (torch {meta['torch']}, triton {meta['triton']})", fontsize=8)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    save(fig, "09_time_vs_m.png", out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, default=REPO_ROOT / "results" / "h200" / "quant_matmul.json")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    bytes_per_token(args.out)
    group_error(args.out)
    word_layout(args.out)
    if args.results.exists():
        time_vs_m(json.loads(args.results.read_text()), args.out)
    else:
        print(f"no {args.results}: the time-against-M plot needs GPU measurements")


if __name__ == "__main__":
    main()
