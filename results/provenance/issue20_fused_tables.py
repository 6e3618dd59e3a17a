"""Write results/<gpu>/fused_projections.md from the committed runs of 2026-11-28 (no GPU needed):
w4a16_plan_ab.json (the planned W4A16 call against the launcher before it, and the eager decode step with
separate and fused projections) and ro_fused.json (decode under torch.compile reduce-overhead).

    python results/provenance/issue20_fused_tables.py"""
import json, statistics
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent


def gpu_tables(folder: Path) -> str:
    ab = json.loads((folder / "w4a16_plan_ab.json").read_text())
    ro = json.loads((folder / "ro_fused.json").read_text())
    m = ab["meta"]
    lines = [f"# Fused projections and the planned W4A16 call: {m['gpu']}, torch {m['torch']}, triton {m['triton']}, "
             f"bfloat16, {m['date']}", "",
             "Commands: `python results/provenance/w4a16_plan_ab.py OUT BEFORE` (BEFORE: solutions/quant_matmul/kernels.py "
             "of 5abdd3a, loaded beside this tree's) and `python results/provenance/ro_fused.py OUT`; this page: "
             "`python results/provenance/issue20_fused_tables.py`. Fused: q, k, v as one projection and gate, up as "
             "another (`course.llama.fuse_projections`), for the PyTorch block too where it says so.", "",
             "## Host time per W4A16 public call (us; 7 rounds in turn of 200 queued calls: best, median in brackets)", "",
             "| M | N | before | planned | saved | F.linear |", "|---:|---:|---:|---:|---:|---:|"]
    for r in ab["host"]:
        lines.append(f"| {r['M']} | {r['N']} | {r['before_best_us']:.1f} ({r['before_median_us']:.1f}) | "
                     f"{r['planned_best_us']:.1f} ({r['planned_median_us']:.1f}) | {r['before_best_us'] - r['planned_best_us']:.1f} | "
                     f"{r['F.linear_best_us']:.1f} ({r['F.linear_median_us']:.1f}) |")
    t: dict = {}
    for r in ab["eager_decode"]:
        name = r["impl"] if r["impl"].startswith("eager") else f"{r['impl']} ({r['launcher']})"
        t.setdefault(r["batch"], {}).setdefault(name, []).append(r["ms"] * 1e3)
    cols = ["eager", "eager, fused", "course W4A16 (before)", "course W4A16 (planned)", "course W4A16, fused (before)",
            "course W4A16, fused (planned)"]
    lines += ["", "## Eager decode step, 4096-token cache (us per block; best of 3 rounds in turn, median in brackets)", "",
              "| batch | " + " | ".join(cols) + " | fused planned / eager | fused planned / eager fused |",
              "|---:|" + "---:|" * (len(cols) + 2)]
    for batch, got in sorted(t.items()):
        best = {c: min(v) for c, v in got.items()}
        med = {c: statistics.median(v) for c, v in got.items()}
        cells = [f"{best[c]:.1f} ({med[c]:.1f})" for c in cols]
        f = "course W4A16, fused (planned)"
        lines.append(f"| {batch} | " + " | ".join(cells) + f" | {best['eager'] / best[f]:.2f}x ({med['eager'] / med[f]:.2f}x) | "
                     f"{best['eager, fused'] / best[f]:.2f}x ({med['eager, fused'] / med[f]:.2f}x) |")
    names = ["compile RO", "course W4A16 compile RO, fused", "compile RO, no trees", "compile RO, no trees, fused",
             "course W4A16 compile RO, no trees", "course W4A16 compile RO, no trees, fused"]
    lines += ["", "## Decode under torch.compile(mode=\"reduce-overhead\"), 4096-token cache (us per block, one run)", "",
              "With and without Inductor's CUDA graph trees; the course blocks use the planned W4A16 call.", "",
              "| batch | " + " | ".join(names) + " | course fused / compile RO | same, no trees | same, no trees, against fused PyTorch |",
              "|---:|" + "---:|" * (len(names) + 3)]
    for key in [k for k in ro if k.startswith("batch_")]:
        got = {r["impl"]: r["ms"] * 1e3 for r in ro[key] or []}
        if not got:
            continue
        batch = ro[key][0]["batch"]
        ratio = lambda a, b: f"{got[a] / got[b]:.2f}x" if a in got and b in got else "-"  # noqa: E731
        lines.append(f"| {batch} | " + " | ".join(f"{got[n]:.1f}" if n in got else "-" for n in names) + " | "
                     f"{ratio('compile RO', 'course W4A16 compile RO, fused')} | "
                     f"{ratio('compile RO, no trees', 'course W4A16 compile RO, no trees, fused')} | "
                     f"{ratio('compile RO, no trees, fused', 'course W4A16 compile RO, no trees, fused')} |")
    return "\n".join(lines) + "\n"


for gpu in ("h100", "h200"):
    folder = RESULTS / gpu
    if (folder / "w4a16_plan_ab.json").exists() and (folder / "ro_fused.json").exists():
        (folder / "fused_projections.md").write_text(gpu_tables(folder))
        print(f"wrote {folder / 'fused_projections.md'}")
