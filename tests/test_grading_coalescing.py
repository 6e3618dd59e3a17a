"""Grading the coalescing assignment (transpose) on the CPU tier: right answers score, wrong ones fail the
case that exposes them with a message that says how; the exact tolerance rejects every near miss.

Each submission is graded once per session (a worker process costs seconds); tests then read the result.
"""

from __future__ import annotations

import pytest
import torch

from autograder.checking import compare
from autograder.grade import AssignmentResult, grade_assignment
from autograder.spec import generator
from autograder.specs.coalescing import ASSIGNMENT, CPU_CASES, TOLERANCES, make_inputs, reference
from conftest import REPO_ROOT, SEED, SUBMISSIONS
from course.loader import load_kernels

TASK = "coalescing.transpose"
_cache: dict[str, AssignmentResult] = {}


def graded(path) -> AssignmentResult:
    if str(path) not in _cache:
        _cache[str(path)] = grade_assignment("coalescing", path, "cpu", seed=SEED, timeout=60.0)
    return _cache[str(path)]


def sub(name: str):
    return SUBMISSIONS / "coalescing" / f"{name}.py"


def cases(result: AssignmentResult) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in result.cases if c.kind == "correctness"}


def test_solution_scores_full_points() -> None:
    r = graded(REPO_ROOT / "solutions" / "coalescing" / "kernels.py")
    assert r.score(False) == pytest.approx(60.0) and r.max_score(False) == pytest.approx(60.0)
    assert all(c.message == "max error 0% of the tolerance" for c in r.cases if c.kind == "correctness")
    assert all(c.status == "skipped" for c in r.cases if c.kind == "speed")


def test_untouched_stub_scores_zero_with_a_not_implemented_message() -> None:
    r = graded(REPO_ROOT / "assignments" / "coalescing" / "kernels.py")
    assert r.score(False) == 0
    for status, message in cases(r).values():
        assert status == "not_implemented"
        assert message == "Not implemented yet: fill in the TODO marked coalescing.transpose in kernels.py."


def test_a_minimal_tiled_transpose_passes_every_case() -> None:
    assert all(status == "passed" for status, _ in cases(graded(sub("correct_minimal"))).values())


NON_SQUARE = {"(33x17) float32", "(17x33) float32", "(100x300) float32", "(129x65) float32", "(257x31) float32"}


def test_rows_and_columns_swapped_fails_every_non_square_case_and_passes_square_ones() -> None:
    results = cases(graded(sub("wrong_rows_cols_swapped")))
    for name in NON_SQUARE:
        assert results[name][0] == "failed" and "outside the tolerance" in results[name][1], results[name]
    assert results["(64x64) float32"][0] == "passed"  # square: the bug cannot show
    assert results["(1x1) float32"][0] == "passed"


def test_masks_on_the_buffer_instead_of_the_tile_edge_fail_where_a_tile_overhangs() -> None:
    results = cases(graded(sub("wrong_tile_edge_unmasked")))
    for name in NON_SQUARE | {"(1x77) float32"}:
        status, message = results[name]
        assert status == "failed", (name, status, message)
        # The overhanging rows of a tile wrap into the next row of out and overwrite its first columns.
        assert "got 0, expected" in message and "The first is at index (1, 0)" in message, message
    assert results["(64x64) float32"][0] == "passed"  # a multiple of the tile: no edge to overhang


def test_a_transpose_by_pytorch_copy_is_refused_even_though_copies_are_allowed_elsewhere() -> None:
    results = cases(graded(sub("wrong_calls_pytorch")))
    for name in NON_SQUARE | {"(64x64) float32"}:
        status, message = results[name]
        assert status == "failed" and "computed with PyTorch (aten.clone)" in message
        assert "the copy that transposes is the operation you are writing" in message
    # A vector's transpose is a view PyTorch returns without copying: no copy to refuse, but the result is
    # the input's own memory, which no graded call may return.
    status, message = results["(1x77) float32"]
    assert status == "failed" and "shares memory with the input" in message, message


def test_zero_output_fails_every_case() -> None:
    r = graded(sub("wrong_zero_output"))
    assert r.score(False) == 0
    assert all("Every element is zero" in message for _, message in cases(r).values())


# --------------------------------------------------------------------------------------------------
# The exact tolerance, on the graded CPU shapes: a transpose moves bits, so only exact results pass.
# --------------------------------------------------------------------------------------------------


def _verdict(params: dict, fn) -> bool:
    device = torch.device("cpu")
    x = make_inputs(params, generator(SEED, device), device)["x"]
    out = fn(x)
    ref = reference({"x": x}, params)["out"]
    if tuple(out.shape) != tuple(ref.shape):
        return False
    return compare("out", out, ref, TOLERANCES[params["dtype"]]).ok


