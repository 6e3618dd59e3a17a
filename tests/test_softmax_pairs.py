"""The softmax solution's PAIRS path (bfloat16 rows held as 32-bit words, two values each) is right, and taken
only where it may be.

The CPU tier grades float32 only, so no graded case reaches this path here (the GPU tier grades it in
bfloat16); the interpreter runs it on bfloat16 inputs, whose arithmetic the kernel does in float32 after
unpacking the words with integer operations. Inputs are the spec's own, hostile rows included,
judged against the float64 reference with the spec's tolerances.
"""

from __future__ import annotations

import pytest
import torch

import solutions.fusion.kernels as fusion
from autograder.specs.fusion import SOFTMAX_TOLERANCES, make_softmax_inputs
from course.comparison import compare
from conftest import SEED


@pytest.fixture
def pairs_flags(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The PAIRS value of every softmax launch made while the test runs."""
    seen: list[bool] = []
    launch = fusion.launch

    def recording(kernel, grid, *args, **meta):  # noqa: ANN001, ANN202
        if kernel is fusion._softmax_kernel:
            seen.append(meta["PAIRS"])
        return launch(kernel, grid, *args, **meta)

    monkeypatch.setattr(fusion, "launch", recording)
    return seen


def _check(x: torch.Tensor, dtype_name: str) -> None:
    y = fusion.softmax(x)
    verdict = compare("y", y, torch.softmax(x.double(), dim=-1), SOFTMAX_TOLERANCES[dtype_name])
    assert verdict.ok, verdict.message


@pytest.mark.parametrize(
    "params",
    [
        {"shape": [3, 20000]},  # a tile of 32768: the last words of each row masked
        {"shape": [2, 32768]},  # a full tile
        {"shape": [2, 16386]},  # the shortest row of the bucket, one word past a power of two
        {"shape": [10, 20000], "dist": "hostile"},  # -inf, equal, rising, huge and very negative rows
        {"shape": [2, 3, 17000], "offset": 100.0},
    ],
)
def test_pairs_path_matches_the_reference(params: dict, pairs_flags: list[bool]) -> None:
    g = torch.Generator().manual_seed(SEED)
    x = make_softmax_inputs({**params, "dtype": "bfloat16"}, g, torch.device("cpu"))["x"]
    _check(x, "bfloat16")
    assert pairs_flags == [True]


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda: torch.randn(3, 20001).to(torch.bfloat16), "odd row length"),
        (lambda: torch.randn(3, 20000), "float32"),
        (lambda: torch.randn(3, 20000).to(torch.float16), "float16: widening it takes conversions"),
        (lambda: torch.randn(2 * 20000 + 1).to(torch.bfloat16)[1:].view(2, 20000), "start not 4-byte aligned"),
        (lambda: torch.randn(3, 40000).to(torch.bfloat16), "row longer than one tile"),
        (lambda: torch.randn(5, 3000).to(torch.bfloat16), "bucket measured faster without"),
    ],
)
def test_pairs_path_is_taken_only_where_it_may_be(make, why: str, pairs_flags: list[bool]) -> None:  # noqa: ANN001
    torch.manual_seed(SEED)
    x = make()
    _check(x, {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}[x.dtype])
    assert pairs_flags == [False], why
