"""Draw the figures of lecture 07 (SwiGLU) into lectures/figures/07_*.png.

    python lectures/figures/make_07_figures.py

Runs on a CPU in seconds. The bandwidth and decode figures come from the committed H200 measurements
(results/h200/swiglu.json and tune_rope_swiglu_final.json); the others from the formulas and byte counts below.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common_06_07 import HERE, REPO_ROOT, bytes_bars, count_bytes, fig_bandwidth, load, plt, save  # noqa: E402


def fig_silu(out: Path) -> None:
    import torch
    import torch.nn.functional as F

    g = torch.linspace(-6, 6, 400, dtype=torch.float64)
    s = torch.sigmoid(g)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.3))
    axes[0].plot(g, F.silu(g), label="silu(g) = g σ(g)")
    axes[0].plot(g, s, "--", label="σ(g)")
    axes[0].plot(g, F.relu(g), ":", label="relu(g)")
    axes[0].set(ylim=(-1, 6), xlabel="g", title="the activations")
    axes[1].plot(g, s * (1 + g * (1 - s)), label="silu'(g) = s (1 + g (1 − s))")
    axes[1].plot(g, s * (1 - s), "--", label="σ'(g) = s (1 − s)")
    axes[1].set(xlabel="g", title="their derivatives (s = σ(g))")
    for ax in axes:
        ax.axhline(0, color="gray", linewidth=0.5)
        ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "07_silu.png", out)


def fig_bytes(out: Path, shape: tuple[int, int] = (8192, 14336)) -> None:
    import torch
    import torch.nn.functional as F

    gate = torch.empty(shape, dtype=torch.bfloat16, device="meta")
    up = torch.empty(shape, dtype=torch.bfloat16, device="meta")
    dy = torch.empty(shape, dtype=torch.bfloat16, device="meta")
    fwd = count_bytes(lambda: F.silu(gate) * up)
    g, u = gate.clone().requires_grad_(), up.clone().requires_grad_()
    y = F.silu(g) * u
    bwd = count_bytes(lambda: torch.autograd.grad(y, (g, u), dy))
    bwd = [op for op in bwd if op[0] not in ("ones_like", "empty_like")]
    one = gate.nbytes
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    bytes_bars(axes[0], "eager PyTorch", fwd, 3 * one, "fused: gate, up in; out out")
    bytes_bars(axes[1], "eager PyTorch", bwd, 5 * one, "fused: gate, up, dy in; dgate, dup out")
    for ax, ops, fused, title in ((axes[0], fwd, 3 * one, "forward"), (axes[1], bwd, 5 * one, "backward")):
        total = sum(r + w for _, r, w in ops)
        ax.set_title(f"SwiGLU {title} {shape[0]}×{shape[1]} bf16: {total / one:.0f} passes vs {fused // one}", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, "07_bytes_moved.png", out)


def fig_rounding(out: Path) -> None:
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, str(REPO_ROOT))
    from autograder.specs.swiglu import TOLERANCES

    u = 2.0**-8
    gen = torch.Generator().manual_seed(1)
    gate = (torch.randn(1 << 20, generator=gen) * 2 - 0.3).bfloat16()
    up = torch.randn(1 << 20, generator=gen).bfloat16()
    ref = F.silu(gate.double()) * up.double()
    gf, uf = gate.float(), up.float()
    cands = {
        "float32 math, one rounding": (gf * torch.sigmoid(gf) * uf).bfloat16(),
        "F.silu(gate) * up in bf16 (eager)": F.silu(gate) * up,
        "gate * up in bf16, then the activation": ((gf * uf).bfloat16().float() * torch.sigmoid(gf)).bfloat16(),
    }
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    keep = ref.abs() > 1e-30
    for name, out_ in cands.items():
        rel = ((out_.double() - ref).abs() / ref.abs())[keep] / u
        ax.hist(rel.clamp(max=2.5).numpy(), bins=125, histtype="step", log=True, label=name)
    ax.axvline(TOLERANCES["bfloat16"].rtol / u, color="red", linestyle="--", label="bf16 rtol = 1.5u")
    ax.set(xlabel="relative error in units of u = 2^-8", ylabel="elements (of 2^20)", title="bf16 SwiGLU: one rounding or two")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, "07_rounding.png", out)


def fig_decode(tune: dict, out: Path) -> None:
    d = tune["decode_swiglu"]
    names = ["bandwidth floor"] + [f"GPU: {r['impl']}" for r in d["rows"]] + ["CUDA graph replay (per call)"]
    names += [f"host: {r['impl']}" for r in d["rows"]]
    values = [d["floor_us"]] + [r["gpu_us"] for r in d["rows"]] + [d["graph_us_per_call"]]
    values += [r["host_us_per_call"] for r in d["rows"]]
    colors = ["black"] + ["tab:blue"] * len(d["rows"]) + ["tab:green"] + ["tab:orange"] * len(d["rows"])
    fig, ax = plt.subplots(figsize=(7.5, 4))
    ax.barh(names[::-1], values[::-1], color=colors[::-1])
    for i, v in enumerate(values[::-1]):
        ax.text(v + 0.3, i, f"{v:.1f}", va="center", fontsize=7)
    ax.set(xlabel="µs per call", title=f"SwiGLU 16 × 14336 bf16 on {tune['meta']['gpu']}: launch-bound")
    ax.title.set_fontsize(9)
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    save(fig, "07_decode.png", out)


def main() -> None:
    out = HERE
    fig_silu(out)
    fig_bytes(out)
    fig_rounding(out)
    results = load(REPO_ROOT / "results" / "h200" / "swiglu.json")
    if results:
        fig_bandwidth(results, "SwiGLU", "shape (tokens × hidden)", "07_bandwidth.png", out)
    tune = load(REPO_ROOT / "results" / "h200" / "tune_rope_swiglu_final.json")
    if tune:
        fig_decode(tune, out)


if __name__ == "__main__":
    main()
