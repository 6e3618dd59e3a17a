"""The quant_matmul wrappers: argument errors a student can act on, and the tuned settings they pick."""

from __future__ import annotations

import pytest
import torch

from course.device import KNOWN_GPUS
from course.loader import load_kernels

k = load_kernels("quant_matmul", "solutions")


def _w4(m: int = 2, kk: int = 64, n: int = 5, group: int = 32) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.randn(m, kk)
    w = torch.randint(0, 256, (n, kk // 2), dtype=torch.uint8)
    s = torch.rand(n, kk // group) + 0.5
    return x, w, s


@pytest.mark.parametrize(
    ("call", "error", "phrase"),
    [
        (lambda: k.w8a16_matmul(torch.randn(2, 8), torch.zeros(3, 8, dtype=torch.int16), torch.ones(3)), TypeError,
         "`w_int8` must have dtype int8"),
        (lambda: k.w8a16_matmul(torch.randn(2, 8), torch.zeros(3, 9, dtype=torch.int8), torch.ones(3)), ValueError,
         "`w_int8` must be (N, K) with K = x.shape[1] = 8"),
        (lambda: k.w8a16_matmul(torch.randn(2, 8), torch.zeros(3, 8, dtype=torch.int8), torch.ones(4)), ValueError,
         "one scale per output channel, N = 3"),
        (lambda: k.w8a16_matmul(torch.randn(2, 8), torch.zeros(3, 8, dtype=torch.int8), torch.ones(3).half()), ValueError,
         "`x` is float32, `scales` is float16"),
        (lambda: k.w4a16_matmul(*_w4(), group_size=24), ValueError, "a positive multiple of 8 that divides K = 64"),
        (lambda: k.w4a16_matmul(_w4()[0], _w4()[1], torch.ones(5, 3), 32), ValueError,
         "`scales` must be (N, K // group_size) = (5, 2)"),
        (lambda: k.w4a16_matmul(torch.randn(2, 62), *_w4()[1:], group_size=32), ValueError,
         "`w_packed` must be (N, K // 2) with K = x.shape[1] = 62"),
        (lambda: k.w4a16_matmul(_w4()[0], _w4()[1].to(torch.int8), _w4()[2], 32), TypeError,
         "`w_packed` must have dtype uint8"),
        (lambda: k.w4a16_matmul(_w4()[0], torch.randint(0, 255, (5, 33), dtype=torch.uint8)[:, 1:], _w4()[2], 32),
         ValueError, "`w_packed` must be contiguous"),
    ],
)
def test_bad_arguments_are_explained(call, error, phrase: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert phrase in str(info.value)


def test_the_committed_table_has_a_setting_for_every_m_bucket_of_both_formats() -> None:
    for bits in (4, 8):
        entries = k.CONFIGS.gpus["NVIDIA H200"][f"w{bits}"]
        assert set(entries) == {f"m<={2**i}" for i in range(9)}
        for m in (2**i for i in range(9)):
            cfg = k.quant_config(KNOWN_GPUS["NVIDIA H200"], bits, m, torch.float16)
            if isinstance(cfg, k.DotConfig):
                assert cfg.block_m >= 16 and cfg.block_n >= 16 and cfg.block_k >= 128


def test_the_h200_settings_serve_the_h100_and_other_gpus_get_the_defaults() -> None:
    h200, h100 = KNOWN_GPUS["NVIDIA H200"], KNOWN_GPUS["NVIDIA H100 80GB HBM3"]
    assert isinstance(k.quant_config(h200, 4, 1, torch.float16), k.GemvConfig)
    # a bucket the H100 has not measured takes the H200's (same architecture); one it has, its own
    assert "m<=8" not in k.CONFIGS.gpus["NVIDIA H100 80GB HBM3"]["w4"]
    assert k.quant_config(h100, 4, 8, torch.bfloat16) == k.quant_config(h200, 4, 8, torch.bfloat16)
    assert k.quant_config(h100, 4, 8, torch.bfloat16) != k.default_config(4, 8)
    assert k.quant_config(h100, 4, 16, torch.bfloat16) == k.DotConfig(**k.CONFIGS.gpus["NVIDIA H100 80GB HBM3"]["w4"]["m<=16"]["cfg"])
    assert k.quant_config(KNOWN_GPUS["NVIDIA A100-SXM4-80GB"], 4, 16, torch.float16) == k.default_config(4, 16)
    assert k.quant_config(h200, 8, 3, torch.float32) == k.default_config(8, 3)  # float32: correctness only


@pytest.mark.parametrize("gpu", ["NVIDIA A10", "NVIDIA L4", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090"])
def test_a_float32_dot_on_a_99_kb_gpu_takes_one_stage(gpu: str) -> None:
    """Two stages of the default float32 tile need 100 KB with groups of 32 (python -m autograder portability)."""
    cfg = k.quant_config(KNOWN_GPUS[gpu], 4, 100, torch.float32)
    assert isinstance(cfg, k.DotConfig) and cfg.num_stages == 1
    assert k.quant_config(KNOWN_GPUS[gpu], 4, 100, torch.float16).num_stages == 2
    assert k.quant_config(KNOWN_GPUS["NVIDIA A100-SXM4-80GB"], 4, 100, torch.float32).num_stages == 2
    x = torch.randn(3, 64)
    assert k.pick_config(4, 3, x) == k.default_config(4, 3)  # the interpreter: defaults


def _w4_reference(x: torch.Tensor, w: torch.Tensor, s: torch.Tensor, group: int) -> torch.Tensor:
    from course.llama import dequantize_w4

    return x.double() @ dequantize_w4(w, s.double(), group).T


@pytest.mark.parametrize("m", [1, 3])
def test_a_w4a16_plan_is_made_per_signature_and_per_setting(m: int) -> None:
    """The W4A16 launcher keeps one LaunchPlan per signature and settings: a second call with new tensors of the
    same shapes reuses it, another shape or settings forced by the tuner make their own, and every call is right."""
    x, w, s = _w4(m=m, kk=256, n=40, group=64)
    k._W4A16_PLANS.clear()
    got = [k.w4a16_matmul(x, w, s, 64), k.w4a16_matmul(x * 2, w.clone(), s.clone(), 64)]
    assert len(k._W4A16_PLANS) == 1
    cfg = k.pick_config(4, m, x)
    other = (k.GemvConfig(block_n=16, block_k=64, num_warps=1, programs_per_sm=1) if isinstance(cfg, k.GemvConfig)
             else k.DotConfig(block_n=16, block_m=16, block_k=128, num_warps=1, num_stages=1, programs_per_sm=1))
    with k.CONFIGS.forcing("w4 float32", f"m<={1 if m == 1 else 4}", k._as_entry(other)):  # x is float32
        got.append(k.w4a16_matmul(x, w, s, 64))
    x5 = torch.randn(m, 512)
    w5, s5 = torch.randint(0, 256, (40, 256), dtype=torch.uint8), torch.rand(40, 8) + 0.5
    got5 = k.w4a16_matmul(x5, w5, s5, 64)
    assert len(k._W4A16_PLANS) == 3
    for out, scale in zip(got, (1, 2, 1)):
        assert torch.allclose(out.double(), scale * _w4_reference(x, w, s, 64), rtol=1e-5, atol=1e-4)
    assert torch.allclose(got5.double(), _w4_reference(x5, w5, s5, 64), rtol=1e-5, atol=1e-4)
