"""scripts/speed_candidates.py on the CPU interpreter: each candidate gives its solution's answer, within the
grader's float32 tolerance, over shapes that reach its paths (split K or not, a step that is not whole, groups
per step and steps per group; one split, several, a split past the end of the keys)."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from autograder.specs import flash_attention as fa_spec
from autograder.specs import quant_matmul as qm_spec
from course.comparison import compare
from course.loader import REPO_ROOT, load_module

sc = load_module(REPO_ROOT / "scripts" / "speed_candidates.py", "speed_candidates")


@pytest.mark.parametrize(
    ("m", "k", "n", "group", "block_w", "per_sm", "x_tile"),
    [
        (1, 256, 37, 128, 16, 8, False),  # split K, one group per step
        (2, 192, 19, 32, 16, 1, True),  # no split, several groups per step, a step not whole
        (1, 512, 33, 256, 8, 4, False),  # several steps inside one group
    ],
)
def test_w4_gemv_planes_matches_the_reference(m: int, k: int, n: int, group: int, block_w: int, per_sm: int, x_tile: bool) -> None:
    params = {"M": m, "K": k, "N": n, "group_size": group, "dtype": "float32"}
    inputs = qm_spec.make_w4_inputs(params, torch.Generator().manual_seed(7), torch.device("cpu"))
    y = sc.w4_gemv_planes(inputs["x"], inputs["w_packed"], inputs["scales"], group, block_n=16, block_w=block_w,
                          num_warps=4, num_stages=2, programs_per_sm=per_sm, x_tile=x_tile)  # fmt: skip
    verdict = compare("y", y, qm_spec.reference_w4(inputs, params)["y"], qm_spec.TOLERANCES["float32"])
    assert verdict.ok, verdict.message


@pytest.mark.parametrize(("seq_k", "n_splits", "tma"), [(50, 1, False), (100, 3, False), (100, 3, True), (37, 9, True)])
def test_decode_fused_matches_the_reference(seq_k: int, n_splits: int, tma: bool) -> None:
    params = {"shape": [2, 4, 1, 32], "kv_heads": 2, "seq_k": seq_k, "causal": False, "dtype": "float32"}
    inputs = fa_spec.make_forward_inputs(params, torch.Generator().manual_seed(7), torch.device("cpu"))
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    o, lse = sc.decode_fused(q, k, v, fa_spec.scale_of(params), block_n=16, num_warps=4, num_stages=1,
                             programs_per_sm=1, n_splits=n_splits, tma=tma)  # fmt: skip
    ref = fa_spec.reference_forward(inputs, params)["o"]
    verdict = compare("o", o, ref, fa_spec.TOLERANCES["float32"])
    assert verdict.ok, verdict.message
    scores = torch.einsum("bhd,bhkd->bhk", q.double()[:, :, 0], k.double().repeat_interleave(2, 1)) * fa_spec.scale_of(params)
    torch.testing.assert_close(lse[..., 0].double(), torch.logsumexp(scores, -1), rtol=1e-5, atol=1e-5)


def test_decode_fused_leaves_its_counters_at_zero_for_the_next_call() -> None:
    params = {"shape": [1, 4, 1, 16], "kv_heads": 1, "seq_k": 64, "causal": False, "dtype": "float32"}
    inputs = fa_spec.make_forward_inputs(params, torch.Generator().manual_seed(3), torch.device("cpu"))
    call = functools.partial(sc.decode_fused, inputs["q"], inputs["k"], inputs["v"], 1 / math.sqrt(16), block_n=16,
                             num_warps=4, num_stages=1, programs_per_sm=1, n_splits=4)  # fmt: skip
    first, _ = call()
    assert int(sc._DECODE_LOCKS[torch.device("cpu")].abs().sum()) == 0
    second, _ = call()
    assert torch.equal(first, second)


def test_stream_read_reads_every_word_once() -> None:
    src = torch.randint(-(2**31), 2**31 - 1, (1001,), dtype=torch.int32, generator=torch.Generator().manual_seed(1))
    out = sc.stream_read(src, torch.empty(3, dtype=torch.int32), block=64, num_warps=4, num_stages=2)
    assert functools.reduce(lambda a, b: a ^ b, out.tolist()) == functools.reduce(lambda a, b: a ^ b, src.tolist())


@pytest.mark.parametrize(("m", "k", "n", "group", "block_w", "per_sm", "planar"),
                         [(3, 256, 37, 128, 16, 4, False), (17, 512, 21, 256, 32, 1, True), (5, 384, 20, 128, 16, 2, True)])
def test_w4_dot_planes_matches_the_reference(m: int, k: int, n: int, group: int, block_w: int, per_sm: int, planar: bool) -> None:
    params = {"M": m, "K": k, "N": n, "group_size": group, "dtype": "float32"}
    inputs = qm_spec.make_w4_inputs(params, torch.Generator().manual_seed(7), torch.device("cpu"))
    y = sc.w4_dot_planes(inputs["x"], inputs["w_packed"], inputs["scales"], group, block_n=16, block_m=16,
                         block_w=block_w, num_warps=4, num_stages=2, programs_per_sm=per_sm, x_planar=planar)  # fmt: skip
    verdict = compare("y", y, qm_spec.reference_w4(inputs, params)["y"], qm_spec.TOLERANCES["float32"])
    assert verdict.ok, verdict.message


def test_w4_dot_planes_says_which_group_sizes_it_takes() -> None:
    with pytest.raises(ValueError, match="multiple of 8 \\* block_w = 128"):
        sc.w4_dot_planes(torch.zeros(2, 64), torch.zeros(4, 32, dtype=torch.uint8), torch.ones(4, 2), 32, block_n=16,
                         block_m=16, block_w=16, num_warps=4, num_stages=2, programs_per_sm=1)  # fmt: skip