def _one_ulp_off(t: torch.Tensor) -> torch.Tensor:
    flat = t.reshape(-1).clone()
    flat[-1] = torch.nextafter(flat[-1], torch.tensor(float("inf")))
    return flat.view_as(t)


def _swap_first_two(t: torch.Tensor) -> torch.Tensor:
    flat = t.reshape(-1).clone()
    if flat.numel() > 1:
        flat[[0, 1]] = flat[[1, 0]]
    else:
        flat[0] = -flat[0]
    return flat.view_as(t)


NEAR_MISSES = {
    "one element off by one ulp": lambda x: _one_ulp_off(x.t().contiguous()),
    "rounded through bfloat16": lambda x: x.t().contiguous().to(torch.bfloat16).to(x.dtype),
    "zero output": lambda x: torch.zeros(x.shape[1], x.shape[0], dtype=x.dtype),
    "input passed through": lambda x: x.clone(),
    "two neighbours swapped": lambda x: _swap_first_two(x.t().contiguous()),
}


@pytest.mark.parametrize("params", [{**p, "dtype": "float32"} for p in CPU_CASES], ids=lambda p: "x".join(map(str, p["shape"])))
def test_exact_tolerance_passes_the_transpose_and_rejects_every_near_miss(params: dict) -> None:
    assert _verdict(params, lambda x: x.t().contiguous())
    for name, fn in NEAR_MISSES.items():
        if name == "input passed through" and (params["shape"][0] != params["shape"][1] or params["shape"] == [1, 1]):
            continue  # a different shape (the grader says so before comparing values), or one element: x is x.T
        assert not _verdict(params, fn), name


# --------------------------------------------------------------------------------------------------
# The solution's wrapper: dtypes beyond the graded ones, empty tensors, and errors a student can act on.
# --------------------------------------------------------------------------------------------------

k = load_kernels("coalescing", "solutions")


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.int8, torch.bfloat16])
def test_transpose_moves_any_element_size_exactly(dtype: torch.dtype) -> None:
    x = (torch.randn(37, 130) * 100).to(dtype)
    out = k.transpose(x)
    assert out.dtype == dtype and out.is_contiguous() and torch.equal(out, x.t())


def test_empty_inputs_give_empty_transposes() -> None:
    assert k.transpose(torch.empty(0, 5)).shape == (5, 0)
    assert k.transpose(torch.empty(3, 0)).shape == (0, 3)


@pytest.mark.parametrize(
    "make, error, phrase",
    [
        (lambda: k.transpose(torch.randn(2, 3, 4)), ValueError, "`x` must have 2 dimensions, got shape (2, 3, 4)"),
        (lambda: k.transpose(torch.randn(4, 6).t()), ValueError, "`x` must be contiguous"),
        (lambda: k.transpose(torch.zeros(3, 3, dtype=torch.bool)), TypeError, "`x` must have dtype float32"),
        (lambda: k.transpose([[1.0, 2.0]]), TypeError, "`x` must be a torch.Tensor, got list"),
    ],
)
def test_bad_arguments_get_a_sentence(make, error, phrase: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert phrase in str(info.value)


def test_the_spec_refuses_only_copies_beyond_the_common_rules() -> None:
    assert {"clone", "copy_", "_to_copy"} <= ASSIGNMENT.forbidden_ops
    assert not {"empty", "t", "transpose", "view", "as_strided"} & ASSIGNMENT.forbidden_ops


def test_an_out_variant_of_a_view_op_is_pytorch_doing_the_copy() -> None:
    """`_unsafe_view` is an allowed name; its `.out` overload copies into the tensor it is given (a red team's
    transpose under a view's name)."""
    for name, (status, message) in cases(graded(sub("wrong_out_variant_copy"))).items():
        assert status == "failed" and "ran PyTorch's aten._unsafe_view.out, which writes its result into a tensor" in message, (name, message)


def test_a_transposed_view_of_a_copy_is_not_a_transpose() -> None:
    """The grader reads a reply's values in its own layout: returning buf.t() once had the grader make it contiguous,
    doing the work. Where the layouts agree (one row or one column) the copy is the transpose, and passes."""
    results = cases(graded(sub("wrong_transposed_view_output")))
    for name in NON_SQUARE | {"(64x64) float32"}:
        status, message = results[name]
        assert status == "failed" and "`out` is not laid out row-major" in message, (name, message)
    assert results["(1x77) float32"][0] == "passed"
