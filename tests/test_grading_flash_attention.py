"""Grading the flash attention assignment on the CPU tier: the solution scores full marks, the stub zero,
a minimal honest kernel passes the forward parts, and each wrong submission fails exactly the cases
that expose its bug, with a message that says so.

Every submission is graded once per session, all of them at the same time (each in its own worker
process), and the tests read the results.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from autograder.grade import AssignmentResult, Selection, grade_assignment
from conftest import REPO_ROOT, SEED, SUBMISSIONS

SLUG = "flash_attention"
SOLUTION = REPO_ROOT / "solutions" / SLUG / "kernels.py"
STUB = REPO_ROOT / "assignments" / SLUG / "kernels.py"
KV_INT8 = "flash_attention.kv_int8"
KV_INT4 = "flash_attention.kv_int4"
FORWARD_PARTS = ("flash_attention.forward", "flash_attention.causal", "flash_attention.gqa", "flash_attention.ragged")


def sub(name: str) -> Path:
    return SUBMISSIONS / SLUG / f"{name}.py"


# name -> (the cases that must fail, a phrase their messages must contain, the cases that must pass)
LARGE = "(1x2x67x16) float32 causal=False score_std=40.0"
RAGGED_NON_CAUSAL = {
    "(1x2x70x16) float32 causal=False",
    "(1x2x37x16) float32 seq_k=300 causal=False",
    "(1x4x100x32) float32 kv_heads=2 seq_k=17 causal=False",
    "(1x1x19x128) float32 seq_k=50 causal=False",
    "(1x2x3x16) float32 seq_k=1 causal=False",
    LARGE,
}
CAUSAL_CASES = {
    "(1x2x64x16) float32 causal=True",
    "(2x2x128x32) float32 causal=True",
    "(1x2x256x16) float32 causal=True scale=0.5",
    "(2x6x64x32) float32 kv_heads=2 causal=True",
    "(2x3x45x32) float32 causal=True",
    "(1x2x33x64) float32 causal=True",
}
NON_GQA_FORWARD = {
    "(1x2x64x16) float32 causal=False",
    "(2x2x128x32) float32 causal=False",
    "(1x2x256x16) float32 causal=False scale=0.3",
} | {c for c in CAUSAL_CASES if "kv_heads" not in c}
GQA_CASES = {
    "(1x4x64x16) float32 kv_heads=1 causal=False",
    "(2x6x64x32) float32 kv_heads=2 causal=True",
    "(1x4x128x16) float32 kv_heads=1 causal=False",
    "(1x4x100x32) float32 kv_heads=2 seq_k=17 causal=False",
}
# With one key block of 64 (the minimal kernel's), per-block and global softmax agree.
ONE_KEY_BLOCK = {
    "(1x2x64x16) float32 causal=False",
    "(1x2x64x16) float32 causal=True",
    "(1x4x64x16) float32 kv_heads=1 causal=False",
    "(2x6x64x32) float32 kv_heads=2 causal=True",
    "(1x4x100x32) float32 kv_heads=2 seq_k=17 causal=False",
    "(1x2x33x64) float32 causal=True",
    "(1x1x19x128) float32 seq_k=50 causal=False",
    "(1x2x3x16) float32 seq_k=1 causal=False",
}  # the forward parts' cases: the decode bonus grades its own kernels, which these submissions do not have
ONE_KEY = "(1x2x3x16) float32 seq_k=1 causal=False"
OUTSIDE = "outside the tolerance"
WRONG: dict[str, tuple[set[str], str, set[str]]] = {
    "wrong_no_max_subtraction": ({LARGE}, "are NaN", NON_GQA_FORWARD | GQA_CASES | (RAGGED_NON_CAUSAL - {LARGE})),
    "wrong_causal_off_by_one": (CAUSAL_CASES, OUTSIDE, (NON_GQA_FORWARD - CAUSAL_CASES) | RAGGED_NON_CAUSAL),
    # With score_std=40 the padding keys' exp(0 - m) is too small to see: that case passes.
    "wrong_last_block_unmasked": (RAGGED_NON_CAUSAL - {LARGE}, OUTSIDE, NON_GQA_FORWARD | CAUSAL_CASES | {LARGE}),
    # With a single key the softmax is 1 whatever the scale: that case passes.
    "wrong_scale_missing": (NON_GQA_FORWARD | GQA_CASES, OUTSIDE, {ONE_KEY}),
    "wrong_scale_twice": (NON_GQA_FORWARD | GQA_CASES, OUTSIDE, {ONE_KEY}),
    "wrong_softmax_per_block": (
        {"(2x2x128x32) float32 causal=False", "(1x2x256x16) float32 causal=False scale=0.3",
         "(1x4x128x16) float32 kv_heads=1 causal=False", "(1x2x70x16) float32 causal=False",
         "(1x2x37x16) float32 seq_k=300 causal=False"},
        "outside the tolerance",
        ONE_KEY_BLOCK,
    ),  # fmt: skip
    "wrong_calls_pytorch": (NON_GQA_FORWARD | GQA_CASES, "The graded call computed with PyTorch (aten.", set()),
}
# K/V read through the query head's index: reading past the end of K can also crash the worker.
KV_AS_Q = "wrong_kv_heads_as_q"

_cache: dict[str, AssignmentResult] = {}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """The float64 references of parallel gradings run in this process: one torch thread each."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _grade(path: Path) -> AssignmentResult:
    return grade_assignment(SLUG, path, "cpu", seed=SEED, timeout=120.0)


