"""Module 04's TMA bonus launcher against idle SMs: where tma_tile takes one of the smaller "tma_small" tiles instead
of the table's 128 x 256 tile, and where not.

The pinned tiles are the measured winners of results/h100/tiling_tma_small.md: at every size of that probe, bf16 and
fp16, the tile the model picks with the table's speeds was the fastest of the nine tiles timed there at one program
an SM (the H200 borrows the H100's speeds: same architecture, same shared memory, same TMA tile).
"""

from __future__ import annotations

import pytest
import torch

from autograder.specs.tiling import TMA_CPU_CASES
from course.device import INTERPRETER, KNOWN_GPUS, Device
from course.loader import load_kernels

TK = load_kernels("tiling", "solutions")
H200, H100 = KNOWN_GPUS["NVIDIA H200"], KNOWN_GPUS["NVIDIA H100 80GB HBM3"]

# size of the square product -> (block_m, block_n) picked; times (us, bf16, H100) of the pick and of the 128 x 256 tile
MEASURED = {
    512: (64, 64),  # 7.0 against 11.3: 8 tiles of 128 x 256 for 132 SMs, 64 of 64 x 64
    1024: (64, 128),  # 10.0 against 16.2: 32 tiles against 128
    1536: (128, 256),  # 21.3: 72 tiles in one round; 144 of 128 x 128 need two (21.7)
    2048: (128, 256),  # 27.6: 128 tiles, one round nearly full
    2304: (128, 128),  # 42.5 against 51.6: 162 tiles, the second round 23% full; 324 of 128 x 128 in 3 rounds, 82%
    3072: (128, 128),  # 91.5 against 99.4: 288 tiles in 3 rounds, 73% full; 576 in 5, 87%
    4096: (128, 256),  # 179.0: 512 tiles in 4 rounds, 97% full
}


@pytest.mark.parametrize("device", [H200, H100], ids=["H200", "H100"])
@pytest.mark.parametrize(("size", "tile"), MEASURED.items(), ids=[str(s) for s in MEASURED])
def test_the_tile_is_the_one_measured_fastest(device: Device, size: int, tile: tuple[int, int]) -> None:
    for dtype in (torch.bfloat16, torch.float16):
        cfg = TK.tma_tile(device, dtype, size, size)
        assert (cfg["block_m"], cfg["block_n"]) == tile


def test_the_graded_speed_case_keeps_the_tma_tile() -> None:
    for device in (H200, H100):
        assert TK.tma_tile(device, torch.float16, 4096, 4096) == TK.tma_config(device, torch.float16)


def test_float32_keeps_its_one_tile_on_the_gpu() -> None:
    for size in (1, 1024, 3072):
        assert TK.tma_tile(H100, torch.float32, size, size) == TK.tma_config(H100, torch.float32)


def test_smaller_tiles_measured_against_another_tile_are_not_used() -> None:
    other = {"block_m": 128, "block_n": 256, "block_k": 64, "group_m": 8, "num_stages": 3, "num_warps": 8}
    with TK.CONFIGS.forcing("tma", "16-bit", other):  # a tuned TMA tile that the speeds were not measured against
        assert TK.tma_tile(H100, torch.bfloat16, 1024, 1024) == other
    assert TK.tma_tile(H100, torch.bfloat16, 1024, 1024)["block_m"] == 64


def test_the_cpu_tier_launches_both_tiles_and_a_non_square_one() -> None:
    picked = {(c["shape"][0], c["shape"][2]): TK.tma_tile(INTERPRETER, torch.float32, c["shape"][0], c["shape"][2])
              for c in TMA_CPU_CASES}  # fmt: skip
    tiles = {(t["block_m"], t["block_n"]) for t in picked.values()}
    assert tiles == {(32, 32), (16, 32)}
    assert (picked[(37, 29)]["block_m"], picked[(37, 29)]["block_n"]) == (16, 32)  # 3 tiles of 16 x 32, 2 of 32 x 32


def test_the_small_tiles_fit_every_gpu_that_takes_them() -> None:
    for device in KNOWN_GPUS.values():
        for bucket in ("16-bit", "float32"):
            for tile in TK.CONFIGS.pick(device, "tma_small", bucket) or []:
                size = 4 if bucket == "float32" else 2
                assert TK._smem_bytes(tile, size) + tile["block_m"] * tile["block_n"] // 2 * size <= device.smem_per_block
