"""Grading the quant_matmul assignment on the CPU tier: the solution and honest submissions score full
points (with and without a prepare() step), the stub scores zero, and each wrong submission fails the
cases that expose it, with a message that says why.

Each submission is graded once per session (a worker process costs seconds); tests then read the result.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from autograder.grade import AssignmentResult, grade_assignment
from autograder.specs import quant_matmul as spec
from conftest import REPO_ROOT, SEED, SUBMISSIONS

W8, W4 = "quant_matmul.w8a16", "quant_matmul.w4a16"
_cache: dict[str, AssignmentResult] = {}


def graded(path: Path) -> AssignmentResult:
    key = str(path)
    if key not in _cache:
        _cache[key] = grade_assignment("quant_matmul", path, "cpu", seed=SEED, timeout=60.0)
    return _cache[key]


def sub(name: str) -> Path:
    return SUBMISSIONS / "quant_matmul" / f"{name}.py"


def cases(result: AssignmentResult, task: str) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in result.cases if c.task == task and c.kind == "correctness"}


@pytest.mark.parametrize("path", [REPO_ROOT / "solutions" / "quant_matmul" / "kernels.py", sub("correct_minimal"),
                                  sub("correct_prepared"), sub("correct_kept_workspace")],
                         ids=["solution", "correct_minimal", "correct_prepared", "correct_kept_workspace"])
def test_honest_submissions_score_full_points(path: Path) -> None:
    r = graded(path)
    assert r.score(False) == pytest.approx(70.0) and r.max_score(False) == pytest.approx(70.0), \
        [(c.name, c.message) for c in r.cases if c.status != "passed" and c.kind == "correctness"]
    assert all(c.status == "skipped" and c.max_score == 0 for c in r.cases if c.kind == "speed")


def test_untouched_stub_scores_zero_and_names_each_task() -> None:
    r = graded(REPO_ROOT / "assignments" / "quant_matmul" / "kernels.py")
    assert r.score(False) == 0
    for c in r.cases:
        if c.kind == "correctness":
            assert c.status == "not_implemented", (c.name, c.message)
            assert c.message == f"Not implemented yet: fill in the TODO marked {c.task} in kernels.py."


# name -> (task, the cases that must fail, a phrase every failure's message contains)
WRONG = {
    "wrong_nibbles_swapped": (W4, "all", "outside the tolerance"),
    "wrong_zero_point_forgotten": (W4, "all", "outside the tolerance"),
    "wrong_scale_group": (W4, "all", "outside the tolerance"),
    "wrong_k_remainder_dropped": (W8, {"float32 M=1 K=100 N=37", "float32 M=5 K=257 N=19", "float32 M=1 K=1000 N=61",
                                       "float32 M=4 K=130 N=33"}, "outside the tolerance"),
    "wrong_dequantize_then_torch_matmul": (W4, "all", "The graded call computed with PyTorch (aten.mm"),
    "wrong_prepare_dequantizes": (W4, "all", "a prepared layout may re-arrange the 4-bit weights, not dequantize"),
    "wrong_dequantized_stash": (W4, "all", "memory kept from before it (a module-level buffer, or state your setup step kept)"),
    # (written for the cases of at most 4096 weights: two recorded ops a weight). Fills by a number are not counted as
    # stores, so the replay with other weights is what refuses it, on every tier.
    "wrong_weights_in_fill_values": (W4, {"float32 M=1 K=64 N=37 group_size=32", "float32 M=3 K=96 N=5 group_size=32",
                                          "float32 M=5 K=192 N=19 group_size=64", "float32 M=4 K=160 N=9 group_size=16"},
                                     "Replayed with other `w_packed`, `scales` of the same shapes"),
    "wrong_prepared_view_of_hidden_storage": (W4, "all", "replayed by the grader on new inputs"),
}


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_submission_fails_the_cases_that_expose_it(name: str) -> None:
    task, must_fail, phrase = WRONG[name]
    results = cases(graded(sub(name)), task)
    names = set(results) if must_fail == "all" else must_fail
    for case in names:
        status, message = results[case]
        assert status in ("failed", "error"), (case, status, message)
        assert any(p in message for p in ((phrase,) if isinstance(phrase, str) else phrase)), message
    assert graded(sub(name)).score(False) <= 70 - 0.5 * spec.ASSIGNMENT.part(task).points


def test_dropping_the_k_remainder_passes_where_k_is_a_whole_number_of_steps() -> None:
    r = graded(sub("wrong_k_remainder_dropped"))
    w8 = cases(r, W8)
    assert w8["float32 M=3 K=64 N=5"][0] == "passed"  # K = one whole step of 64: nothing to drop
    w4 = cases(r, W4)
    assert {n for n, (s, _) in w4.items() if s == "passed"} == {
        "float32 M=1 K=64 N=37 group_size=32", "float32 M=5 K=192 N=19 group_size=64",
        "float32 M=1 K=512 N=33 group_size=32", "float32 M=2 K=384 N=17 group_size=128",
        "float32 M=1 K=2048 N=130 group_size=256 dist=extreme", "float32 M=2 K=1024 N=70 group_size=32",
        "float32 M=3 K=384 N=17 group_size=128", "float32 M=40 K=192 N=130 group_size=64",
        "float32 M=3 K=384 N=200 group_size=128", "float32 M=40 K=256 N=33 group_size=128",
        "float32 M=3 K=256 N=520 group_size=64"}


def test_the_torch_matmul_submission_is_correct_but_refused_for_the_rule_alone() -> None:
    """Its numbers would pass: what fails it is the PyTorch op in the graded call."""
    from autograder.checking import compare
    from autograder.spec import generator
    from course.loader import load_module

    module = load_module(sub("wrong_dequantize_then_torch_matmul"), name="qm_wrong_mm")
    params = {"M": 3, "K": 96, "N": 5, "group_size": 32, "dtype": "float32"}
    inputs = spec.make_w4_inputs(params, generator(SEED, torch.device("cpu")), torch.device("cpu"))
    y = module.w4a16_matmul(inputs["x"], inputs["w_packed"], inputs["scales"], 32)
    assert compare("y", y, spec.reference_w4(inputs, params)["y"], spec.TOLERANCES["float32"]).ok


def test_every_w4_case_has_several_groups_so_a_wrong_group_shows() -> None:
    for case in spec.ASSIGNMENT.part(W4).cases:
        assert case.params["K"] // case.params["group_size"] >= 2, case.name


def test_prepare_runs_outside_the_call_and_its_result_replaces_w_packed() -> None:
    from course.loader import load_module

    module = load_module(sub("correct_prepared"), name="qm_prepared")
    params = {"M": 2, "K": 64, "N": 7, "group_size": 32, "dtype": "float32"}
    inputs = spec.make_w4_inputs(params, torch.Generator().manual_seed(SEED), torch.device("cpu"))
    prepared = spec.setup_w4(module, inputs, params)
    assert set(prepared) == {"prepared.w_t", "prepared.scales_t"}
    weights = spec._w4_weights({**inputs, **prepared})
    assert isinstance(weights, dict) and weights["w_t"].shape == (32, 7)
    assert spec._w4_weights(inputs) is inputs["w_packed"]  # no prepare(): the plain layout


def test_the_cublas_baseline_dequantizes_outside_the_timed_calls() -> None:
    params = {"M": 2, "K": 64, "N": 7, "group_size": 32, "dtype": "float32"}
    inputs = spec.make_w4_inputs(params, torch.Generator().manual_seed(SEED), torch.device("cpu"))
    y = spec.cublas_baseline(inputs, params)
    dense = inputs["_dense"]
    assert spec.cublas_baseline(inputs, params) is not None and inputs["_dense"] is dense  # made once per input set
    assert torch.allclose(y.double(), spec.reference_w4(inputs, params)["y"], rtol=1e-5, atol=1e-5)


def test_unpack_inverts_pack() -> None:
    q = torch.randint(0, 16, (5, 12), generator=torch.Generator().manual_seed(SEED), dtype=torch.uint8)
    packed = spec.pack_int4(q)
    assert packed.shape == (5, 6) and packed.dtype == torch.uint8
    assert int(packed[0, 0]) == int(q[0, 0]) | (int(q[0, 1]) << 4)  # even k in the low nibble
    assert torch.equal(spec.unpack_int4(packed), q.to(torch.int16))
