"""Grading the tiling assignment (matmul) on the CPU tier: right answers score, wrong ones fail the cases
that expose them with a message that says how; the solution's padded path and wrapper behave.

Each submission is graded once per session (a worker process costs seconds); tests then read the result.
"""

from __future__ import annotations

import pytest
import torch

from autograder.grade import AssignmentResult, grade_assignment
from autograder.specs.tiling import TOLERANCES
from conftest import REPO_ROOT, SEED, SUBMISSIONS
from course.loader import load_kernels

_cache: dict[str, AssignmentResult] = {}


def graded(path) -> AssignmentResult:
    if str(path) not in _cache:
        _cache[str(path)] = grade_assignment("tiling", path, "cpu", seed=SEED, timeout=60.0)
    return _cache[str(path)]


def sub(name: str):
    return SUBMISSIONS / "tiling" / f"{name}.py"


def cases(result: AssignmentResult, task: str = "tiling.matmul") -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in result.cases if c.kind == "correctness" and c.task == task}


ALL = {"(33x17x45) float32", "(1x1x1) float32", "(1x300x7) float32", "(64x64x64) float32", "(100x129x70) float32",
       "(45x1000x33) float32", "(129x33x1) float32", "(70x200x130) float32", "(37x333x29) float32 dist=cancel", "(90x77x70) float32"}  # fmt: skip
TMA = {"(33x17x45) float32", "(1x1x1) float32", "(96x64x160) float32", "(50x64x45) float32", "(40x30x64) float32",
       "(100x129x70) float32", "(37x333x29) float32 dist=cancel"}  # fmt: skip


def test_solution_scores_full_points_with_room_to_spare() -> None:
    r = graded(REPO_ROOT / "solutions" / "tiling" / "kernels.py")
    assert r.score(False) == pytest.approx(60.0) and r.max_score(False) == pytest.approx(60.0)
    assert r.score(True) == pytest.approx(10.0) and r.max_score(True) == pytest.approx(10.0)  # the TMA bonus
    assert set(cases(r)) == ALL and set(cases(r, "tiling.tma")) == TMA
    for c in r.cases:
        if c.kind == "correctness":
            share = float(c.message.split("max error ")[1].split("%")[0])
            assert share < 50, c.message  # float32 arithmetic sits well inside the float32 tolerance


def test_untouched_stub_scores_zero_with_a_not_implemented_message() -> None:
    r = graded(REPO_ROOT / "assignments" / "tiling" / "kernels.py")
    assert r.score(False) == 0 and r.score(True) == 0
    for task in ("tiling.matmul", "tiling.tma"):
        for status, message in cases(r, task).values():
            assert status == "not_implemented"
            assert message == f"Not implemented yet: fill in the TODO marked {task} in kernels.py."


def test_a_tma_kernel_that_keeps_its_sum_across_tiles_fails_where_a_program_takes_two() -> None:
    results = cases(graded(sub("wrong_tma_acc_not_reset")), "tiling.tma")
    # Its own launch, 4 programs of 32 x 32 tiles, goes wrong at 96x160 (15 tiles) and 100x72 (12, N padded); the
    # grader's launch of the kernel (16 x 32 tiles, two to a program) wherever there are two tiles: all but 1x1x1.
    failing = {name for name, (status, _) in results.items() if status != "passed"}
    assert failing == TMA - {"(1x1x1) float32"}
    assert "outside the tolerance" in results["(96x64x160) float32"][1]
    assert "The grader also launches your `_matmul_tma_kernel` itself" in results["(33x17x45) float32"][1]


def test_a_matmul_tma_handed_to_the_pointer_kernel_earns_nothing_of_the_bonus() -> None:
    r = graded(sub("wrong_tma_routed_to_matmul"))
    assert all(status == "passed" for status, _ in cases(r).values())  # task 1 is right, and earns its points
    for status, message in cases(r, "tiling.tma").values():  # the same product, from the wrong kernel
        assert status == "failed" and "did not launch `_matmul_tma_kernel` with tensor descriptors" in message, message


def test_a_descriptor_kernel_run_on_a_decoy_does_not_count() -> None:
    results = cases(graded(sub("wrong_tma_decoy_launch")), "tiling.tma")
    # its decoy descriptors span 16 x 16 elements: only the (1x1x1) case has an output that small, and there the
    # grader's own launch of the kernel fails (the decoy kernel has not the given signature)
    assert all(status == "failed" for status, _ in results.values())
    assert all("did not launch `_matmul_tma_kernel`" in message for name, (_, message) in results.items() if name != "(1x1x1) float32")
    assert "The grader also launches your `_matmul_tma_kernel` itself" in results["(1x1x1) float32"][1]


