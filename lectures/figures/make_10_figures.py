"""Draw the figures of lecture 10 (the Llama block) into lectures/figures/10_*.png, and write the table
results/h200/llama_block.md, from the committed H200 measurements (results/h200/llama_block.json).

    python lectures/figures/make_10_figures.py

Runs on a CPU in seconds; notebook 10 draws the same figures with the same functions (course/llama_plots.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
sys.path.insert(0, str(REPO_ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from course.llama import LLAMA3_8B  # noqa: E402
from course.llama_plots import (  # noqa: E402
    plot_amdahl,
    plot_breakdown,
    plot_decode,
    plot_prefill,
    plot_speed_of_light,
    summary_markdown,
)

SOL_CASES = {"prefill 1×4096": (1, 4096, 4096, 2.0), "prefill 4×512": (4, 512, 512, 2.0),
             "decode B=1, bf16": (1, 1, 4096, 2.0), "decode B=1, W4A16": (1, 1, 4096, 0.53),
             "decode B=16, W4A16": (16, 1, 4096, 0.53)}  # fmt: skip


def main() -> None:
    results = json.loads((REPO_ROOT / "results" / "h200" / "llama_block.json").read_text())
    figures = {
        "10_speed_of_light.png": ((8, 3.4), lambda ax: plot_speed_of_light(ax, LLAMA3_8B, SOL_CASES)),
        "10_prefill.png": ((8, 3.6), lambda ax: plot_prefill(ax, results)),
        "10_decode.png": ((9, 4.0), lambda ax: plot_decode(ax, results)),
        "10_breakdown.png": ((8, 4.2), lambda ax: plot_breakdown(ax, results)),
        "10_amdahl.png": ((7, 4.0), lambda ax: plot_amdahl(ax, results, "prefill", 1)),
    }
    for name, (size, draw) in figures.items():
        fig, ax = plt.subplots(figsize=size)
        draw(ax)
        fig.tight_layout()
        fig.savefig(HERE / name, dpi=110)
        plt.close(fig)
        print(f"wrote lectures/figures/{name}")
    (REPO_ROOT / "results" / "h200" / "llama_block.md").write_text(summary_markdown(results))
    print("wrote results/h200/llama_block.md")


if __name__ == "__main__":
    main()
