"""A failed comparison says where and how: first bad index, count, NaN from unwritten memory, block edges."""

from __future__ import annotations

import pytest
import torch

from autograder.checking import check_meta, compare
from autograder.spec import Tolerance

TOL = Tolerance(rtol=1e-5, atol=1e-5)


def _ref() -> torch.Tensor:
    return torch.arange(1, 3 * 100 + 1, dtype=torch.float64).reshape(3, 100) / 7


def test_identical_output_passes_with_zero_error() -> None:
    ref = _ref()
    verdict = compare("y", ref.float(), ref, TOL)
    assert verdict.ok and verdict.max_error < 0.1


def test_wrong_tail_columns_are_reported_as_a_block_edge() -> None:
    ref = _ref()
    out = ref.clone()
    out[:, 64:] += 1.0
    verdict = compare("y", out, ref, TOL)
    assert not verdict.ok
    assert "108 of 300 elements" in verdict.message
    assert "index (0, 64)" in verdict.message
    assert "columns 64..99 of 100, past a multiple of 64" in verdict.message


def test_one_stray_element_near_the_end_is_not_called_a_block_edge() -> None:
    """A single element off in the last rows (a rounding outlier, say) is no block edge: until 2026-12-06 the message
    said that every wrong element lay in columns 79..127 and rows 230..255, the span from it to the end."""
    ref = _ref()
    out = ref.clone()
    out[1, 79] += 1.0  # rows 1..2 and columns 79..99 are "from it to the end", but only one element is off
    verdict = compare("y", out, ref, TOL)
    assert not verdict.ok
    assert "1 of 300 elements" in verdict.message and "index (1, 79)" in verdict.message
    assert "columns" not in verdict.message and "are wrong (of" not in verdict.message


def test_unwritten_elements_are_reported_as_nan_poison() -> None:
    ref = _ref()
    out = ref.clone()
    out[2, :] = float("nan")
    verdict = compare("y", out, ref, TOL)
    assert not verdict.ok
    assert "100 elements are NaN" in verdict.message and "never written" in verdict.message
    assert "Only the last row is wrong (of 3 rows" in verdict.message


def test_an_all_zero_output_is_named() -> None:
    verdict = compare("y", torch.zeros(3, 100), _ref(), TOL)
    assert not verdict.ok and "Every element is zero" in verdict.message


def test_meta_mismatches_are_sentences() -> None:
    t = torch.zeros(3, 100)
    assert check_meta("y", [1, 2], (3, 100), torch.float32, "cpu") == "`y` should be a torch.Tensor, but the call returned list."
    assert "has shape (300,), but should have shape (3, 100)" in check_meta("y", t.view(-1), (3, 100), torch.float32, "cpu")
    assert "has dtype float16, but should have float32" in check_meta("y", t.half(), (3, 100), torch.float32, "cpu")
    assert check_meta("y", t, (3, 100), torch.float32, "cpu") == ""


def test_a_per_row_tolerance_judges_large_rows_on_their_own_scale_and_small_ones_as_before() -> None:
    ref = torch.ones(2, 100, dtype=torch.float64)
    ref[0] *= 1e-3  # a row a thousand times smaller than the other; the tensor's mean is about 0.5
    tensor, per_row = Tolerance(rtol=1e-2, atol=1e-2), Tolerance(rtol=1e-2, atol=1e-2, scale="row_or_tensor")
    big = ref.clone()
    big[1] += 0.018  # 1.8% of its row: over 0.01 * 0.5 + 0.01 * 1, within 0.01 * 1 + 0.01 * 1
    assert not compare("y", big, ref, tensor).ok
    assert compare("y", big, ref, per_row).ok
    small = ref.clone()
    small[0] += 4e-3  # 400% of its row, but judged against the tensor's mean in both modes
    assert compare("y", small, ref, tensor).ok and compare("y", small, ref, per_row).ok
    worse = ref.clone()
    worse[0] += 6e-3
    verdict = compare("y", worse, ref, per_row)
    assert not verdict.ok and "max(mean|ref| of its row, of the tensor)" in verdict.message