def test_a_wrong_tma_kernel_hidden_behind_a_decoy_as_large_as_the_product_fails() -> None:
    r = graded(sub("wrong_tma_full_size_decoy"))
    assert all(status == "passed" for status, _ in cases(r).values())  # task 1's kernel is right
    for status, message in cases(r, "tiling.tma").values():  # every answer right, from the pointer kernel
        assert status == "failed" and "The grader also launches your `_matmul_tma_kernel` itself" in message, message
        assert "its result was wrong" in message


def test_a_kernels_py_without_matmul_tma_loses_only_the_bonus_with_a_sentence() -> None:
    r = graded(sub("correct_minimal"))
    assert all(status == "passed" for status, _ in cases(r).values())
    for status, message in cases(r, "tiling.tma").values():
        assert status != "passed" and "does not define `matmul_tma`" in message, message


def test_a_minimal_tiled_matmul_passes_every_case() -> None:
    assert set(cases(graded(sub("correct_minimal")))) == ALL
    assert all(status == "passed" for status, _ in cases(graded(sub("correct_minimal"))).values())


def test_dropping_the_k_remainder_fails_exactly_where_k_is_not_a_multiple_of_the_step() -> None:
    results = cases(graded(sub("wrong_k_remainder_dropped")))
    failing = {name for name, (status, _) in results.items() if status != "passed"}
    assert failing == ALL - {"(64x64x64) float32"}
    assert "outside the tolerance" in results["(100x129x70) float32"][1]
    assert "Every element is zero" in results["(1x1x1) float32"][1]  # K = 1: not one full step


def test_a_float16_accumulator_fails_every_float32_case() -> None:
    results = cases(graded(sub("wrong_fp16_accumulation")))
    for name in ALL:
        status, message = results[name]
        assert status == "failed" and "outside the tolerance" in message, (name, message)


def test_a_store_masked_on_the_buffer_not_the_tile_edge_fails_where_a_tile_overhangs_n() -> None:
    results = cases(graded(sub("wrong_tile_edge_unmasked")))
    overhanging = {"(33x17x45) float32", "(100x129x70) float32", "(45x1000x33) float32", "(70x200x130) float32",
                   "(90x77x70) float32"}  # fmt: skip
    for name in overhanging:
        status, message = results[name]
        assert status == "failed", (name, message)
        # The columns past N wrap into the next row and overwrite its first columns with zeros.
        assert "The first is at index (1, 0): got 0, expected" in message, message
    # N within one tile (1, 7) or a multiple of it (64): the wrap stays inside one store and is overwritten.
    assert all(results[name][0] == "passed" for name in ALL - overhanging)


def test_torch_matmul_inside_the_call_is_refused() -> None:
    r = graded(sub("wrong_calls_pytorch"))
    assert r.score(False) == 0
    assert all("computed with PyTorch (aten.mm)" in message for _, message in cases(r).values())


def test_tolerances_grow_with_k_and_are_tightest_for_float32() -> None:
    small, large = TOLERANCES["float16"]({"shape": [8, 64, 8]}), TOLERANCES["float16"]({"shape": [8, 16384, 8]})
    assert large.atol == pytest.approx(small.atol * 256) and large.rtol == small.rtol == 2.0**-10
    assert TOLERANCES["float32"]({"shape": [8, 4096, 8]}).atol < TOLERANCES["float16"]({"shape": [8, 4096, 8]}).atol


# --------------------------------------------------------------------------------------------------
# The solution's wrapper: the padded path used on a GPU for unaligned K or N, and errors.
# --------------------------------------------------------------------------------------------------

k = load_kernels("tiling", "solutions")


