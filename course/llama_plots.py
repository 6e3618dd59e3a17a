"""Figures and tables of module 10 (the Llama block), drawn from results/<gpu>/llama_block.json.

Notebook 10 and lectures/figures/make_10_figures.py both draw with these, so the two show the same thing.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from course.llama import LlamaConfig, work_by_kind

KINDS = ("projections", "attention", "rmsnorm", "rope", "swiglu", "other")
COLORS = {"projections": "#4c72b0", "attention": "#dd8452", "rmsnorm": "#55a868", "rope": "#c44e52",
          "swiglu": "#8172b3", "other": "#937860"}  # fmt: skip
# Measured on an H200 in the design notes: a device copy and cuBLAS bf16 at 8192^3.
COPY_TBPS, MATMUL_TFLOPS = 4.27, 707.0


def speed_of_light_us(cfg: LlamaConfig, batch: int, seq: int, keys: int, weight_bytes: float = 2.0) -> dict[str, float]:
    """Per kind of stage, the time it cannot beat: its FLOPs at the matmul rate or its bytes at copy speed."""
    work = work_by_kind(cfg, batch, seq, keys, weight_bytes)
    return {k: max(f / (MATMUL_TFLOPS * 1e12), b / (COPY_TBPS * 1e12)) * 1e6 for k, (f, b) in work.items()}


def plot_speed_of_light(ax: plt.Axes, cfg: LlamaConfig, cases: dict[str, tuple[int, int, int, float]]) -> None:
    """Stacked bars of each kind's share of the speed-of-light time, one bar per (batch, seq, keys, weight bytes)."""
    names = list(cases)
    left = [0.0] * len(names)
    for kind in KINDS:
        shares = []
        for name in names:
            t = speed_of_light_us(cfg, *cases[name])
            shares.append(100 * t[kind] / sum(t.values()))
        ax.barh(names, shares, left=left, color=COLORS[kind], label=kind)
        left = [a + b for a, b in zip(left, shares)]
    for y, name in enumerate(names):
        total = sum(speed_of_light_us(cfg, *cases[name]).values())
        ax.text(101, y, f"{total:,.0f} µs", va="center", fontsize=8)
    ax.set(xlim=(0, 118), xlabel="% of the block's speed-of-light time")
    ax.invert_yaxis()
    ax.legend(fontsize=7, ncol=6, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)


def _by(rows: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(r[k] for k in keys): r for r in rows}


def plot_prefill(ax: plt.Axes, results: dict[str, Any]) -> None:
    """Speed-up over torch.compile at every prefill size, for eager and the course block."""
    rows = results["prefill"]
    table = _by(rows, "batch", "seq", "impl")
    sizes = sorted({(r["batch"], r["seq"]) for r in rows})
    labels = [f"{b}×{s}" for b, s in sizes]
    impls = [i for i in ("eager", "course") if any(r["impl"] == i for r in rows)]
    width = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        ratios = [table[(b, s, "torch.compile")]["ms"] / table[(b, s, impl)]["ms"] for b, s in sizes]
        ax.bar([x + j * width for x in range(len(sizes))], ratios, width, label=impl)
    ax.axhline(1.0, color="black", linewidth=0.8, label="torch.compile")
    ax.set_xticks([x + width * (len(impls) - 1) / 2 for x in range(len(sizes))], labels, rotation=45, fontsize=8)
    ax.set(xlabel="batch × tokens", ylabel="speed-up over torch.compile", ylim=(0, None))
    ax.legend(fontsize=8)


DECODE_IMPLS = ("eager", "torch.compile", "course", "course W4A16", "eager + CUDA graph", "torch.compile + CUDA graph",
                "course + CUDA graph", "course W4A16 + CUDA graph")  # fmt: skip


def plot_decode(ax: plt.Axes, results: dict[str, Any]) -> None:
    """Microseconds per decode step of the block, per batch size and way of running it."""
    rows = results["decode"]
    table = _by(rows, "batch", "impl")
    batches = sorted({r["batch"] for r in rows})
    impls = [i for i in DECODE_IMPLS if any(r["impl"] == i for r in rows)]
    width = 0.85 / len(impls)
    cmap = plt.get_cmap("tab20")
    for j, impl in enumerate(impls):
        us = [table[(b, impl)]["ms"] * 1e3 if (b, impl) in table else 0.0 for b in batches]
        hatch = "//" if "graph" in impl else None
        ax.bar([x + j * width for x in range(len(batches))], us, width, label=impl, color=cmap(j), hatch=hatch)
    ax.set_xticks([x + width * (len(impls) - 1) / 2 for x in range(len(batches))], [f"batch {b}" for b in batches])
    ax.set(ylabel="µs per decode step (one block)")
    ax.legend(fontsize=7, ncol=2)


