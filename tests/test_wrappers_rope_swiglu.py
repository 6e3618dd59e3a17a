"""The RoPE and SwiGLU solutions refuse bad inputs with a sentence that names the argument, and agree with
float64 PyTorch forward and backward, through autograd, on odd shapes; their modules do what models need."""

from __future__ import annotations

import pytest
import torch

from course.loader import load_kernels

rope_k = load_kernels("rope", "solutions")
swiglu_k = load_kernels("swiglu", "solutions")


def _t(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def _rope64(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1)


@pytest.mark.parametrize(
    "make, error, phrase",
    [
        (lambda: rope_k.rope(_t(1, 2, 3, 8)[0], _t(3, 4), _t(3, 4)), ValueError, "`x` must have 4 dimensions"),
        (lambda: rope_k.rope(_t(1, 2, 3, 8), _t(3, 4).half(), _t(3, 4)), TypeError, "`cos` must have dtype float32"),
        (lambda: rope_k.rope(_t(1, 2, 3, 7), _t(3, 3), _t(3, 3)), ValueError, "x.shape[3] = 7 must be even"),
        (lambda: rope_k.rope(_t(1, 2, 3, 8), _t(5, 4), _t(5, 4)), ValueError, "slice a longer table with cos[:S]"),
        (lambda: rope_k.rope(_t(1, 3, 2, 8).transpose(1, 2), _t(3, 4), _t(3, 4)), ValueError, "`x` must be contiguous"),
        (lambda: rope_k.rope(_t(1, 2, 3, 8), _t(3, 4).requires_grad_(), _t(3, 4)), ValueError, "pass cos.detach()"),
        (lambda: swiglu_k.swiglu(_t(3, 4), _t(3, 5)), ValueError, "must have the same shape, got (3, 4) and (3, 5)"),
        (lambda: swiglu_k.swiglu(_t(3, 4), _t(3, 4).half()), ValueError, "`gate` is float32, `up` is float16"),
        (lambda: swiglu_k.swiglu(_t(3, 4, dtype=torch.float64), _t(3, 4, dtype=torch.float64)), TypeError, "must have dtype"),
        (lambda: swiglu_k.swiglu(_t(4, 3).t(), _t(3, 4)), ValueError, "`gate` must be contiguous"),
    ],
)
def test_bad_inputs_are_refused_with_a_sentence(make, error: type, phrase: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert phrase in str(info.value)


@pytest.mark.parametrize("shape", [(1, 1, 1, 2), (2, 3, 17, 24), (1, 2, 70, 96), (3, 1, 5, 130)])
def test_rope_forward_and_backward_match_float64_autograd(shape: tuple[int, ...]) -> None:
    x = _t(*shape).requires_grad_()
    dy = _t(*shape, seed=1)
    cos, sin = rope_k.rope_tables(shape[2], shape[3], base=500.0, start=3)
    y = rope_k.rope(x, cos, sin)
    (dx,) = torch.autograd.grad(y, (x,), dy)
    x64 = x.detach().double().requires_grad_()
    y64 = _rope64(x64, cos.double(), sin.double())
    (dx64,) = torch.autograd.grad(y64, (x64,), dy.double())
    torch.testing.assert_close(y.double(), y64, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dx.double(), dx64, rtol=1e-5, atol=1e-5)


def test_rope_preserves_each_pairs_length_and_undoes_itself_backwards() -> None:
    # A rotation keeps |(x_i, x_{i+D/2})|, and the backward (rotation by -theta) of the forward gives x back.
    x = _t(2, 3, 11, 40)
    cos, sin = rope_k.rope_tables(11, 40, start=1000)
    y = rope_k.rope(x, cos, sin)
    pair_norm = lambda t: t[..., :20].pow(2) + t[..., 20:].pow(2)  # noqa: E731
    torch.testing.assert_close(pair_norm(y), pair_norm(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rope_k.rope_backward(y, cos, sin), x, rtol=1e-5, atol=1e-5)


def test_rope_tables_follow_the_rotary_frequencies() -> None:
    cos, sin = rope_k.rope_tables(6, 8, base=10000.0, start=2)
    angles = torch.arange(2, 8, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, 8, 2) / 8)
    torch.testing.assert_close(cos, angles.cos().float())
    torch.testing.assert_close(sin, angles.sin().float())


def test_rotary_embedding_rotates_queries_and_keys_with_different_head_counts_alike() -> None:
    rotary = rope_k.RotaryEmbedding(head_dim=16, max_seq_len=32)
    q, k = _t(2, 8, 5, 16), _t(2, 2, 5, 16, seed=1)
    q_rot, k_rot = rotary(q, k, start=7)
    cos, sin = rope_k.rope_tables(5, 16, start=7)
    torch.testing.assert_close(q_rot, _rope64(q, cos, sin).float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k_rot, _rope64(k, cos, sin).float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(1,), (3, 100), (2, 5, 129), (4097,)])
def test_swiglu_forward_and_backward_match_float64_autograd(shape: tuple[int, ...]) -> None:
    gate = (_t(*shape) * 2 - 0.5).requires_grad_()
    up = _t(*shape, seed=1).requires_grad_()
    dy = _t(*shape, seed=2)
    y = swiglu_k.swiglu(gate, up)
    dgate, dup = torch.autograd.grad(y, (gate, up), dy)
    g64, u64 = gate.detach().double().requires_grad_(), up.detach().double().requires_grad_()
    y64 = torch.nn.functional.silu(g64) * u64
    dg64, du64 = torch.autograd.grad(y64, (g64, u64), dy.double())
    torch.testing.assert_close(y.double(), y64, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dgate.double(), dg64, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dup.double(), du64, rtol=1e-5, atol=1e-5)


def test_swiglu_mlp_is_llamas_feed_forward() -> None:
    torch.manual_seed(0)
    mlp = swiglu_k.SwiGLUMLP(hidden_size=24, intermediate_size=40)
    x = _t(3, 24)
    expected = mlp.down_proj(torch.nn.functional.silu(mlp.gate_proj(x)) * mlp.up_proj(x))
    torch.testing.assert_close(mlp(x), expected, rtol=1e-5, atol=1e-5)
