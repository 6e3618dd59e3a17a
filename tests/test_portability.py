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
import os
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
    # sm_75 is never handed a descriptor by a kernel with a pointer path; the TMA bonus of tiling takes descriptors
    # everywhere, and on sm_86 Triton compiles their loads as ordinary loads
    assert not any(r["tma"] for r in results if r["arch"] < 90 and r["kernel"] != "_matmul_tma_kernel")
    assert any(r["tma"] and r["kernel"] == "_matmul_tma_kernel" for r in results if r["arch"] == 86)
    t4 = [r for r in results if r["slug"] == "flash_attention"]
    assert t4 and all(r["shared"] <= 64 * 1024 for r in t4)
    assert not any("bfloat16" in case for r in t4 for case in r["cases"])  # no bfloat16 case on a T4


CAPTURE = """
from autograder.portability import capture
from course.device import KNOWN_GPUS
gpus = [KNOWN_GPUS["NVIDIA A100-SXM4-80GB"], KNOWN_GPUS["NVIDIA H100 80GB HBM3"]]
for slug in ("tiling", "flash_attention"):
    for launch in capture(slug, gpus):
        print(launch.kernel, launch.arch, launch.tma, launch.pointer_path)
"""


def test_only_a_kernel_with_a_pointer_path_must_keep_descriptors_from_gpus_without_tma() -> None:
    proc = subprocess.run([sys.executable, "-c", CAPTURE], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "0"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    seen = {tuple(line.split()) for line in proc.stdout.splitlines()}
    # flash attention's forward takes descriptors on Hopper and pointers on the A100: the check applies to it
    assert ("_attn_fwd_kernel", "90", "True", "True") in seen and ("_attn_fwd_kernel", "80", "False", "True") in seen
    # the TMA bonus takes descriptors on both: allowed on the A100, where they become ordinary loads
    assert ("_matmul_tma_kernel", "80", "True", "False") in seen and ("_matmul_tma_kernel", "90", "True", "False") in seen