def breakdown_ms(results: dict[str, Any], phase: str, batch: int, impl: str) -> dict[str, float]:
    """Milliseconds per kind of stage, each stage timed alone."""
    out = dict.fromkeys(KINDS, 0.0)
    for r in results["breakdown"]:
        if (r["phase"], r["batch"], r["impl"]) == (phase, batch, impl):
            out[r["kind"]] += r["ms"]
    return out


def plot_breakdown(ax: plt.Axes, results: dict[str, Any]) -> None:
    """Stacked bars: where the GPU time of each block goes, eager against the course kernels."""
    cases = sorted({(r["phase"], r["batch"], r["seq"]) for r in results["breakdown"]}, key=lambda c: (c[0] != "prefill", c[1]))
    bars = [(f"{phase} B={b}\n{impl}", breakdown_ms(results, phase, b, impl)) for phase, b, _ in cases
            for impl in ("eager", "course")]  # fmt: skip
    left = [0.0] * len(bars)
    for kind in KINDS:
        shares = [100 * parts[kind] / sum(parts.values()) for _, parts in bars]
        ax.barh([name for name, _ in bars], shares, left=left, color=COLORS[kind], label=kind)
        left = [a + b for a, b in zip(left, shares)]
    for y, (_, parts) in enumerate(bars):
        ax.text(101, y, f"{sum(parts.values()) * 1e3:,.0f} µs", va="center", fontsize=7)
    ax.set(xlim=(0, 122), xlabel="% of the summed stage times (each stage timed alone)")
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(fontsize=7, ncol=6, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)


def amdahl(p: float, s: float) -> float:
    """Speed-up of the whole when a part taking fraction p of its time gets s times faster."""
    return 1.0 / ((1.0 - p) + p / s)


def ablation_ms(results: dict[str, Any], phase: str, batch: int, switches: list[str]) -> float:
    """The block's time with those kernels switched on; in decode, replayed from a CUDA graph, so that what
    is compared is GPU time rather than the host's launch cost."""
    for r in results["ablation"]:
        if (r["phase"], r["batch"], r["switches"]) == (phase, batch, switches):
            return r.get("graph_ms", r["ms"])
    raise KeyError((phase, batch, switches))


def amdahl_rows(results: dict[str, Any], phase: str, batch: int) -> list[dict[str, float | str]]:
    """For each kernel switched on alone: its share p of the eager block, its speed-up s alone, the block's
    speed-up Amdahl's law predicts from those two, and the one measured with the whole block timed."""
    eager = breakdown_ms(results, phase, batch, "eager")
    course = breakdown_ms(results, phase, batch, "course")
    base = ablation_ms(results, phase, batch, [])
    switches = {"rmsnorm": "rmsnorm", "rope": "rope", "attention": "attention", "swiglu": "swiglu", "w4a16": "projections"}
    rows = []
    for switch, kind in switches.items():
        try:
            measured = base / ablation_ms(results, phase, batch, [switch])
        except KeyError:
            continue
        p, s = eager[kind] / sum(eager.values()), eager[kind] / course[kind]
        rows.append({"kernel": switch, "p": p, "s": s, "predicted": amdahl(p, s), "measured": measured})
    return rows


def plot_amdahl(ax: plt.Axes, results: dict[str, Any], phase: str, batch: int) -> None:
    """Amdahl's curves for each kernel's share of the block, with the measured block speed-ups on them."""
    rows = amdahl_rows(results, phase, batch)
    speedups = [0.5 * 1.05**i for i in range(95)]  # 0.5x .. about 50x
    for j, r in enumerate(rows):
        color = plt.get_cmap("tab10")(j)
        ax.plot(speedups, [amdahl(r["p"], s) for s in speedups], color=color,
                label=f"{r['kernel']}: p = {100 * r['p']:.1f}% of the block")  # fmt: skip
        ax.plot([r["s"]], [r["measured"]], "o", color=color)
    ax.axhline(1.0, color="gray", linewidth=0.5)
    ax.set(xscale="log", xlabel="speed-up of the kernel alone, over eager PyTorch's", ylabel="speed-up of the block",
           title=f"Amdahl's law, {phase} batch {batch} (dots: the block measured)")  # fmt: skip
    ax.legend(fontsize=7)


