"""The grader's "why is my kernel slow": occupancy arithmetic, the advice it picks, and a kernel compiled
for an H100 here (no GPU needed: the cubin carries its registers and spills)."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl

from autograder import kernel_source
from autograder.diagnose import KernelFacts, diagnose, facts_for_target, occupancy, report
from autograder.grade import Selection, grade_assignment
from conftest import SEED, SUBMISSIONS
from course.device import KNOWN_GPUS, SM_LIMITS, sm_limits

H100 = KNOWN_GPUS["NVIDIA H100 80GB HBM3"]
T4 = KNOWN_GPUS["Tesla T4"]
# Two reasons ptxas gives for serializing wgmma products on sm_90a (the first is the C7515 note measured in lecture 04)
WRITES_ACC = "non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage"
NO_REGISTERS = "insufficient register resources for the wgmma pipeline"


def facts(registers: int = 32, spilled: int = 0, shared: int = 0, num_warps: int = 4, grid: tuple = (10_000,)) -> KernelFacts:
    return KernelFacts("k", grid, num_warps, registers, spilled, shared)


@pytest.mark.parametrize(
    ("k", "device", "programs_per_sm", "limit"),
    [
        (facts(registers=32, num_warps=4), H100, 16, "warps"),  # 64 warps / 4
        (facts(registers=255, num_warps=1), H100, 8, "registers"),  # 255 x 32 rounds to 8192 per warp: 8 warps
        (facts(registers=128, num_warps=8), H100, 2, "registers"),  # 4096 per warp, 16 warps, 2 programs of 8
        (facts(registers=40, shared=100 * 1024, num_warps=4), H100, 2, "shared memory"),  # 228 KB / (100 + 1) KB
        (facts(registers=16, num_warps=1), H100, 32, "programs"),
        (facts(registers=40, shared=40 * 1024, num_warps=4), T4, 1, "shared memory"),  # 64 KB per SM, no reserve
        (facts(registers=33, num_warps=4), T4, 8, "warps"),  # 32 warps per SM on Turing
    ],
)
def test_occupancy_follows_the_allocation_rules(k: KernelFacts, device, programs_per_sm: int, limit: str) -> None:
    occ = occupancy(k, sm_limits(device.capability))
    assert (occ.programs_per_sm, occ.limit) == (programs_per_sm, limit)


def test_every_known_gpu_has_sm_limits_and_an_unknown_one_takes_the_nearest_older() -> None:
    assert all(d.capability in SM_LIMITS for d in KNOWN_GPUS.values())
    assert sm_limits((9, 9)) == SM_LIMITS[(9, 0)]
    assert sm_limits((12, 1)) == SM_LIMITS[(12, 0)]


@pytest.mark.parametrize(
    ("k", "phrase"),
    [
        (facts(registers=255, spilled=40, grid=(8,)), "spills 40 registers per thread"),  # spills come first
        (facts(grid=(64,)), "launches 64 programs for 132 SMs, so 68 SMs sit idle"),
        (facts(shared=200 * 1024, num_warps=4), "Only one program of k fits on an SM (its shared memory fill it)"),
        (KernelFacts("k", (64,), 8, 128, 0, 0, f"serialized due to {WRITES_ACC}"), "outside the loop of products"),
        (KernelFacts("k", (64,), 8, 255, 0, 0, f"serialized due to {NO_REGISTERS}"),
         f"each tensor-core product of k wait for the one before (serialized due to {NO_REGISTERS})"),
    ],
)
def test_a_slow_kernel_gets_one_sentence_naming_its_obvious_limit(k: KernelFacts, phrase: str) -> None:
    d = diagnose([k], H100, slow=True)
    assert phrase in d.advice
    assert diagnose([k], H100, slow=False).advice == ""  # full points: facts, no advice


def test_a_kernel_with_no_obvious_limit_gets_facts_and_no_advice() -> None:
    d = diagnose([facts(registers=32, num_warps=4, grid=(132 * 16 * 3 + 100,))], H100, slow=True)
    assert d.advice == ""
    assert d.lines == ["k: 32 registers/thread, 0 spilled, 0 KB shared memory, 4 warps; 16 program(s)/SM (100% occupancy, "
                       "limited by warps); 6436 programs on 132 SMs = 3.05 waves, the last 5% full"]


def test_the_report_adds_the_roofline_and_is_silent_without_compiled_kernels() -> None:
    extra = {"pct_copy": 41.6}
    text = report([facts(grid=(64,)).plain()], H100, extra, slow=True)
    assert text.startswith(" Roofline: 42% of copy bandwidth. Kernel: k: 32 registers/thread")
    assert report([facts().plain()], H100, {"tflops": 300.0, "floor_tflops": 600.0}, slow=False).startswith(
        " Roofline: 50% of the measured matmul rate.")  # fmt: skip
    assert report([], H100, extra, slow=True) == ""  # the interpreter returns no compiled kernel
    assert report([{"name": "k"}], H100, extra, slow=True).startswith(" (No kernel diagnosis: KeyError")


def test_the_spilling_submission_is_correct_and_its_diagnosis_names_the_spills() -> None:
    path = SUBMISSIONS / "rmsnorm" / "slow_spills.py"
    result = grade_assignment("rmsnorm", path, "cpu", seed=SEED, selection=Selection(tasks={"rmsnorm.forward"}, max_cases=3, speed=False))
    assert [c.status for c in result.cases if c.kind == "correctness"] == ["passed"] * 3
    # The first speed case's specialization: bf16 rows of 4096, two rows per program, one warp.
    signature = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "n_rows": "i32", "n_cols": "i32", "eps": "fp32"}
    # The kernel as the replayer reads it from the source text, compiled for sm_90 on this CPU.
    kernel = kernel_source.build(kernel_source.read(path.read_text(), str(path)), interpret=False)["_rows_kernel"]
    k = facts_for_target(kernel, signature, {"ROWS": 2, "BLOCK_N": 4096}, (16384 // 2,), 1, H100)
    assert k.registers <= 255 and k.spilled > 0 and k.num_warps == 1
    assert f"_rows_kernel spills {k.spilled} registers per thread" in diagnose([k], H100, slow=True).advice


def test_the_serialized_tma_submission_is_correct_and_its_diagnosis_names_the_serialized_products() -> None:
    path = SUBMISSIONS / "tiling" / "slow_tma_serialized.py"
    selection = Selection(tasks={"tiling.tma"}, max_cases=3, speed=False)
    result = grade_assignment("tiling", path, "cpu", seed=SEED, selection=selection)
    assert [c.status for c in result.cases if c.kind == "correctness"] == ["passed"] * 3
    # Its launcher's GPU tile for 16-bit inputs (128 x 128, 64 along K, 8 warps), compiled for sm_90 on this CPU.
    kernel = kernel_source.build(kernel_source.read(path.read_text(), str(path)), interpret=False)["_matmul_tma_kernel"]
    signature = {"a_desc": "tensordesc<bf16[128, 64]>", "b_desc": "tensordesc<bf16[64, 128]>",
                 "c_desc": "tensordesc<bf16[128, 64]>", "M": "i32", "N": "i32", "K": "i32"}  # fmt: skip
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 1}
    k = facts_for_target(kernel, signature, tile, (132,), 8, H100)
    assert k.spilled == 0 and k.serialized.startswith("serialized due to")
    assert "ptxas makes each tensor-core product of _matmul_tma_kernel wait" in diagnose([k], H100, slow=True).advice


def test_a_launched_kernel_gives_its_facts_and_an_interpreted_one_none() -> None:
    from types import SimpleNamespace

    from autograder.diagnose import facts_from_compiled

    compiled = SimpleNamespace(metadata=SimpleNamespace(num_warps=8, shared=49152), n_regs=96, n_spills=3)
    assert facts_from_compiled("k", (4, 2), compiled) == KernelFacts("k", (4, 2), 8, 96, 3, 49152)
    assert facts_from_compiled("k", (4, 2), None) is None
    assert facts_from_compiled("k", (4, 2), SimpleNamespace(metadata=SimpleNamespace(), n_regs=96)) is None
    assert KernelFacts.from_plain(KernelFacts("k", (4, 2), 8, 96, 3, 49152).plain()).programs == 8


@triton.jit
def _halves_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   FLATTEN: tl.constexpr):
    # c (M, N) = a (M, K) @ b (K, N), persistent, each BM x 2BN tile kept as two (BM, BN) accumulators
    tiles_n = tl.cdiv(N, 2 * BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for tile in tl.range(tl.program_id(0), tiles, tl.num_programs(0), flatten=FLATTEN):
        row = (tile // tiles_n) * BM
        col = (tile % tiles_n) * 2 * BN
        left = tl.zeros((BM, BN), dtype=tl.float32)
        right = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([row, k * BK])
            left = tl.dot(a, b_desc.load([k * BK, col]), left)
            right = tl.dot(a, b_desc.load([k * BK, col + BN]), right)
        c_desc.store([row, col], left.to(c_desc.dtype))
        c_desc.store([row, col + BN], right.to(c_desc.dtype))


HALVES = {"a_desc": "tensordesc<bf16[128, 64]>", "b_desc": "tensordesc<bf16[64, 128]>",
          "c_desc": "tensordesc<bf16[128, 128]>", "M": "i32", "N": "i32", "K": "i32"}  # fmt: skip


@pytest.mark.parametrize("flatten", [True, False])
def test_serialized_tensor_core_products_are_read_from_ptxas_and_named(flatten: bool) -> None:
    """Two accumulators reset inside a flattened loop: ptxas waits for each wgmma (its note C7515, which Triton does
    not print; 0.6x of the same tiles unflattened on an H100, results/h100/tiling_tma_wide_probe.md). Unflattened,
    the same kernel keeps its products in flight."""
    consts = {"BM": 128, "BN": 128, "BK": 64, "FLATTEN": flatten}
    k = facts_for_target(_halves_kernel, HALVES, consts, (132,), 8, H100)
    d = diagnose([k], H100, slow=True)
    if flatten:
        assert k.serialized.startswith("serialized due to non wgmma instructions defining accumulator registers")
        assert d.lines[0].endswith("; ptxas serializes its tensor-core products")
        assert "_halves_kernel wait for the one before (serialized due to" in d.advice
    else:
        assert k.serialized == "" and "serializ" not in d.text()
    assert KernelFacts.from_plain(k.plain()) == k  # the fact travels from the replayer to the grader


def test_only_sm90_ptx_with_tensor_core_products_goes_through_ptxas_again() -> None:
    from autograder.diagnose import serialized_products

    assert serialized_products("garbage that ptxas would reject", 90) == ""  # no wgmma in it: never run
    assert serialized_products("wgmma.mma_async ...", 80) == ""  # only sm_90 has wgmma
