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

from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from autograder.grade import AssignmentResult, Selection, grade_assignment
from autograder.replay import _count_converted, counting_writes, install_bounds_checks
from autograder.specs import SLUGS, load_spec
from conftest import REPO_ROOT, SEED, SUBMISSIONS

STORED = "Your kernels stored"
FORFEIT = "this part's points need every case within its write budget"
# How many cases of the graded parts each naive submission is refused in (the rest fit the budget and fail with their
# part), with this course's cases and budgets: a change to either shows here.
REFUSED = {"wrong_dequantize_to_memory": 8, "wrong_widen_by_conversion": 8, "byte copies": 3, "wrong_scores_stored": 2,
           "scores stored, forward and gqa": 3, "wrong_unfused": 15}


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


def _refused(outcomes: dict[str, tuple[str, str]], says: str) -> set[str]:
    """The cases refused for what they stored, with the sentence that names the technique (`says`), once every case is
    checked to have failed: the rest, where the naive stores fit the budget, with their part."""
    refused = set()
    for name, (status, message) in outcomes.items():
        assert status == "failed", (name, status, message)
        if message.startswith(STORED):
            assert says in message, (name, message)
            refused.add(name)
        else:
            assert FORFEIT in message, (name, message)
    return refused


def test_dequantizing_into_memory_a_chunk_at_a_time_fails_every_case() -> None:
    # W4A16's cases (W8A16's meet the same budget in the conversion test below)
    outcomes = _outcomes(_graded("quant_matmul", "wrong_dequantize_to_memory", {"quant_matmul.w4a16"}))
    refused = _refused(outcomes, "dequantize-then-matmul")
    # with 40 rows, a dense float32 copy of the weights (N x K) is smaller than the room split-K partial sums get
    assert not any(" M=40 " in name for name in refused)
    assert "quant_matmul.w4a16 float32 M=1 K=2048 N=130 group_size=256 dist=extreme" in refused
    assert len(refused) == REFUSED["wrong_dequantize_to_memory"], sorted(set(outcomes) - refused)


def test_weights_widened_by_a_pytorch_conversion_count_as_stored() -> None:
    outcomes = _outcomes(_graded("quant_matmul", "wrong_widen_by_conversion", {"quant_matmul.w8a16"}))
    refused = _refused(outcomes, "copies count as stores")
    assert "quant_matmul.w8a16 float32 M=1 K=2049 N=96" in refused
    assert len(refused) == REFUSED["wrong_widen_by_conversion"], sorted(set(outcomes) - refused)


# Red team 24: the int8 weights widened to 32-bit words with no conversion, by a zeroed buffer of four bytes a weight
# and a copy in one dtype into the first byte of each; the kernel reads the words and restores the sign. The zeros are
# not counted (a fill by a number carries nothing from the inputs); the byte copy, one byte a weight, is, past the
# budget at three cases of one row, and so every case fails.
BYTE_COPIES = {
    "    w = w_int8.to(torch.float32)  # (N, K): the weights widened, by PyTorch\n": (
        "    words = torch.zeros((n, k, 4), dtype=torch.uint8, device=w_int8.device)\n"
        "    words[:, :, 0].copy_(w_int8.view(torch.uint8))\n"
        "    w = words.view(torch.int32)[..., 0]  # (N, K) words, each a weight's byte\n"
    ),
    "        acc += tl.dot(x.to(tl.float32), w, input_precision=\"ieee\")\n": (
        "        w = tl.where(w > 127, w - 256, w).to(tl.float32)\n"
        "        acc += tl.dot(x.to(tl.float32), w, input_precision=\"ieee\")\n"
    ),
}


def test_weights_widened_by_copies_in_one_dtype_count_as_stored(tmp_path: Path) -> None:
    source = (SUBMISSIONS / "quant_matmul" / "wrong_widen_by_conversion.py").read_text()
    for old, new in BYTE_COPIES.items():
        assert source.count(old) == 1, "wrong_widen_by_conversion.py changed: update this test's edit"
        source = source.replace(old, new)
    path = tmp_path / "kernels.py"
    path.write_text(source)
    result = grade_assignment("quant_matmul", path, "cpu", seed=SEED, timeout=120.0,
                              selection=Selection(tasks={"quant_matmul.w8a16"}))  # fmt: skip
    outcomes = _outcomes(result)
    refused = _refused(outcomes, "copies count as stores")
    assert "quant_matmul.w8a16 float32 M=1 K=2049 N=96" in refused
    assert len(refused) == REFUSED["byte copies"], sorted(set(outcomes) - refused)