def graded(name: str) -> AssignmentResult:
    """The result for a submission (or 'solution' / 'stub'); the first call grades them all, in parallel."""
    if not _cache:
        paths = {"solution": SOLUTION, "stub": STUB, "correct_minimal": sub("correct_minimal"), KV_AS_Q: sub(KV_AS_Q)}
        paths.update({n: sub(n) for n in WRONG})
        with ThreadPoolExecutor(max_workers=max(2, min(6, os.cpu_count() or 2))) as pool:
            futures = {n: pool.submit(_grade, p) for n, p in paths.items()}
            _cache.update({n: f.result() for n, f in futures.items()})
    return _cache[name]


def cases(result: AssignmentResult, tasks: tuple[str, ...] = FORWARD_PARTS) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in result.cases if c.task in tasks and c.kind == "correctness"}


def test_solution_scores_full_points_and_full_bonus() -> None:
    r = graded("solution")
    assert r.score(False) == pytest.approx(80.0) and r.max_score(False) == pytest.approx(80.0)
    assert r.score(True) == pytest.approx(50.0) and r.max_score(True) == pytest.approx(50.0)
    assert all(c.status == "skipped" and c.max_score == 0 for c in r.cases if c.kind == "speed")
    assert {c.task for c in r.cases if c.kind == "speed"} == {"flash_attention.forward", "flash_attention.causal",
                                                                "flash_attention.decode", KV_INT8, KV_INT4}  # fmt: skip


def test_untouched_stub_scores_zero_and_names_the_task_to_fill_in() -> None:
    r = graded("stub")
    assert r.score(False) == 0 and r.score(True) == 0
    expected = {part: "flash_attention.forward" for part in FORWARD_PARTS}
    expected["flash_attention.backward"] = "flash_attention.forward"  # the backward needs the forward first
    expected["flash_attention.decode"] = "flash_attention.decode"
    expected[KV_INT8] = KV_INT8
    expected[KV_INT4] = KV_INT4
    for c in r.cases:
        if c.kind == "correctness":
            assert c.status == "not_implemented", (c.name, c.status, c.message)
            # a one-row query's forward is the decode path, whose logsumexp its backward reads
            task = "flash_attention.decode" if c.task == "flash_attention.backward" and "x1x" in c.name else expected[c.task]
            assert c.message == f"Not implemented yet: fill in the TODO marked {task} in kernels.py."


def test_a_minimal_honest_kernel_passes_every_forward_case_and_not_the_decode_bonus() -> None:
    r = graded("correct_minimal")
    results = cases(r, FORWARD_PARTS)
    assert results and all(status == "passed" for status, _ in results.values()), results
    assert r.score(False) == pytest.approx(80.0)
    # its one kernel answers one query row too, but the decode bonus grades the split-K kernels (red team 18)
    decode = cases(r, ("flash_attention.decode",))
    assert decode and all(status == "failed" and "`_attn_kernel`, which is not one of this part's kernels" in message
                          for status, message in decode.values()), decode  # fmt: skip
    for status, message in cases(r, ("flash_attention.backward",)).values():
        assert status == "error"
        assert "no autograd history: route the call through FlashAttentionFunction.apply" in message


@pytest.mark.parametrize("name", list(WRONG))
def test_wrong_submission_fails_the_cases_that_expose_it(name: str) -> None:
    must_fail, phrase, must_pass = WRONG[name]
    results = cases(graded(name), FORWARD_PARTS)
    for case in must_fail:
        status, message = results[case]
        assert status == "failed", (case, status, message)
        assert phrase in message, message
    for case in must_pass:
        assert results[case][0] == "passed", (case, results[case])
    assert graded(name).score(False) < 80