@pytest.mark.parametrize("shape", [(33, 17, 45), (5, 16, 7), (40, 33, 32), (1, 1, 1)])
def test_padded_path_gives_the_same_product(shape: tuple[int, int, int]) -> None:
    m, kk, n = shape
    a, b = torch.randn(m, kk), torch.randn(kk, n)
    plain, padded = k.matmul_launch(a, b, pad=False), k.matmul_launch(a, b, pad=True)
    assert padded.shape == (m, n) and padded.is_contiguous()
    torch.testing.assert_close(padded, plain, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(padded.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("tiles", "sms", "programs"), [
    (512, 132, 128), (2048, 132, 128), (1792, 132, 128), (288, 132, 96), (133, 132, 67), (32, 132, 32),
    (132, 132, 132), (15, 4, 4), (9, 4, 3), (1, 4, 1),
])  # fmt: skip
def test_the_tma_launch_keeps_the_fewest_rounds_with_the_fewest_programs(tiles: int, sms: int, programs: int) -> None:
    assert k.tma_programs(tiles, sms) == programs
    rounds = -(-tiles // sms)
    assert -(-tiles // programs) == rounds and programs <= sms  # no extra round, no more programs than SMs
    assert programs == 1 or -(-tiles // (programs - 1)) > rounds  # one program fewer would need another round


def test_padding_is_only_asked_for_on_a_gpu() -> None:
    assert not k.needs_padding(torch.empty(4, 1793), torch.empty(1793, 1793))  # the interpreter needs no alignment


def test_empty_shapes() -> None:
    assert k.matmul(torch.empty(0, 5), torch.empty(5, 3)).shape == (0, 3)
    assert torch.equal(k.matmul(torch.empty(2, 0), torch.empty(0, 3)), torch.zeros(2, 3))


@pytest.mark.parametrize(
    "make, error, phrase",
    [
        (lambda: k.matmul(torch.randn(3, 4), torch.randn(5, 2)), ValueError, "a.shape[1] (4) must equal b.shape[0] (5)"),
        (lambda: k.matmul(torch.randn(3, 4), torch.randn(4, 2).half()), ValueError, "`a` is float32, `b` is float16"),
        (lambda: k.matmul(torch.randn(3, 4, 1), torch.randn(4, 2)), ValueError, "`a` must have 2 dimensions"),
        (lambda: k.matmul(torch.randn(3, 4), torch.randn(2, 4).t()), ValueError, "`b` must be contiguous"),
        (lambda: k.matmul(torch.randn(3, 4).double(), torch.randn(4, 2).double()), TypeError, "must have dtype float32, float16, bfloat16"),
    ],
)
def test_bad_arguments_get_a_sentence(make, error, phrase: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert phrase in str(info.value)


def _tape(launches: list[dict], out_shape: list[int]) -> dict:
    """A recorded call as the worker's tape encodes it: the launches, and one output of this shape."""
    out = {"T": ["1", 0, out_shape, [out_shape[1], 1], "float32", "cpu"]}
    return {"storages": {"1": {"nbytes": 4 * out_shape[0] * out_shape[1], "origin": "created", "device": "cpu"}},
            "inputs": {}, "outputs": {"c": out}, "entries": launches, "carried": {}, "unrecorded": []}  # fmt: skip


def _launch(kernel: str, desc_shapes: list[list[int]]) -> dict:
    args = [{"desc": {"base": {"T": ["2", 0, s, [s[1], 1], "float32", "cpu"]}, "shape": {"tuple": s}}} for s in desc_shapes]
    return {"kind": "launch", "kernel": kernel, "file": "/k.py", "args": args, "kwargs": {}, "grid": [1, 1, 1]}


@pytest.mark.parametrize(("launches", "refused"), [
    ([_launch("_mm_kernel", [])], True),  # another kernel computed it: the worker's record, if forged, is not believed
    ([_launch("_matmul_tma_kernel", [[16, 16]]), _launch("_mm_kernel", [])], True),  # a decoy smaller than c
    ([_launch("_matmul_tma_kernel", [[64, 48], [48, 96], [64, 96]])], False),  # the part's kernel, over all of c
])  # fmt: skip
def test_the_tape_itself_must_show_the_tma_kernel_over_the_whole_output(launches: list[dict], refused: bool) -> None:
    from autograder import tape as tapes

    problem = tapes.problems(_tape(launches, [64, 96]), "/k.py", required_kernel="_matmul_tma_kernel")
    assert (problem == tapes.missing_kernel("_matmul_tma_kernel")) is refused
    assert problem == "" or refused
    assert tapes.problems(_tape(launches, [64, 96]), "/k.py") == ""  # parts that name no kernel ask only for a result


def test_the_graders_own_launch_of_the_tma_kernel_cannot_read_the_replays_answer() -> None:
    """Red team 6: a replayed kernel left the address of the replay's output in an input, and the TMA kernel, launched
    by the grader on those inputs with no bounds checks, copied the answer from there (10/10 on the bonus)."""
    r = graded(sub("wrong_tma_probe_reads_the_replay"))
    assert all(status == "passed" for status, _ in cases(r).values())  # task 1's kernel is right
    for status, message in cases(r, "tiling.tma").values():
        assert status == "failed" and "changed its input `a`" in message, message
