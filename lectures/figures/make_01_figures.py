"""Draw the figures of lecture 01 (profiling) into lectures/figures/01_*.png from committed H200 results.

    python lectures/figures/make_01_figures.py

Reads results/h200/profiling.json (written on a GPU by scripts/profiling_experiments.py). Needs only
matplotlib; runs on a CPU in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
PNG_META = {"Software": None}  # no matplotlib version in the file: regenerating changes nothing


def save(fig: plt.Figure, name: str) -> None:
    fig.savefig(HERE / name, dpi=110, metadata=PNG_META)
    plt.close(fig)
    print(f"wrote lectures/figures/{name}")


def matmul_tflops(prof: dict) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for dtype, label in (("bfloat16", "bf16 (tensor cores)"), ("tf32", "TF32 (tensor cores)"), ("float32", "float32 (no tensor cores)")):
        rows = [r for r in prof["matmul"] if r["dtype"] == dtype]
        ax.plot([r["n"] for r in rows], [r["tflops"] for r in rows], marker="o", label=label)
    ax.axhline(989, color="gray", ls="--", lw=1, label="bf16 datasheet peak, 989")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (square n x n matrices)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"Matmul throughput, {prof['meta']['gpu']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "01_matmul_tflops.png")


def roofline(prof: dict) -> None:
    bw = prof["copy_gbps"] * 1e9
    peak = max(r["tflops"] for r in prof["matmul"] if r["dtype"] == "bfloat16") * 1e12
    intensity = [10 ** (k / 20) for k in range(-40, 81)]
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(intensity, [min(peak, i * bw) / 1e12 for i in intensity], color="black", label="roofline (measured)")
    ax.plot(intensity, [min(989e12, i * 4.8e12) / 1e12 for i in intensity], color="gray", ls=":", label="datasheet")
    add_us = next(k["us_per_iter"] for k in prof["profiler_kernels"]["add"] if "elementwise" in k["name"])
    points = [("add fp32", 4096 * 4096, 3 * 4096 * 4096 * 4, add_us * 1e-6),
              ("GEMV bf16 (one token)", 2 * 14336 * 4096, (14336 * 4096 + 4096 + 14336) * 2, None)]
    for r in prof["matmul"]:
        if r["dtype"] == "bfloat16":
            n = r["n"]
            points.append((f"{n // 1024}K" if n > 1024 else "matmul 1K", 2 * n**3, 3 * n * n * 2, r["ms"] * 1e-3))
    for name, flops, nbytes, seconds in points:
        ai = flops / nbytes
        if seconds is None:
            ax.scatter([ai], [min(peak, ai * bw) / 1e12], marker="o", facecolors="none", edgecolors="tab:orange")
            ax.annotate(name + " (bound)", (ai, min(peak, ai * bw) / 1e12), fontsize=7, xytext=(4, -10), textcoords="offset points")
        else:
            ax.scatter([ai], [flops / seconds / 1e12], marker="x", color="tab:blue")
            ax.annotate(name, (ai, flops / seconds / 1e12), fontsize=7, xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"Roofline, {prof['meta']['gpu']}: ridge at {peak / bw:.0f} FLOP/byte\n"
                 "x: measured (bf16 square matmuls 1K..16K, fp32 add); o: bound only", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save(fig, "01_roofline.png")


def mlp_scaling(prof: dict) -> None:
    rows = prof["mlp_scaling"]["rows"][1:]
    labels = [f"{r['knob']} x{r['factor']}" for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["expected_ratio"] for r in rows], 0.4, label="expected (FLOPs)", color="lightgray")
    ax.bar([x + 0.2 for x in xs], [r["actual_ratio"] for r in rows], 0.4, label="measured", color="tab:blue")
    ax.set_yscale("log", base=2)
    ax.set_xticks(list(xs), labels, rotation=30, fontsize=8)
    ax.set_ylabel("time / base time")
    base = prof["mlp_scaling"]["base"]
    ax.set_title(f"MLP training steps, base {base} (bf16)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "01_mlp_scaling.png")


def main() -> None:
    prof = json.loads((REPO_ROOT / "results" / "h200" / "profiling.json").read_text())
    matmul_tflops(prof)
    roofline(prof)
    mlp_scaling(prof)


if __name__ == "__main__":
    main()
