"""Draw the figures of lecture 08 (flash attention) into lectures/figures/08_*.png.

    python lectures/figures/make_08_figures.py                    # committed results
    python lectures/figures/make_08_figures.py --results FILE     # another results JSON

Needs only matplotlib; runs on a CPU in a few seconds. The speed plots come from results/h200/
flash_attention.json (written by `python -m autograder bench flash_attention` on a GPU); the memory
and tiling figures from the arithmetic below.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
PNG_META = {"Software": None}  # no matplotlib version in the file: regenerating changes nothing
H200_GB = 141
STYLE = {"solution": ("C3", "o-"), "SDPA flash": ("C0", "s-"), "SDPA cuDNN": ("C2", "^-"),
         "eager PyTorch": ("C7", "x--"), "SDPA (enable_gqa)": ("C2", "^-")}  # fmt: skip


def save(fig: plt.Figure, name: str, out: Path) -> None:
    path = out / name
    fig.savefig(path, dpi=130, metadata=PNG_META)
    plt.close(fig)
    print(f"wrote {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")


def memory(out: Path) -> None:
    """Bytes of q, k, v, o against the score matrix, for one sequence and 32 heads of dimension 128, bf16."""
    seqs = [2**i for i in range(10, 18)]
    heads, dim = 32, 128
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.loglog(seqs, [4 * heads * s * dim * 2 / 1e9 for s in seqs], "o-", label="q, k, v, o (linear in S)")
    ax.loglog(seqs, [heads * s * s * 2 / 1e9 for s in seqs], "o-", label="one score matrix S (quadratic in S)")
    ax.axhline(H200_GB, color="gray", ls="--", label=f"H200 memory ({H200_GB} GB)")
    ax.set_xlabel("sequence length S (tokens)")
    ax.set_ylabel("GB, batch 1, 32 heads, bf16")
    ax.set_title("What textbook attention stores", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "08_memory.png", out)


def causal_blocks(out: Path) -> None:
    """The tiles of a causal score matrix: skipped, computed without a mask, computed with one."""
    n = 8
    kind = [[0 if j > i else (1 if j < i else 2) for j in range(n)] for i in range(n)]
    fig, ax = plt.subplots(figsize=(4.2, 3.8))
    ax.imshow(kind, cmap=ListedColormap(["#f2f2f2", "#4c72b0", "#dd8452"]))
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xlabel("key block j (BLOCK_N keys)")
    ax.set_ylabel("query block i (BLOCK_M queries)")
    ax.set_title("causal: skipped (grey), full (blue), diagonal (masked)", fontsize=9)
    for i in range(n):
        ax.text(i, i, "mask", ha="center", va="center", fontsize=6, color="white")
    fig.tight_layout()
    save(fig, "08_causal_blocks.png", out)


def tflops(results: dict, passes: tuple[str, str], name: str, title: str, out: Path) -> None:
    meta = results["meta"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, pass_name in zip(axes, passes):
        impls: dict[str, list] = {}
        for r in results["rows"]:
            if r["pass"] == pass_name:
                impls.setdefault(r["impl"], []).append(r)
        for impl, rows in impls.items():
            rows.sort(key=lambda r: r["shape"][2])
            color, style = STYLE.get(impl, ("k", "o-"))
            ax.plot([r["shape"][2] for r in rows], [r["tflops"] for r in rows], style, color=color, label=impl)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length S")
        ax.set_title(pass_name, fontsize=10)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("TFLOP/s (bf16, batch 4, 32 heads, D 128)")
    axes[0].legend(fontsize=8)
    versions = f"torch {meta['torch']}, triton {meta['triton']}, {meta['date']}"
    fig.suptitle(f"{title} on {meta['gpu']} ({versions})", fontsize=9)
    fig.tight_layout()
    save(fig, name, out)


def decode(results: dict, out: Path) -> None:
    meta = results["meta"]
    impls: dict[str, list] = {}
    for r in results["rows"]:
        if r["pass"].startswith("decode"):
            impls.setdefault(r["impl"], []).append(r)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for impl, rows in impls.items():
        seq = [int(r["pass"].split("=")[1]) for r in rows]
        color, style = STYLE.get(impl, ("k", "o-"))
        ax.plot(seq, [r["gbps"] / 1e3 for r in rows], style, color=color, label=impl)
    ax.axhline(meta["copy_gbps"] / 1e3, color="gray", ls="--", label="device copy (read + write)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("keys in the cache, Sk")
    ax.set_ylabel("TB/s of q, k, v, o")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Decode, batch 8, 32 query heads over 8 KV heads, D 128, bf16 ({meta['gpu']})", fontsize=9)
    fig.tight_layout()
    save(fig, "08_decode.png", out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, default=REPO_ROOT / "results" / "h200" / "flash_attention.json")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    memory(args.out)
    causal_blocks(args.out)
    if not args.results.exists():
        print(f"no {args.results}: the speed figures need `python -m autograder bench flash_attention` on a GPU")
        return 0
    results = json.loads(args.results.read_text())
    tflops(results, ("forward", "forward causal"), "08_forward.png", "Attention forward", args.out)
    tflops(results, ("backward", "backward causal"), "08_backward.png",
           "Attention backward (2.5x the forward's FLOPs)", args.out)
    decode(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
