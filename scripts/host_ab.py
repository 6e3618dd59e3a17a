"""Host cost of a course call, before and after a change: the `host` section of scripts/llama_block_bench.py
(public call, registered op, bare Triton launch, PyTorch) and the eager decode block, for two trees.

    git worktree add /tmp/before <commit>                          # the tree before the change
    for i in 1 2 3; do                                             # in turn: the host's noise falls on both
      PYTHONPATH=$PWD python scripts/host_ab.py run OUT/after_$i
      (cd /tmp/before && PYTHONPATH=$PWD python $OLDPWD/scripts/host_ab.py run OUT/before_$i)
    done
    python scripts/host_ab.py table OUT                            # the best of the runs, per row

`run` imports the current directory's own course/, solutions/ and scripts/llama_block_bench.py, so each tree
is measured with its own code. Host time per call is the best of 5 runs of 200 queued calls.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def run(out: Path) -> None:
    sys.path[:0] = [str(Path.cwd()), str(Path.cwd() / "scripts")]
    import llama_block_bench as lbb  # the tree's own
    import torch

    from autograder import timing
    from course.results import Sections, run_meta

    lbb.host_overhead_us = lambda f, **_: timing.host_overhead_us(f, calls=200, reps=5, warmup=20)
    sections = Sections(out / "llama_block.json", run_meta("python scripts/host_ab.py run " + str(out)), merge=True)
    plans = [("eager", (), "eager", False), ("course bf16", lbb.ALL_BF16, "eager", False),
             ("course W4A16", lbb.ALL_W4, "eager", False), ("course W4A16 + CUDA graph", lbb.ALL_W4, "eager", True)]
    with torch.inference_mode():
        bench = lbb.Bench(False, "solutions", sections)
        sections.run("host", lambda: lbb.section_host(bench))
        sections.run("eager_decode", lambda: [r for batch in (1, 4, 16)
                                              for r in bench.time_plans("eager_decode", plans, batch, bench.kv, True)])


def best(folder: Path) -> dict[str, dict[str, dict[str, float]]]:
    """side ('before' or 'after') -> row -> measure -> the least of the runs."""
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


def table(folder: Path) -> str:
    b = best(folder)
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


if __name__ == "__main__":
    command, where = sys.argv[1], Path(sys.argv[2])
    if command == "run":
        run(where)
    else:
        print(table(where))
