"""Tensors allocated during a graded call sit between two fences; a write past either end is reported."""

from __future__ import annotations

import torch

from autograder.worker import FENCE_BYTES, _Watch


def _fenced(shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> tuple[_Watch, torch.Tensor]:
    watch = _Watch("nowhere.py")
    out = watch.fence(torch.ops.aten.empty_like.default, torch.full(shape, float("nan"), dtype=dtype))
    return watch, out


def _beyond(t: torch.Tensor, start: int, count: int) -> torch.Tensor:
    """`count` elements of t's storage starting `start` elements after t's first (negative: before it)."""
    return torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), t.storage_offset() + start, (count,), (1,))


def test_a_fenced_tensor_keeps_its_shape_dtype_and_contents_and_is_not_a_view() -> None:
    watch, out = _fenced((3, 5), torch.bfloat16)
    assert out.shape == (3, 5) and out.dtype == torch.bfloat16 and out.is_contiguous() and not out._is_view()
    assert torch.isnan(out).all()  # the poison the op handed out is kept
    assert out.storage_offset() * out.element_size() == FENCE_BYTES


def test_writes_inside_the_tensor_break_no_fence() -> None:
    watch, out = _fenced((4, 7))
    out.fill_(1.0)
    assert watch.broken_fences() == []


def test_a_write_past_the_end_is_reported_with_its_reach() -> None:
    watch, out = _fenced((4, 7))
    _beyond(out, 28, 5).fill_(2.0)  # 5 elements past the last one
    (problem,) = watch.broken_fences()
    assert "(`empty_like`, shape (4, 7), float32): memory up to 5 elements past its last element" in problem


def test_a_write_before_the_start_is_reported() -> None:
    watch, out = _fenced((10,))
    _beyond(out, -3, 1).fill_(2.0)
    (problem,) = watch.broken_fences()
    assert "up to 3 elements before its first element" in problem


def test_ops_that_make_no_new_tensor_are_not_fenced() -> None:
    watch = _Watch("nowhere.py")
    x = torch.zeros(4)
    assert watch.fence(torch.ops.aten.view.default, x) is x and watch.fences == []