def test_a_row_tolerance_judges_each_row_on_its_own_size() -> None:
    ref = torch.ones(2, 100, dtype=torch.float64)
    ref[0] *= 1e-3  # a normalised row whose input was near zero
    tensor, row = Tolerance(rtol=1e-2, atol=1e-2), Tolerance(rtol=1e-2, atol=1e-2, scale="row")
    small = ref.clone()
    small[0] += 4e-3  # 400% of its own row: the tensor's mean waves it through, its row's does not
    assert compare("y", small, ref, tensor).ok
    verdict = compare("y", small, ref, row)
    assert not verdict.ok and "mean|ref| of its row" in verdict.message


def test_a_sum_that_cancels_is_judged_against_its_terms() -> None:
    from autograder.checking import attach_term_scale

    terms = torch.full((4, 8), 1e6, dtype=torch.float64)  # each element sums terms of size 1e6 ...
    ref = torch.full((4, 8), 1e-2, dtype=torch.float64)  # ... that cancel down to 0.01
    out = ref + 1.0  # float32 rounding of 1e6-sized terms: about 0.06 each
    tol = Tolerance(rtol=1e-5, atol=1e-5)
    assert not compare("c", out, ref, tol).ok
    assert compare("c", out, attach_term_scale(ref.clone(), terms), tol).ok
    assert not compare("c", ref + 100.0, attach_term_scale(ref.clone(), terms), tol).ok


def test_infinite_reference_elements_must_be_matched_and_do_not_inflate_the_scale() -> None:
    ref = torch.tensor([[1.0, float("inf"), -2.0, float("-inf")]], dtype=torch.float64)
    assert compare("y", ref.float(), ref, TOL).ok
    finite_there = ref.clone()
    finite_there[0, 1] = 3e38  # finite where the reference is +inf
    verdict = compare("y", finite_there, ref, TOL)
    assert not verdict.ok and "index (0, 1)" in verdict.message
    wrong_sign = ref.clone()
    wrong_sign[0, 3] = float("inf")
    assert not compare("y", wrong_sign, ref, TOL).ok
    off = ref.clone()
    off[0, 0] = 1.5  # mean|ref| over the finite elements is 1.5, not inf: a 50% error fails
    assert not compare("y", off, ref, TOL).ok


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_subnormal_tie_rounded_either_way_passes_and_two_spacings_off_fails(dtype: torch.dtype) -> None:
    # Found on an H100: GeLU of tiny float16 inputs is x/2 of a subnormal, a tie between two subnormals.
    info = torch.finfo(dtype)
    spacing = info.smallest_normal * info.eps
    ref = torch.tensor([1.5 * spacing, -1.5 * spacing, 9.5 * spacing], dtype=torch.float64)
    tol = Tolerance(rtol=2e-3, atol=1e-5)
    for rounded in ([1, -1, 9], [2, -2, 10]):
        out = (torch.tensor(rounded, dtype=torch.float64) * spacing).to(dtype)
        assert compare("y", out, ref, tol).ok, rounded
    far = (torch.tensor([4.0, -1.0, 9.0], dtype=torch.float64) * spacing).to(dtype)
    verdict = compare("y", far, ref, tol)
    assert not verdict.ok and "index (0)" in verdict.message


def test_a_reference_past_the_dtype_range_accepts_the_correctly_rounded_infinity_only() -> None:
    # Found on an H100: SwiGLU of float16 inputs near the dtype's limit, 78312.7, is inf in float16.
    ref = torch.tensor([78312.7, -66865.3, 1000.0], dtype=torch.float64)
    tol = Tolerance(rtol=7.5e-4, atol=1e-5)
    assert compare("y", torch.tensor([float("inf"), -float("inf"), 1000.0], dtype=torch.float16), ref, tol).ok
    for wrong in ([-float("inf"), -float("inf"), 1000.0], [65504.0, -float("inf"), 1000.0]):
        assert not compare("y", torch.tensor(wrong, dtype=torch.float16), ref, tol).ok, wrong
    # in float32 the same values are representable: an infinity is wrong there
    assert not compare("y", torch.tensor([float("inf"), -66865.3, 1000.0]), ref, tol).ok