def test_a_fill_by_a_number_is_not_a_store_and_a_fill_by_a_tensor_is_a_copy() -> None:
    buf = torch.empty(100)
    with counting_writes(moves=True) as written:
        _count_converted("fill_", [buf, 2.0], buf)
        _count_converted("zero_", [buf], buf)
        _count_converted("zeros", [[100]], torch.zeros(100))
    assert written == [0]
    with counting_writes(moves=True) as written:
        _count_converted("fill_", [buf, torch.tensor(2.0)], buf)
    assert written == [400]
    with counting_writes(moves=False) as written:
        _count_converted("fill_", [buf, torch.tensor(2, dtype=torch.int8)], buf)  # a conversion as well
    assert written == [400]


def test_split_k_with_its_partials_zeroed_by_torch_passes_every_case() -> None:
    """Red team 25: 16 splits into a partials buffer from torch.zeros, vLLM's way; the fill used to count as a store of
    every partial, twice the room, and both parts were lost (W8A16's cases alone here: W4A16 zeroes its partials the
    same way, and its cases take twice as long under the interpreter)."""
    outcomes = _outcomes(_graded("quant_matmul", "correct_split_k_zeroed_partials", {"quant_matmul.w8a16"}))
    assert all(status == "passed" for status, _ in outcomes.values()), outcomes
    assert len(outcomes) == 10


def test_split_k_as_fine_as_the_budget_counts_passes_every_case() -> None:
    tasks = {"quant_matmul.w8a16", "quant_matmul.w4a16"}
    outcomes = _outcomes(_graded("quant_matmul", "correct_split_k_fine", tasks, max_cases=5))
    assert all(status == "passed" for status, _ in outcomes.values()), outcomes
    assert len(outcomes) == 10


def test_stored_scores_fail_the_forward_parts() -> None:
    tasks = {"flash_attention.forward", "flash_attention.gqa"}
    outcomes = _outcomes(_graded("flash_attention", "wrong_scores_stored", tasks))
    assert len(outcomes) == 7
    refused = _refused(outcomes, "online softmax")
    assert {name.split(" ")[0] for name in refused} == {"flash_attention.forward", "flash_attention.gqa"}
    assert len(refused) == REFUSED["scores stored, forward and gqa"], sorted(set(outcomes) - refused)


def test_a_stored_score_triangle_fails_every_causal_and_ragged_case() -> None:
    """Red team 23's: under the causal mask only the lower triangle of scores is stored, about 2 x Sk bytes a row;
    with keys up to about twice the head dim that fits the room a split forward's partials get."""
    outcomes = _outcomes(_graded("flash_attention", "wrong_scores_stored",
                                 {"flash_attention.causal", "flash_attention.ragged"}))  # fmt: skip
    assert len(outcomes) == 12
    refused = _refused(outcomes, "online softmax")
    # the longest key range of each part: 256 keys at D = 16 (causal), 300 keys at D = 16 (ragged)
    assert {"flash_attention.causal (1x2x256x16) float32 causal=True scale=0.5",
            "flash_attention.ragged (1x2x37x16) float32 seq_k=300 causal=False"} <= refused  # fmt: skip
    assert len(refused) == REFUSED["wrong_scores_stored"], sorted(set(outcomes) - refused)


def test_keys_split_over_programs_as_finely_as_the_budget_counts_pass_every_forward_case() -> None:
    tasks = {"flash_attention.forward", "flash_attention.causal", "flash_attention.gqa", "flash_attention.ragged"}
    outcomes = _outcomes(_graded("flash_attention", "correct_split_kv", tasks, max_cases=2))  # two splits and one
    assert len(outcomes) == 8
    assert all(status == "passed" for status, _ in outcomes.values()), outcomes


def test_unfused_gelu_and_softmax_fail_every_case() -> None:
    outcomes = _outcomes(_graded("fusion", "wrong_unfused", {"fusion.gelu", "fusion.softmax"}))
    refused = _refused(outcomes, "")
    # the smallest cases store twice their output within the slack for counters and padding
    assert len(refused) == REFUSED["wrong_unfused"], sorted(set(outcomes) - refused)
    named = {"fusion.gelu": "keeps every intermediate value in registers", "fusion.softmax": "written-out softmax"}
    for task, says in named.items():
        assert any(says in outcomes[name][1] for name in refused if name.startswith(task + " ")), (task, refused)


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
