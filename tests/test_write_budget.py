"""What a part's kernels may store (Part.write_budget), counted on the CPU tier: a flash attention forward that
stores its score matrix, a quantized matmul that writes the weights widened (whole or a chunk at a time) and
multiplies after, and unfused GELU and softmax each compute the right answer in Triton, and each fails the cases
where what it stores passes the budget, with a sentence that names the technique (red team 20 took quant_matmul's
70 points and flash attention's 80 that way), and so does a PyTorch conversion that widens the weights (red team 23).
The small cases, where the naive technique stores no more than the budget allows, fail with their part (red team 23's
score triangle kept 24 of flash attention's 80 points on them). Honest split-K, and keys split over programs, at the
finest split the budget counts pass.
"""

from __future__ import annotations


import pytest
import torch
import triton
import triton.language as tl

from autograder.grade import AssignmentResult, Selection, grade_assignment
from autograder.replay import counting_writes, install_bounds_checks
from autograder.specs import SLUGS, load_spec
from conftest import REPO_ROOT, SEED, SUBMISSIONS

STORED = "Your kernels stored"
FORFEIT = "this part's points need every case within its write budget"


@triton.jit
def _store_some(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x, mask=offs < n)
    tl.atomic_add(y_ptr + offs, x, mask=offs < n // 2)
    tl.store(y_ptr, tl.sum(x, 0))  # a scalar store: one element


def test_every_stored_element_is_counted_once_with_its_size() -> None:
    install_bounds_checks()
    x = torch.arange(37, dtype=torch.float32)
    y = torch.zeros(64, dtype=torch.float32)
    with counting_writes() as written:
        _store_some[(1,)](x, y, 37, BLOCK=64)
    assert written == [(37 + 18 + 1) * 4]  # the masked store, the masked atomic, the scalar
    with counting_writes() as written:
        pass
    assert written == [0]  # each count starts anew


@pytest.mark.parametrize("slug", SLUGS)
def test_every_write_budget_says_what_it_allows(slug: str) -> None:
    for part in load_spec(slug).parts:
        if part.write_budget is not None:
            assert len(part.write_budget_says) > 80, f"{part.task} has a write budget and no sentence for it"
            assert not part.write_budget_says.endswith("."), "the refusal adds its own ending"


def _graded(slug: str, name: str, tasks: set[str], max_cases: int | None = None) -> AssignmentResult:
    return grade_assignment(slug, SUBMISSIONS / slug / f"{name}.py", "cpu", seed=SEED, timeout=120.0,
                            selection=Selection(tasks=tasks, max_cases=max_cases))  # fmt: skip


def _outcomes(result: AssignmentResult) -> dict[str, tuple[str, str]]:
    return {f"{c.task} {c.name}": (c.status, c.message or "") for c in result.cases if c.kind == "correctness"}


def _assert_refused_or_forfeit(outcomes: dict[str, tuple[str, str]], small: set[str], says: str) -> None:
    """Every case failed: the `small` ones (where the naive stores fit the budget) with their part, the rest refused
    with the sentence about stores, which `says` names the technique in."""
    for name, (status, message) in outcomes.items():
        assert status == "failed", (name, status, message)
        if name in small:
            assert FORFEIT in message and "Your kernels stored" not in message, (name, message)
        else:
            assert message.startswith(STORED) and says in message, (name, message)


def test_dequantizing_into_memory_a_chunk_at_a_time_fails_every_case() -> None:
    # W4A16's cases (W8A16's meet the same budget in the conversion test below)
    outcomes = _outcomes(_graded("quant_matmul", "wrong_dequantize_to_memory", {"quant_matmul.w4a16"}))
    # with 40 rows, a dense float32 copy of the weights (N x K) is smaller than the room split-K partial sums get
    small = {name for name in outcomes if " M=40 " in name}
    assert len(outcomes) - len(small) == 11
    _assert_refused_or_forfeit(outcomes, small, "dequantize-then-matmul")


def test_weights_widened_by_a_pytorch_conversion_count_as_stored() -> None:
    outcomes = _outcomes(_graded("quant_matmul", "wrong_widen_by_conversion", {"quant_matmul.w8a16"}))
    small = {name for name in outcomes if " M=40 " in name}
    assert len(outcomes) - len(small) == 9
    _assert_refused_or_forfeit(outcomes, small, "another dtype")


def test_split_k_as_fine_as_the_budget_counts_passes_every_case() -> None:
    tasks = {"quant_matmul.w8a16", "quant_matmul.w4a16"}
    outcomes = _outcomes(_graded("quant_matmul", "correct_split_k_fine", tasks, max_cases=5))
    assert all(status == "passed" for status, _ in outcomes.values()), outcomes
    assert len(outcomes) == 10


def test_stored_scores_fail_the_forward_parts() -> None:
    tasks = {"flash_attention.forward", "flash_attention.gqa"}
    outcomes = _outcomes(_graded("flash_attention", "wrong_scores_stored", tasks, max_cases=1))
    assert len(outcomes) == 2
    _assert_refused_or_forfeit(outcomes, set(), "online softmax")


def test_a_stored_score_triangle_fails_every_causal_and_ragged_case() -> None:
    """Red team 23's: under the causal mask only the lower triangle of scores is stored, about 2 x Sk bytes a row;
    with keys up to about twice the head dim that fits the room a split forward's partials get."""
    outcomes = _outcomes(_graded("flash_attention", "wrong_scores_stored",
                                 {"flash_attention.causal", "flash_attention.ragged"}))  # fmt: skip
    small = {"flash_attention.causal (2x2x128x32) float32 causal=True",
             "flash_attention.causal (1x2x128x32) float32 causal=True dist=hostile",
             "flash_attention.ragged (2x3x45x32) float32 causal=True",
             "flash_attention.ragged (1x4x100x32) float32 kv_heads=2 seq_k=17 causal=False",
             "flash_attention.ragged (1x2x33x64) float32 causal=True",
             "flash_attention.ragged (1x1x19x128) float32 seq_k=50 causal=False",
             "flash_attention.ragged (1x2x3x16) float32 seq_k=1 causal=False"}  # fmt: skip
    assert small < set(outcomes) and len(outcomes) == 12
    _assert_refused_or_forfeit(outcomes, small, "online softmax")


def test_keys_split_over_programs_as_finely_as_the_budget_counts_pass_every_forward_case() -> None:
    tasks = {"flash_attention.forward", "flash_attention.causal", "flash_attention.gqa", "flash_attention.ragged"}
    outcomes = _outcomes(_graded("flash_attention", "correct_split_kv", tasks, max_cases=2))  # two splits and one
    assert len(outcomes) == 8
    assert all(status == "passed" for status, _ in outcomes.values()), outcomes


def test_unfused_gelu_and_softmax_fail_every_case() -> None:
    outcomes = _outcomes(_graded("fusion", "wrong_unfused", {"fusion.gelu", "fusion.softmax"}))
    # one element: twice four bytes is within the budget's slack for a few counters
    small = {"fusion.gelu (1) float32", "fusion.softmax (1) float32"}
    _assert_refused_or_forfeit(outcomes, small, "")
    assert "keeps every intermediate value in registers" in outcomes["fusion.gelu (1000) float32"][1]
    assert "written-out softmax" in outcomes["fusion.softmax (3x100) float32"][1]


@pytest.mark.parametrize("slug", ["fusion", "rope", "swiglu", "flash_attention", "quant_matmul"])
def test_the_solutions_store_within_every_budget(slug: str) -> None:
    """Run in this process, outside the grader, so that a budget's margin shows in the assertion."""
    import importlib.util
    import sys

    install_bounds_checks()
    path = REPO_ROOT / "solutions" / slug / "kernels.py"
    spec = importlib.util.spec_from_file_location(f"_write_budget_{slug}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    for part in load_spec(slug).parts:
        if part.write_budget is None:
            continue
        for case in part.cases_for("cpu"):
            inputs = part.inputs(case.params, SEED, torch.device("cpu"))
            if part.setup is not None:
                inputs.update(part.setup(module, inputs, case.params))
            budget = part.write_budget(inputs, case.params)
            with counting_writes() as written:
                part.call(module, inputs, case.params)
            assert 0 < written[0] <= budget, (part.task, case.params, written[0], budget)
