"""A GPU without bfloat16 tensor cores (sm_75, a Colab T4): its bfloat16 cases are reported as not gradeable,
with the reason, and worth nothing either way; its float32 and float16 cases are graded as usual.

The T4 is faked on the CPU: the grader is told the device is a T4 and grades the GPU tier's smallest
cases under the interpreter. Likewise a speed case about Hopper's tensor-memory accelerator (the tiling TMA bonus)
is not timed on a GPU without one, where Triton makes the descriptors' loads ordinary loads.
"""

from __future__ import annotations

import pytest

import autograder.grade as grade
from autograder.grade import Selection, grade_assignment
from conftest import REPO_ROOT, SEED
from course.device import INTERPRETER, KNOWN_GPUS, lacks_tma, not_gradeable

T4 = KNOWN_GPUS["Tesla T4"]


@pytest.mark.parametrize(("gpu", "dtype", "gradeable"), [
    ("Tesla T4", "bfloat16", False), ("Tesla T4", "float16", True), ("Tesla T4", "float32", True),
    ("NVIDIA A100-SXM4-80GB", "bfloat16", True), ("NVIDIA H100 80GB HBM3", "bfloat16", True),
])  # fmt: skip
def test_bfloat16_needs_ampere_or_newer(gpu: str, dtype: str, gradeable: bool) -> None:
    assert (not_gradeable(KNOWN_GPUS[gpu], dtype) == "") is gradeable


def test_the_interpreter_grades_every_dtype_it_is_given() -> None:
    assert not_gradeable(INTERPRETER, "bfloat16") == ""


def test_a_t4_grades_float32_and_reports_bfloat16_as_not_gradeable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grade, "grading_device", lambda device: T4)
    names = {"(3x5x7) float32", "(3x5x7) bfloat16"}
    result = grade_assignment("tiling", REPO_ROOT / "solutions" / "tiling" / "kernels.py", "cpu", seed=SEED, timeout=60.0,
                              selection=Selection(names=names, case_tier="gpu", speed=False))  # fmt: skip
    by_name = {c.name: c for c in result.cases if c.kind == "correctness"}
    assert set(by_name) == names
    assert by_name["(3x5x7) float32"].status == "passed" and by_name["(3x5x7) float32"].max_score > 0
    bf16 = by_name["(3x5x7) bfloat16"]
    assert (bf16.status, bf16.score, bf16.max_score) == ("not_gradeable", 0.0, 0.0)
    assert "sm_75" in bf16.message and "bfloat16" in bf16.message
    assert "not gradeable" in result.note


@pytest.mark.parametrize(("gpu", "timed"), [
    ("Tesla T4", False), ("NVIDIA A100-SXM4-80GB", False), ("NVIDIA L4", False),
    ("NVIDIA H100 80GB HBM3", True), ("NVIDIA B200", True), ("NVIDIA GeForce RTX 5090", True),
])  # fmt: skip
def test_a_speed_case_about_the_tma_is_timed_only_on_gpus_that_have_one(gpu: str, timed: bool) -> None:
    why = lacks_tma(KNOWN_GPUS[gpu])
    assert (why == "") is timed
    if not timed:
        assert f"sm_{KNOWN_GPUS[gpu].arch}" in why and "tensor-memory accelerator" in why and "H100" in why


def test_only_the_tiling_tma_bonus_needs_a_tma_and_the_interpreter_never_refuses_it() -> None:
    from autograder.specs import SLUGS, load_spec

    needing = {(slug, sc.task) for slug in SLUGS for sc in load_spec(slug).speed if sc.needs_tma}
    assert needing == {("tiling", "tiling.tma")}
    assert lacks_tma(INTERPRETER) == ""
