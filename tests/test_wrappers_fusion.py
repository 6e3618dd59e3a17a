"""The fusion wrappers refuse bad arguments with sentences, and handle empty and odd-shaped tensors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from course.loader import load_kernels

k = load_kernels("fusion", "solutions")


@pytest.mark.parametrize(
    "call, error, phrase",
    [
        (lambda: k.gelu([1.0, 2.0]), TypeError, "gelu: `x` must be a torch.Tensor"),
        (lambda: k.gelu(torch.randn(4, dtype=torch.float64)), TypeError, "`x` must have dtype float32, float16, bfloat16"),
        (lambda: k.gelu(torch.randn(4, 3).t()), ValueError, "`x` must be contiguous"),
        (lambda: k.softmax(torch.tensor(1.0)), ValueError, "softmax: `x` must have at least 1 dimension"),
        (lambda: k.softmax(torch.randn(4, 3).t()), ValueError, "pass `x.contiguous()`"),
        (lambda: k.softmax(torch.randn(3, 4).to("meta")), ValueError, "`x` is on meta"),
    ],
)
def test_bad_arguments_are_explained(call, error, phrase) -> None:
    with pytest.raises(error, match=None) as info:
        call()
    assert phrase in str(info.value)


def test_empty_tensors_come_back_empty() -> None:
    assert k.gelu(torch.empty(0, 7)).shape == (0, 7)
    assert k.softmax(torch.empty(5, 0)).shape == (5, 0)
    assert k.softmax(torch.empty(0, 9)).shape == (0, 9)


def test_zero_dim_gelu_and_leading_dims_softmax() -> None:
    x = torch.tensor(1.5)
    torch.testing.assert_close(k.gelu(x), F.gelu(x, approximate="tanh"))
    x = torch.randn(2, 3, 5, 37)
    torch.testing.assert_close(k.softmax(x), torch.softmax(x, -1))
