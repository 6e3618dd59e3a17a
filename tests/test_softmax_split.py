"""The softmax solution's rows longer than a tile, split into chunks of one program each (SINGLE_TILE false).

The interpreter runs the form in which the row's last program to count itself in writes the row (WAIT false);
the waiting form (WAIT true) cannot run here, where programs run one at a time and a wait never ends, so it is
checked for what can be checked without a GPU: that it is Triton for every GPU target, and that the launcher
asks for it only where a whole row's chunks can be resident at once. The GPU tier grades both forms (the
spec's (4, 128256) rows wait, its (2, 1500007) rows do not).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
import torch

import solutions.fusion.kernels as fusion
from autograder.specs.fusion import SOFTMAX_TOLERANCES, make_softmax_inputs
from conftest import REPO_ROOT, SEED
from course.comparison import compare
from course.device import INTERPRETER, KNOWN_GPUS
from course.launch import cdiv, next_power_of_2

H200, H100 = KNOWN_GPUS["NVIDIA H200"], KNOWN_GPUS["NVIDIA H100 80GB HBM3"]


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """(grid, args, meta) of every softmax launch made while the test runs, after it ran."""
    seen: list[tuple] = []
    launch = fusion.launch

    def recording(kernel, grid, *args, **meta):  # noqa: ANN001, ANN202
        out = launch(kernel, grid, *args, **meta)
        if kernel is fusion._softmax_kernel:
            seen.append((grid, args, meta))
        return out

    monkeypatch.setattr(fusion, "launch", recording)
    return seen


@pytest.mark.parametrize(
    "params",
    [
        {"shape": [3, 40000]},  # ten chunks of 4096, the last one partly masked
        {"shape": [1, 32769]},  # one column past a tile: nine chunks, the last holding one column
        {"shape": [2, 3, 33000], "offset": 100.0},
        {"shape": [5, 36865], "dist": "hostile"},  # a maximum in the last chunk, whole chunks of -inf, huge rows
        {"shape": [2, 65536], "scale": 10.0},  # sixteen full chunks, a power of two
    ],
)
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_split_rows_match_the_reference(params: dict, dtype_name: str, launches: list[tuple]) -> None:
    g = torch.Generator().manual_seed(SEED)
    x = make_softmax_inputs({**params, "dtype": dtype_name}, g, torch.device("cpu"))["x"]
    y = fusion.softmax(x)
    verdict = compare("y", y, torch.softmax(x.double(), dim=-1), SOFTMAX_TOLERANCES[dtype_name])
    assert verdict.ok, verdict.message
    n_rows, n_cols = x.numel() // x.shape[-1], x.shape[-1]
    n_chunks = cdiv(n_cols, 4096)  # the interpreter's chunk
    [(grid, args, meta)] = launches
    assert grid == (n_rows * n_chunks,)
    assert (meta["SINGLE_TILE"], meta["WAIT"], meta["BLOCK_N"], meta["CHUNKS"]) == (False, False, 4096,
                                                                                   next_power_of_2(n_chunks))
    part, count = args[2], args[3]
    # Every program counted itself in once, on its own row; nobody took a ticket (the last entry).
    assert count.tolist() == [n_chunks] * n_rows + [0]
    assert part.shape == (n_rows, n_chunks, 2)


def test_one_tile_rows_do_not_touch_the_split_buffers(launches: list[tuple]) -> None:
    x = torch.randn(4, 32768)
    fusion.softmax(x)
    [(grid, args, meta)] = launches
    assert meta["SINGLE_TILE"] and not meta["WAIT"] and args[2] is args[1] and args[3] is args[1]


@pytest.mark.parametrize(
    ("device", "n_chunks", "waits"),
    [
        (H100, 16, True),  # 1024 x 128256 in chunks of 8192
        (H200, 132, True),  # as many chunks as SMs
        (H200, 133, False),  # one more: a whole row might not fit on the GPU at once
        (H100, 184, False),  # the spec's (2, 1500007) rows
        (dataclasses.replace(H100, sms=8), 16, False),  # a small GPU
        (INTERPRETER, 2, False),  # programs one at a time: a wait never ends
    ],
)
def test_programs_wait_only_where_a_whole_row_can_run_at_once(device, n_chunks: int, waits: bool) -> None:  # noqa: ANN001
    assert fusion.chunks_may_wait(device, n_chunks) is waits


# Compiled in a child process without the interpreter: under it, the kernel's helpers (_halves, _word_of) are
# interpreted functions, which Triton's compiler does not take.
_COMPILE_BOTH_FORMS = """
import json
import solutions.fusion.kernels as fusion
from autograder.diagnose import facts_for_target, occupancy
from course.device import KNOWN_GPUS, sm_limits
signature = {"x_ptr": "*bf16", "y_ptr": "*bf16", "part_ptr": "*fp32", "count_ptr": "*i32", "n_rows": "i32",
             "n_cols": "i32", "stride_x": "i32", "stride_y": "i32"}
out = []
for gpu in ("NVIDIA H100 80GB HBM3", "Tesla T4"):
    device = KNOWN_GPUS[gpu]
    for wait in (True, False):
        meta = {"BLOCK_M": 1, "BLOCK_N": 8192, "SINGLE_TILE": False, "PAIRS": False, "CHUNKS": 16, "WAIT": wait}
        facts = facts_for_target(fusion._softmax_kernel, signature, meta, (64,), 4, device)
        programs = occupancy(facts, sm_limits(device.capability)).programs_per_sm
        out.append({"gpu": gpu, "wait": wait, "spilled": facts.spilled, "programs_per_sm": programs})
print(json.dumps(out))
"""


def test_both_forms_compile_for_gpus_with_room_for_a_program_per_sm() -> None:
    """The form that waits needs every chunk of a row resident at once, and one program per SM is what the
    launcher counts on: the kernel must fit at least one, here on an H100 and a T4 (sm_75, the oldest the course
    supports), and without spills (the chunk is meant to stay in registers)."""
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    proc = subprocess.run([sys.executable, "-c", _COMPILE_BOTH_FORMS], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) == 4
    assert all(r["spilled"] == 0 and r["programs_per_sm"] >= 1 for r in results), results
