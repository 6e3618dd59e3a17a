"""Tables and plots of benchmark results: per assignment a markdown table and a PNG, the solution against
every baseline, and a summary over the course.

Memory-bound calls are drawn as % of the copy bandwidth measured in the same run; compute-bound ones
(rows with TFLOP/s) as TFLOP/s. Needs only matplotlib and the JSON, so it runs on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PNG_META = {"Software": None}  # regenerating from the same JSON gives the same bytes


def markdown_table(results: dict) -> str:
    meta = results["meta"]
    rows = results["rows"]
    flops = any(r.get("tflops") for r in rows)
    # Ratios are against eager PyTorch where it was timed, else against the first library baseline.
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    ref = "eager" if "eager" in impls else next((i for i in impls if i != "solution"), "solution")
    lines = [
        f"Measured on {meta['gpu']} ({meta['date']}; torch {meta['torch']}, triton {meta['triton']}); "
        f"device copy {meta['copy_gbps']:,.0f} GB/s. Median of {meta['reps']} calls, L2 flushed before each."
        + ("".join(f" {name}: {version}." for name, version in meta["anchors"].items()) if meta.get("anchors") else ""),
        "",
        "| pass | shape | dtype | impl | time (us) | " + ("TFLOP/s | " if flops else "") + f"GB/s | % of copy | vs {ref} |",
        "|---|---|---|---|---:|" + ("---:|" if flops else "") + "---:|---:|---:|",
    ]
    # Keyed by dtype too: a suite may time the same shape in several dtypes.
    base_ms = {(r["pass"], tuple(r["shape"]), r["dtype"]): r["ms"] for r in rows if r["impl"] == ref}
    for r in rows:
        base = base_ms.get((r["pass"], tuple(r["shape"]), r["dtype"]))
        ratio = f"{base / r['ms']:.2f}x" if base else ""
        shape = "x".join(map(str, r["shape"]))
        tf = (f"{r['tflops']:,.0f} | " if r.get("tflops") else " | ") if flops else ""
        lines.append(
            f"| {r['pass']} | {shape} | {r['dtype']} | {r['impl']} | {r['ms'] * 1e3:,.1f} | {tf}{r['gbps']:,.0f} | "
            f"{r['pct_copy']:.0f}% | {ratio} |"
        )
    return "\n".join(lines) + "\n"


def plot_results(results: dict, title: str, path: Path) -> Path:
    rows = results["rows"]
    panels = list(dict.fromkeys((r["pass"], r["dtype"]) for r in rows))  # one panel per pass and dtype
    most = max(len({tuple(r["shape"]) for r in rows if (r["pass"], r["dtype"]) == p}) for p in panels)
    cols = min(2, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(cols * max(6.0, 0.55 * most + 2), 4.2 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (name, dtype) in zip(axes.flat, panels):
        sub = [r for r in rows if r["pass"] == name and r["dtype"] == dtype]
        flops = any(r.get("tflops") for r in sub)
        shapes = list(dict.fromkeys(tuple(r["shape"]) for r in sub))
        impls = list(dict.fromkeys(r["impl"] for r in sub))
        width = 0.8 / len(impls)
        others = iter(f"C{k}" for k in (0, 1, 2, 4, 5, 6, 7, 8, 9))  # C3 (red) is the solution's alone
        for i, impl in enumerate(impls):
            values = []
            for shape in shapes:
                match = [r for r in sub if r["impl"] == impl and tuple(r["shape"]) == shape]
                values.append((match[0].get("tflops") if flops else match[0]["pct_copy"]) if match else 0.0)
            xs = [j + (i - (len(impls) - 1) / 2) * width for j in range(len(shapes))]
            ax.bar(xs, values, width, label=impl, color="C3" if impl == "solution" else next(others, "gray"),
                   edgecolor="black" if impl == "solution" else "none")
        ax.set_xticks(range(len(shapes)), ["x".join(map(str, s)) for s in shapes], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("TFLOP/s" if flops else "% of copy bandwidth")
        if not flops:
            ax.axhline(100, color="gray", lw=0.8, ls="--")
        ax.set_title(f"{title}: {name}, {dtype}")
        ax.legend(fontsize=8)
    meta = results["meta"]
    fig.suptitle(f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}", fontsize=9, y=0.995)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata=PNG_META)
    plt.close(fig)
    return path


def replot(folder: Path) -> list[Path]:
    """Rewrite <slug>.md and <slug>.png for every <slug>.json that `bench` wrote in `folder`."""
    written = []
    for path in sorted(folder.glob("*.json")):
        results = json.loads(path.read_text())
        if not isinstance(results, dict) or "rows" not in results or "meta" not in results:
            continue  # grading results and other JSON kept beside the benchmarks
        if not all(isinstance(r, dict) and "impl" in r for r in results["rows"]):
            continue  # an experiment's record (A/B runs, variant sweeps), not a bench table
        path.with_suffix(".md").write_text(markdown_table(results))
        written.append(plot_results(results, path.stem, path.with_suffix(".png")))
    from autograder.specs import SYLLABUS

    (folder / "SUMMARY.md").write_text(summary_table(folder, SYLLABUS))
    return written


def _size(row: dict) -> int:
    n = 1
    for s in row["shape"]:
        n *= s
    return n


def summary_table(folder: Path, slugs: list[str]) -> str:
    """One line per assignment, pass and dtype: the solution at the largest benchmarked size against the
    fastest baseline there, and the worst ratio over the whole sweep (where the solution is weakest)."""
    lines = [
        "| module | pass | dtype | largest size | solution (us) | % of copy or TFLOP/s | fastest baseline there | ratio | lowest ratio in the sweep |",
        "|---|---|---|---|---:|---:|---|---:|---|",
    ]
    dates = set()
    for slug in slugs:
        path = folder / f"{slug}.json"
        if not path.exists():
            continue
        results = json.loads(path.read_text())
        dates.add((results["meta"]["gpu"], results["meta"]["torch"], results["meta"]["triton"], results["meta"]["date"]))
        rows = results["rows"]
        for name in dict.fromkeys(r["pass"] for r in rows):
            for dtype in dict.fromkeys(r["dtype"] for r in rows if r["pass"] == name):
                sub = [r for r in rows if r["pass"] == name and r["dtype"] == dtype]
                groups: dict[tuple, list[dict]] = {}
                for r in sub:
                    groups.setdefault(tuple(r["shape"]), []).append(r)
                ratios = []
                for shape, group in groups.items():
                    sol = next((r for r in group if r["impl"] == "solution"), None)
                    # the baselines: every impl but the copy and the solution's own variants ("solution, TMA")
                    base = [r for r in group if r["impl"] != "copy" and not r["impl"].startswith("solution")]
                    if sol and base:
                        best = min(base, key=lambda r: r["ms"])
                        ratios.append((best["ms"] / sol["ms"], shape, best))
                if not ratios:
                    continue
                largest = max(groups, key=lambda s: _size({"shape": list(s)}))
                ratio, _, best = next(r for r in ratios if r[1] == largest)
                sol = next(r for r in groups[largest] if r["impl"] == "solution")
                rate = f"{sol['tflops']:,.0f} TFLOP/s" if sol.get("tflops") else f"{sol['pct_copy']:.0f}%"
                low, low_shape, low_best = min(ratios, key=lambda r: r[0])
                lines.append(
                    f"| {slug} | {name} | {dtype} | {'x'.join(map(str, largest))} | {sol['ms'] * 1e3:,.1f} | {rate} | "
                    f"{best['impl']} {best['ms'] * 1e3:,.1f} | {ratio:.2f}x | {low:.2f}x vs {low_best['impl']} at "
                    f"{'x'.join(map(str, low_shape))} |"
                )
    # one entry per GPU and versions, with every date a module was measured on (modules are re-run one at a time)
    runs: dict[tuple[str, str, str], list[str]] = {}
    for g, t, tr, d in sorted(dates):
        runs.setdefault((g, t, tr), []).append(d)
    head = "; ".join(f"{g}, torch {t}, triton {tr}, {' and '.join(ds)}" for (g, t, tr), ds in runs.items())
    note = " (each module's date is in its JSON)" if any(len(ds) > 1 for ds in runs.values()) else ""
    return f"Measured on {head}{note}. Ratios above 1 mean the solution is faster.\n\n" + "\n".join(lines) + "\n"