def summary_markdown(results: dict[str, Any]) -> str:
    """The tables that results/<gpu>/llama_block.md and the README show."""
    meta = results["meta"]
    lines = [f"# Llama-3-8B decoder block: {meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, "
             f"{meta['dtype']}, {meta['date']}", "",
             f"`{meta['command']}`. Times are per call of one block, back to back; ratios come from one run.", ""]  # fmt: skip
    if "prefill" in results:
        t = _by(results["prefill"], "batch", "seq", "impl")
        lines += ["## Prefill (causal attention over the whole prompt)", "",
                  "| batch × tokens | eager ms | torch.compile ms | course ms | course / compile | course TFLOP/s |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for b, s in sorted({(r["batch"], r["seq"]) for r in results["prefill"]}):
            e, c, k = t[(b, s, "eager")], t[(b, s, "torch.compile")], t[(b, s, "course")]
            lines.append(f"| {b} × {s} | {e['ms']:.3f} | {c['ms']:.3f} | {k['ms']:.3f} | "
                         f"{c['ms'] / k['ms']:.3f}x | {k['tflops']:.0f} |")  # fmt: skip
        ratios = [t[(b, s, "torch.compile")]["ms"] / t[(b, s, "course")]["ms"] for b, s in {(r["batch"], r["seq"]) for r in results["prefill"]}]
        lines += ["", f"Course block over torch.compile: {min(ratios):.3f}x to {max(ratios):.3f}x "
                  f"(geometric mean {statistics.geometric_mean(ratios):.3f}x; target >= 1.0x).", ""]  # fmt: skip
    if "decode" in results:
        t = _by(results["decode"], "batch", "impl")
        impls = [i for i in DECODE_IMPLS if any(r["impl"] == i for r in results["decode"])]
        kv = results["decode"][0]["kv"]
        ratios = {"W4A16 graph / eager": ("eager", "course W4A16 + CUDA graph"),
                  "W4A16 graph / eager graph": ("eager + CUDA graph", "course W4A16 + CUDA graph"),
                  "W4A16 / eager (no graphs)": ("eager", "course W4A16")}  # fmt: skip
        lines += [f"## Decode (one new token per sequence, a KV cache of {kv}): µs per step", "",
                  "| batch | " + " | ".join(impls) + " | " + " | ".join(ratios) + " |",
                  "|---" * (len(impls) + len(ratios) + 1) + "|"]  # fmt: skip
        for b in sorted({r["batch"] for r in results["decode"]}):
            cells = [f"{t[(b, i)]['ms'] * 1e3:.1f}" if (b, i) in t else "-" for i in impls]
            cells += [f"{t[(b, base)]['ms'] / t[(b, ours)]['ms']:.2f}x" if (b, base) in t and (b, ours) in t else "-"
                      for base, ours in ratios.values()]  # fmt: skip
            lines.append(f"| {b} | " + " | ".join(cells) + " |")
        lines += ["", "Target: decode with W4A16 at least 1.5x eager bf16.", ""]
    return "\n".join(lines) + "\n"


def host_ab_best(folder: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Runs of the host and eager_decode sections kept as FOLDER/<side>_<n>/llama_block.json (side 'before' or
    'after', several runs of each in turn): side -> row -> measure -> the least of the runs."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for path in sorted(folder.glob("*_*/llama_block.json")):
        side, data = path.parent.name.split("_")[0], json.loads(path.read_text())
        rows: list[tuple[str, dict[str, Any]]] = [(r["op"], r) for r in data.get("host") or []]
        rows += [(f"decode B={r['batch']} {r['impl']}", {"us": r["ms"] * 1e3}) for r in data.get("eager_decode") or []]
        for name, r in rows:
            row = found.setdefault(side, {}).setdefault(name, {})
            for k in ("public_us", "op_us", "bare_triton_us", "torch_us", "us"):
                if k in r:
                    row[k] = min(row.get(k, float("inf")), r[k])
    return found


def host_ab_markdown(folder: Path) -> str:
    """The host cost per op and the eager decode block, before and after, as markdown tables."""
    b = host_ab_best(folder)
    before, after = b.get("before", {}), b.get("after", {})
    lines = ["| op | public call before (us) | after (us) | registered op before (us) | after (us) | bare Triton launch (us) | PyTorch (us) |",
             "|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for op, a in after.items():
        if "public_us" in a:
            o = before.get(op, {})
            bare, torch_us = min(a["bare_triton_us"], o.get("bare_triton_us", 1e9)), min(a["torch_us"], o.get("torch_us", 1e9))
            lines.append(f"| {op} | {o.get('public_us', float('nan')):.1f} | {a['public_us']:.1f} | {o.get('op_us', float('nan')):.1f} | "
                         f"{a['op_us']:.1f} | {bare:.1f} | {torch_us:.1f} |")  # fmt: skip
    lines += ["", "| decode step, 4096-token cache | before (us) | after (us) |", "|---|---:|---:|"]
    for name, a in after.items():
        if "us" in a:
            lines.append(f"| {name.removeprefix('decode ')} | {before.get(name, {}).get('us', float('nan')):.1f} | {a['us']:.1f} |")
    return "\n".join(lines)
