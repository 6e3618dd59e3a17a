"""Module 04's launcher against wave quantization: where it splits a matmul into two launches of the student's kernel
(the rows of the first tile's whole waves, then the rest with the smaller "tail" tile), and where not.

The pinned splits are the measured winners of results/<gpu>/tiling_tail_sweep.md on each GPU: at every shape of
that sweep the split tail_split chooses with the table's speed was the fastest of the 64 x 128 tail's variants
timed there (one launch included). The split's results are graded on the CPU tier (autograder/specs/tiling.py's
[90, 77, 70] and the one-launch and tail-only cases) and on both GPUs (results/<gpu>/grade_tiling_2026-11-28.json).
"""

from __future__ import annotations

import pytest
import torch

from course.device import INTERPRETER, KNOWN_GPUS, Device
from course.loader import load_kernels

TK = load_kernels("tiling", "solutions")
H200, H100 = KNOWN_GPUS["NVIDIA H200"], KNOWN_GPUS["NVIDIA H100 80GB HBM3"]

# (M, N) -> rows launched with the first tile (None: one launch), on both Hopper GPUs, for 16-bit inputs.
MEASURED = {
    (1024, 1024): 0,  # 32 tiles of 128 x 256 in one wave of 132 SMs: the 64 x 128 tile everywhere (10.7-10.9 us against 15.1)
    (1536, 1536): None,  # 72 tiles: the tail tile everywhere (288 programs, 2 rounds) was slower
    (2304, 2304): 1792,  # 162 tiles: one whole wave of 14 tile rows, then 512 rows with the tail
    (3072, 3072): 2816,  # 288 tiles: two whole waves, then 256 rows (112 -> 97-98 us)
    (4096, 4096): None,  # 512 tiles: the last of 4 waves 88% full
    (5120, 5120): 4992,
    (2048, 14336): None,
    (4096, 14336): None,
}


@pytest.mark.parametrize("device", [H200, H100], ids=["H200", "H100"])
@pytest.mark.parametrize(("shape", "rows"), MEASURED.items(), ids=[f"{m}x{n}" for m, n in MEASURED])
def test_the_split_is_the_one_measured_fastest(device: Device, shape: tuple[int, int], rows: int | None) -> None:
    m, n = shape
    for dtype in (torch.bfloat16, torch.float16):
        first, tail = TK.tail_split(device, dtype, m, n)
        assert (None if tail is None else first) == rows
        assert first == m if tail is None else first % TK.matmul_config(device, dtype)[0]["block_m"] == 0


def test_float32_launches_once_on_a_gpu_whose_table_has_no_float32_tail() -> None:
    assert TK.tail_split(H200, torch.float32, 3072, 3072) == (3072, None)


@pytest.mark.parametrize("device", [H200, H100, INTERPRETER], ids=["H200", "H100", "interpreter"])
@pytest.mark.parametrize(("m", "n"), [(1, 4096), (127, 129), (1000, 777), (2303, 2305), (3072, 1024), (8191, 8193)])
def test_a_split_is_chosen_only_where_the_model_predicts_it_faster(device: Device, m: int, n: int) -> None:
    dtype = torch.float32 if device.interpreter else torch.bfloat16
    rows, tail = TK.tail_split(device, dtype, m, n)
    one = TK._split_time(device, dtype, m, n, m, None)
    if tail is None:
        assert rows == m
        every = [TK._split_time(device, dtype, m, n, r, TK.CONFIGS.pick(device, "tail", "16-bit" if dtype != torch.float32 else "float32"))
                 for r in range(0, m, TK.matmul_config(device, dtype)[0]["block_m"])]  # fmt: skip
        assert min(every) >= one
    else:
        assert 0 <= rows < m
        assert TK._split_time(device, dtype, m, n, rows, tail) < one


def test_the_cpu_tier_takes_every_path_of_the_launcher() -> None:
    from autograder.specs.tiling import CPU_CASES

    firsts = {(lambda r: "one" if r[1] is None else "tail only" if r[0] == 0 else "two")(
        TK.tail_split(INTERPRETER, torch.float32, c["shape"][0], c["shape"][2])) for c in CPU_CASES}  # fmt: skip
    assert firsts == {"one", "tail only", "two"}


def test_a_gpu_without_an_entry_splits_only_where_it_runs_the_first_tile_the_speed_was_measured_against() -> None:
    a100 = KNOWN_GPUS["NVIDIA A100-SXM4-80GB"]  # 163 KB a block: the 128 x 256 x 64 tile in 3 stages fits (144 KB)
    assert TK.matmul_config(a100, torch.float16)[0] == TK.matmul_config(H200, torch.float16)[0]
    assert TK.CONFIGS.pick(a100, "tail", "16-bit") == TK.CONFIGS.reference("tail", "16-bit")
    assert TK.tail_split(a100, torch.float16, 2304, 2304)[0] == 1536  # 162 tiles on 108 SMs: the second wave half empty
    for name in ("NVIDIA A10", "NVIDIA L4", "Tesla T4", "NVIDIA GeForce RTX 5090"):  # 99 KB or less: another first tile
        device = KNOWN_GPUS[name]
        assert TK.matmul_config(device, torch.float16)[0] != TK.matmul_config(H200, torch.float16)[0]
        for m in (1024, 2304, 3072, 5120):
            assert TK.tail_split(device, torch.float16, m, m) == (m, None)


def test_the_two_launches_compute_the_product_on_the_interpreter() -> None:
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(90, 77, generator=g), torch.randn(77, 70, generator=g)
    rows, tail = TK.tail_split(INTERPRETER, torch.float32, 90, 70)
    assert tail is not None and 0 < rows < 90
    torch.testing.assert_close(TK.matmul(a, b), a.double().matmul(b.double()).float(), rtol=1e-5, atol=1e-5)


def test_a_gpu_whose_own_first_tile_is_another_launches_once() -> None:
    # Tuned on that GPU to another first tile: the reference's tail speed was measured against a different one.
    device = Device("A GPU tuned to 128 x 128 tiles", (9, 0), 100, 227 * 1024)
    own = [{"block_m": 128, "block_n": 128, "block_k": 64, "group_m": 8, "num_stages": 3, "num_warps": 4}]
    # 100 SMs, 2176 x 3072 in 128 x 256 tiles: 204 tiles, the third wave 4% full
    with TK.CONFIGS.forcing("matmul", "16-bit", own):
        assert TK.tail_split(device, torch.bfloat16, 2176, 3072) == (2176, None)
    same = Device("A Hopper GPU with 100 SMs, unmeasured", (9, 0), 100, 227 * 1024)
    assert TK.CONFIGS.pick(same, "tail", "16-bit") == TK.CONFIGS.reference("tail", "16-bit")  # borrowed
    assert TK.tail_split(same, torch.bfloat16, 2176, 3072) == (2048, TK.CONFIGS.reference("tail", "16-bit"))
