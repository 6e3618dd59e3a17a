"""The solution's wrapper refuses bad inputs with a sentence that names the argument, and its kernels
agree with PyTorch (float64) forward and backward on odd shapes, through autograd."""

from __future__ import annotations

import pytest
import torch

from course.loader import load_kernels

k = load_kernels("rmsnorm", "solutions")


def _x(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randn(*shape, generator=g).to(dtype)


@pytest.mark.parametrize(
    "make, error, phrase",
    [
        (lambda: k.rmsnorm([1.0, 2.0], _x(2)), TypeError, "`x` must be a torch.Tensor"),
        (lambda: k.rmsnorm(_x(3, 4, dtype=torch.float64), _x(4, dtype=torch.float64)), TypeError, "`x` must have dtype float32, float16, bfloat16"),
        (lambda: k.rmsnorm(_x(3, 4), _x(4).half()), ValueError, "`x` is float32, `weight` is float16"),
        (lambda: k.rmsnorm(_x(3, 4), _x(5)), ValueError, "`weight` must have x.shape[-1] = 4 elements"),
        (lambda: k.rmsnorm(_x(3, 4), _x(2, 2)), ValueError, "`weight` must have 1 dimensions"),
        (lambda: k.rmsnorm(_x(4, 3).t(), _x(4)), ValueError, "`x` must be contiguous"),
        (lambda: k.rmsnorm(_x(3, 4), _x(4), eps=-1.0), ValueError, "`eps` must be a non-negative number"),
        (lambda: k.rmsnorm(_x(3, 4).to("meta"), _x(4)), ValueError, "`x` is on meta"),
    ],
)
def test_bad_inputs_are_refused_with_a_sentence(make, error: type, phrase: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert phrase in str(info.value)


@pytest.mark.parametrize("shape", [(1,), (3, 100), (2, 5, 129), (64, 33), (3, 20001)])
def test_forward_and_backward_match_float64_autograd(shape: tuple[int, ...]) -> None:
    x = (_x(*shape) * 0.7 + 0.1).requires_grad_()
    w = (_x(shape[-1]) + 0.5).requires_grad_()
    dy = _x(*shape) * 0.3
    y = k.rmsnorm(x, w, 1e-5)
    dx, dw = torch.autograd.grad(y, (x, w), dy)
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    y64 = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-5) * w64
    dx64, dw64 = torch.autograd.grad(y64, (x64, w64), dy.double())
    torch.testing.assert_close(y.double(), y64, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dx.double(), dx64, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dw.double(), dw64, rtol=1e-5, atol=1e-5)


def test_module_layer_normalises_with_its_weight() -> None:
    layer = k.RMSNorm(8, eps=1e-6)
    with torch.no_grad():
        layer.weight.copy_(torch.linspace(0.5, 2.0, 8))
    x = _x(2, 8)
    expected = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * layer.weight.detach()
    torch.testing.assert_close(layer(x), expected, rtol=1e-5, atol=1e-6)


def test_quantize_kv_rounds_each_token_to_its_nearest_int8_code_and_feeds_the_int8_decode() -> None:
    """quantize_kv (given code, not graded): codes within half a step of k / scale, scale = max|k| / 127 per
    token, a row of zeros kept at zero; the int8 decode over its cache matches attention over the dequantized one."""
    import math

    fa = load_kernels("flash_attention", "solutions")
    g = torch.Generator().manual_seed(0)
    keys = torch.randn(2, 2, 37, 16, generator=g) * torch.logspace(-2, 2, 37)[:, None]  # (B, Hkv, Sk, D)
    values = torch.randn(2, 2, 37, 16, generator=g)
    keys[0, 1, 5] = 0.0
    k_q, k_scale, v_q, v_scale = fa.quantize_kv(keys, values)
    assert k_q.dtype == torch.int8 and k_scale.shape == (2, 2, 37) and k_scale.dtype == torch.float32
    torch.testing.assert_close(k_scale, keys.abs().amax(-1) / 127, rtol=1e-6, atol=0)
    assert k_q.abs().max().item() == 127 and k_q[0, 1, 5].abs().max().item() == 0 and k_scale[0, 1, 5].item() == 0
    step = torch.where(k_scale > 0, k_scale, 1.0)[..., None]
    assert ((k_q.double() * k_scale.double()[..., None] - keys.double()).abs() / step).max().item() <= 0.5 + 1e-5
    q = torch.randn(2, 4, 1, 16, generator=g)
    kd, vd = (c.double() * s.double()[..., None] for c, s in ((k_q, k_scale), (v_q, v_scale)))
    scores = q.double() @ kd.repeat_interleave(2, 1).transpose(-1, -2) / math.sqrt(16)
    want = torch.softmax(scores, -1) @ vd.repeat_interleave(2, 1)
    torch.testing.assert_close(fa.flash_decode_int8(q, k_q, k_scale, v_q, v_scale).double(), want, rtol=1e-5, atol=1e-5)


def test_quantize_kv_int4_keeps_each_element_within_half_a_step_of_its_group_and_feeds_the_int4_decode() -> None:
    """quantize_kv_int4 (given code, not graded; course/kivi.py): codes 0..15 two a byte, K per channel over
    groups of tokens (the last group shorter), V per token, every element within half a step of its value, a
    constant channel exact; the int4 decode over its cache matches attention over the dequantized one."""
    import math

    from course.kivi import dequantize_kivi, unpack_codes

    fa = load_kernels("flash_attention", "solutions")
    g = torch.Generator().manual_seed(0)
    keys = torch.randn(2, 2, 37, 16, generator=g) * torch.logspace(-1, 1, 16) + torch.linspace(-3, 3, 16)
    values = torch.randn(2, 2, 37, 16, generator=g)
    keys[..., 3] = 2.5  # a channel that never changes: scale 0, every code 0, the zero exact
    cache = fa.quantize_kv_int4(keys, values, group_size=16)
    k_packed, k_scale, k_zero, v_packed, v_scale, v_zero = cache
    assert k_packed.dtype == torch.uint8 and k_packed.shape == (2, 2, 37, 8)
    assert k_scale.shape == k_zero.shape == (2, 2, 3, 16) and v_scale.shape == v_zero.shape == (2, 2, 37)
    codes = unpack_codes(k_packed)
    assert codes.min().item() == 0 and codes.max().item() == 15
    named = dict(zip(("k_packed", "k_scale", "k_zero", "v_packed", "v_scale", "v_zero"), cache))
    kd, vd = dequantize_kivi(named, 16)
    last = keys[:, :, 32:]  # the third group holds 5 tokens: its zero is their minimum
    torch.testing.assert_close(k_zero[:, :, 2], last.amin(2), rtol=0, atol=0)
    k_step = k_scale.repeat_interleave(16, 2)[:, :, :37]
    assert ((kd - keys.double()).abs() / torch.where(k_step > 0, k_step, 1.0)).max().item() <= 0.5 + 1e-5
    assert torch.equal(kd[..., 3], keys[..., 3].double())
    assert ((vd - values.double()).abs() / v_scale.double()[..., None]).max().item() <= 0.5 + 1e-5
    q = torch.randn(2, 4, 1, 16, generator=g)
    scores = q.double() @ kd.repeat_interleave(2, 1).transpose(-1, -2) / math.sqrt(16)
    want = torch.softmax(scores, -1) @ vd.repeat_interleave(2, 1)
    torch.testing.assert_close(fa.flash_decode_int4(q, *cache, group_size=16).double(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"k_scale and k_zero \(B, Hkv, ceil\(Sk / 32\), D\)"):
        fa.flash_decode_int4(q, *cache, group_size=32)  # scales made for groups of 16


@pytest.mark.parametrize(("batch", "heads_q", "heads_kv", "seq", "causal"), [
    (1, 8, 2, 77, True),  # group 4 over 2 KV heads: two key blocks, shared by 4 programs each
    (1, 6, 2, 45, True),  # group 3: a share that is not a power of two
    (1, 4, 1, 60, False),  # not causal: one key block, a grid that leaves the interpreter's "SMs" idle
])
def test_dkdv_programs_sharing_a_group_give_the_gradients_of_one_program_per_kv_head(
    batch: int, heads_q: int, heads_kv: int, seq: int, causal: bool
) -> None:
    """With split > 1 the dK/dV kernel writes float32 partial sums that a second kernel adds: the same dK and dV
    as one program summing the whole group, to float32 rounding, and dQ untouched."""
    fa = load_kernels("flash_attention", "solutions")
    g = torch.Generator().manual_seed(0)
    q, do = (torch.randn(batch, heads_q, seq, 32, generator=g) for _ in range(2))
    k, v = (torch.randn(batch, heads_kv, seq, 32, generator=g) for _ in range(2))
    scale = 32 ** -0.5
    o, lse = fa.attention_forward(q, k, v, causal, scale, True)
    cfg = fa.backward_config(fa.device_of(q), q.dtype)
    programs = -(-seq // cfg.dkdv_block_n) * batch * heads_kv
    share = fa.dkdv_split(heads_q // heads_kv, programs, causal, fa.device_of(q).sms, cfg.dkdv_programs_per_sm)
    assert share > 1, "the interpreter's table should make these shapes share their groups"
    shared = fa.attention_backward(q, k, v, o, lse, do, causal, scale)
    rule, fa.dkdv_split = fa.dkdv_split, lambda *args: 1
    try:
        alone = fa.attention_backward(q, k, v, o, lse, do, causal, scale)
    finally:
        fa.dkdv_split = rule
    torch.testing.assert_close(shared[0], alone[0], rtol=0, atol=0)
    for got, want in zip(shared[1:], alone[1:]):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
