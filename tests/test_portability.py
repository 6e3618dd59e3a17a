"""`python -m autograder portability`: every solution kernel fits every GPU architecture.

Compiling everything (every solution's every distinct launch on every architecture: about 1,800
compilations) takes most of an hour on two cores, so this test compiles, in one child process, each
solution on one architecture, with only each kernel's largest launches (`--largest`): eight solutions, seven
architectures, each compiled at least once per run. Each solution goes where it is most at risk: flash
attention on sm_75 (64 KB of shared memory, no TMA, no bfloat16), tiling on sm_86 (99 KB), the others
spread over the rest. `python -m autograder portability` (no arguments) checks everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

from autograder.portability import ARCHS
from autograder.specs import SLUGS
from conftest import REPO_ROOT

PAIRS = {"flash_attention": 75, "fusion": 80, "tiling": 86, "quant_matmul": 89, "rope": 90, "coalescing": 100,
         "rmsnorm": 120, "swiglu": 120}  # fmt: skip


def test_the_pairs_cover_every_solution_and_every_architecture() -> None:
    assert set(PAIRS) == set(SLUGS) and set(PAIRS.values()) == set(ARCHS)


def test_every_solution_fits_its_architecture(tmp_path) -> None:
    out = tmp_path / "portability.json"
    argv = ["--largest", "--workers=2", f"--json={out}", *(f"--pair={s}:{a}" for s, a in PAIRS.items())]
    proc = subprocess.run([sys.executable, "-m", "autograder", "portability", *argv], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    results = json.loads(out.read_text())
    assert {(r["slug"], r["arch"]) for r in results} == set(PAIRS.items())
    assert all(not r["problems"] and 0 < r["registers"] <= 255 for r in results), [r for r in results if r["problems"]]
    assert not any(r["tma"] for r in results if r["arch"] < 90)  # sm_75 is never handed a descriptor
    t4 = [r for r in results if r["slug"] == "flash_attention"]
    assert t4 and all(r["shared"] <= 64 * 1024 for r in t4)
    assert not any("bfloat16" in case for r in t4 for case in r["cases"])  # no bfloat16 case on a T4
