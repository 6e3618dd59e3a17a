"""Shared helpers of make_06_figures.py and make_07_figures.py: saving, byte counting, the bandwidth plot."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
PNG_META = {"Software": None}  # no matplotlib version in the file: regenerating changes nothing
VIEWS = {"slice", "view", "expand", "t", "transpose", "unsqueeze", "select", "alias", "detach"}


def save(fig: plt.Figure, name: str, out: Path) -> None:
    path = out / name
    fig.savefig(path, dpi=110, metadata=PNG_META)
    plt.close(fig)
    print(f"wrote {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")


def count_bytes(fn) -> list[tuple[str, int, int]]:
    """(op, bytes read, bytes written) for each ATen op fn runs; views move nothing. Run fn on meta tensors."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    ops: list[tuple[str, int, int]] = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name not in VIEWS:
                read = sum(t.nbytes for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor))
                written = sum(t.nbytes for t in tree_leaves(out) if isinstance(t, torch.Tensor))
                ops.append((name, read, written))
            return out

    with Count():
        fn()
    return ops


def bytes_bars(ax: plt.Axes, label: str, ops: list[tuple[str, int, int]], fused: int, fused_label: str) -> None:
    bottom = 0.0
    for i, ((name, read, written), color) in enumerate(zip(ops, plt.cm.tab20.colors)):
        ax.bar(label, (read + written) / 1e9, bottom=bottom, color=color, label=f"{i + 1}. {name}")
        bottom += (read + written) / 1e9
    ax.bar("fused kernel", fused / 1e9, color="black", label=fused_label)
    ax.set_ylabel("GB moved through HBM")


def load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def fig_bandwidth(results: dict, title: str, xlabel: str, name: str, out: Path) -> None:
    meta, rows = results["meta"], results["rows"]
    copy = meta["copy_gbps"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, pass_ in zip(axes, ("forward", "backward")):
        mine = [r for r in rows if r["pass"] == pass_]
        shapes = sorted({tuple(r["shape"]) for r in mine}, key=math.prod)
        for impl, style in zip(("solution", "torch.compile", "eager"), ("o-", "s--", "^:")):
            gbps = {tuple(r["shape"]): r["gbps"] for r in mine if r["impl"] == impl}
            ax.plot(range(len(shapes)), [gbps[s] for s in shapes], style, label=impl)
        ax.axhline(copy, color="gray", linestyle="--", linewidth=1, label=f"copy ({copy / 1000:.2f} TB/s)")
        ax.set_xticks(range(len(shapes)), ["×".join(map(str, s)) for s in shapes], rotation=25, fontsize=7)
        ax.set(ylim=(0, copy * 1.15), ylabel="GB/s (minimum bytes / time)", xlabel=xlabel, title=f"{title}: {pass_}")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}; bf16, L2 flushed",
                 fontsize=8)
    fig.tight_layout()
    save(fig, name, out)