HOSTILE = {"(1x2x128x16) float32 causal=False dist=hostile", "(1x2x128x32) float32 causal=True dist=hostile"}


def test_no_max_subtraction_fails_only_where_scores_pass_88_or_sit_near_minus_120() -> None:
    results = cases(graded("wrong_no_max_subtraction"))
    # exp(s) overflows past 88 (score_std 40) and underflows to 0 / 0 on the hostile rows near -120
    assert {n for n, (s, _) in results.items() if s != "passed"} == {LARGE} | HOSTILE


def test_an_unmasked_last_block_fails_every_non_causal_ragged_case() -> None:
    r = graded("wrong_last_block_unmasked")
    failing = {n for n, (s, _) in cases(r, FORWARD_PARTS).items() if s != "passed"}
    # Causal cases hide the bug (the causal mask already removes every key past the last query), and so
    # do very peaked rows, where exp(0 - max) vanishes. (Its decode cases, the same kernel at one query row, are not
    # the decode bonus's kernels: tests/test_part_kernels.py.)
    assert failing == RAGGED_NON_CAUSAL - {LARGE}


def test_kv_heads_indexed_as_query_heads_fail_the_gqa_cases_only() -> None:
    results = cases(graded(KV_AS_Q))
    for case in GQA_CASES:
        assert results[case][0] in ("failed", "error"), (case, results[case])
    for case in NON_GQA_FORWARD | (RAGGED_NON_CAUSAL - GQA_CASES):
        assert results[case][0] == "passed", (case, results[case])


def test_per_block_softmax_passes_where_one_block_holds_every_key() -> None:
    results = cases(graded("wrong_softmax_per_block"), FORWARD_PARTS)
    multi_block = {n for n in results if n not in ONE_KEY_BLOCK and "causal=True" not in n}
    assert all(results[n][0] == "failed" for n in multi_block), {n: results[n] for n in multi_block}


# flash_decode_int8 (bonus kv_int8): its submissions define only that (and a flash_attention that raises), so
# only its part is graded; a wrong one runs two cases, the one that exposes it and the spread of scales.
SPREAD = "(1x4x1x32) float32 kv_heads=2 seq_k=257 causal=False dist=spread"
WRONG_KV_INT8 = {
    "wrong_kv_int8_v_scale_ignored": "(2x4x1x16) float32 seq_k=70 causal=False",
    "wrong_kv_int8_scale_per_head": "(1x8x1x32) float32 kv_heads=2 seq_k=300 causal=False",
    "wrong_kv_int8_unsigned_codes": "(2x8x1x16) float32 kv_heads=2 seq_k=150 causal=False dist=hostile",
    "wrong_kv_int8_block_scale": "(3x4x1x16) float32 kv_heads=1 seq_k=5 causal=False",
}


def graded_kv_int8(name: str, names: set[str] | None = None) -> dict[str, tuple[str, str]]:
    r = grade_assignment(SLUG, sub(name), "cpu", seed=SEED, timeout=60.0, selection=Selection(tasks={KV_INT8}, names=names))
    return cases(r, (KV_INT8,))


def test_a_minimal_honest_int8_decode_passes_every_kv_int8_case() -> None:
    results = graded_kv_int8("correct_kv_int8_minimal")
    assert len(results) == 6 and all(status == "passed" for status, _ in results.values()), results


@pytest.mark.parametrize("name", list(WRONG_KV_INT8))
def test_wrong_int8_decode_fails_the_case_that_exposes_it_and_the_spread_of_scales(name: str) -> None:
    results = graded_kv_int8(name, {WRONG_KV_INT8[name], SPREAD})
    for case in (WRONG_KV_INT8[name], SPREAD):
        status, message = results[case]
        assert status == "failed" and "outside the tolerance" in message, (case, status, message)


def test_a_kernels_py_without_the_quantized_decodes_loses_those_cases_alone() -> None:
    r = graded("correct_minimal")
    for status, message in cases(r, (KV_INT8,)).values():
        assert status == "error" and "does not define `flash_decode_int8`: this bonus calls flash_decode_int8(" in message
    kv_int4 = cases(r, (KV_INT4,)).values()
    assert len(kv_int4) == 7
    for status, message in kv_int4:
        assert status == "error" and "does not define `flash_decode_int4`: this bonus calls flash_decode_int4(" in message
