"""Every assignment's `python -m autograder bench` suite builds on the CPU and labels its rows: the bench runs
only on a GPU, where a suite that cannot name a row's shape fails after minutes of timing (rmsnorm's
fused-linear rows, given by M, K and N, did on 2026-11-25)."""

from __future__ import annotations

import importlib

import pytest

from autograder.bench import bench_shape
from autograder.specs import SLUGS
from course.loader import load_kernels


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("slug", SLUGS)
def test_each_bench_case_names_its_shape_dtype_implementations_and_bytes(slug: str, quick: bool) -> None:
    spec_module = importlib.import_module(f"autograder.specs.{slug}")
    suite = spec_module.bench_suite(load_kernels(slug, "solutions"), quick)
    assert suite, f"{slug}: the bench suite is empty"
    for case in suite:
        shape = bench_shape(case.params)
        assert shape and all(isinstance(n, int) and n > 0 for n in shape), (slug, case.pass_name, case.params)
        assert case.params["dtype"] in ("float32", "float16", "bfloat16")
        assert "solution" in case.impls and len(case.impls) >= 2, (slug, case.pass_name, sorted(case.impls))
        assert case.bytes_moved > 0


def test_a_product_given_by_m_k_n_is_labelled_by_them_and_anything_else_must_have_a_shape() -> None:
    assert bench_shape({"M": 16, "K": 4096, "N": 14336, "dtype": "bfloat16"}) == [16, 4096, 14336]
    assert bench_shape({"shape": (8, 32, 1, 128), "M": 3}) == [8, 32, 1, 128]
    with pytest.raises(KeyError, match="needs a 'shape'"):
        bench_shape({"dtype": "float16"})
