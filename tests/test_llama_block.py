"""Module 10: the Llama block built from the course's kernels agrees with the plain PyTorch block (tiny config)."""

from __future__ import annotations

import pytest
import torch

from course.env import DEVICE
from course.int4 import unpack_int4
from course.llama import (
    KERNELS,
    LLAMA3_8B,
    TINY,
    KVCache,
    block_flops,
    block_forward,
    block_gradients,
    course_ops,
    dequantize_w4,
    fuse_projections,
    load_course_kernels,
    quantize_w4,
    quantized,
    random_weights,
    reference_block,
    relative_error,
    rotary_tables,
    torch_ops,
    work_by_kind,
)

# float32 kernels against a float64 block: only rounding of float32 separates them (measured about 3e-7).
REL_TOL = {torch.float32: 1e-5}


@pytest.fixture(scope="module")
def kernels():
    modules, _ = load_course_kernels(DEVICE, prefer="solutions")
    return modules


@pytest.fixture(scope="module")
def weights():
    return random_weights(TINY, torch.float32, DEVICE, seed=3)


def reference(x, weights):
    return reference_block(x, weights, TINY, torch.float64)


@pytest.mark.parametrize("switches", [("rmsnorm",), ("rope",), ("attention",), ("swiglu",), tuple(KERNELS)])
@pytest.mark.parametrize("batch,seq", [(1, 1), (2, 13), (1, 40)])
def test_course_block_matches_pytorch_block(kernels, weights, switches, batch, seq):
    w = quantized(weights, TINY.group_size) if "w4a16" in switches else weights
    x = torch.randn(batch, seq, TINY.hidden_size, generator=torch.Generator().manual_seed(seq)).to(DEVICE)
    out = block_forward(x, w, TINY, course_ops(kernels, switches), rotary_tables(TINY, 64, torch.float32, DEVICE))
    assert out.shape == x.shape and out.dtype == x.dtype
    assert relative_error(out, reference(x, w)) < REL_TOL[torch.float32]


@pytest.mark.parametrize("batch,seq", [(1, 1), (3, 1), (2, 13)])
def test_fused_projections_compute_the_same_block(kernels, weights, batch, seq):
    """fuse_projections stacks q, k, v and gate, up into two wider projections: the PyTorch block on the fused
    weights equals it on the separate ones, and the course block (W4A16 codes stacked too, so the halves of
    gate-up reach SwiGLU strided whenever M > 1) matches the float64 reference."""
    w4 = quantized(weights, TINY.group_size)
    fused = fuse_projections(w4)
    assert set(fused.linears) == {"wqkv", "wo", "w_gate_up", "w_down"}
    assert fused.linears["wqkv"].w_packed.shape == (TINY.q_size + 2 * TINY.kv_size, TINY.hidden_size // 2)
    assert fused.nbytes() == w4.nbytes()
    x = torch.randn(batch, seq, TINY.hidden_size, generator=torch.Generator().manual_seed(7)).to(DEVICE)
    rot = rotary_tables(TINY, 64, torch.float32, DEVICE)
    separate = block_forward(x, w4, TINY, torch_ops(), rot)
    assert torch.allclose(block_forward(x, fused, TINY, torch_ops(), rot), separate, rtol=1e-5, atol=1e-5)
    out = block_forward(x, fused, TINY, course_ops(kernels, KERNELS), rot)
    assert relative_error(out, reference(x, w4)) < REL_TOL[torch.float32]


@pytest.mark.parametrize("fused", [False, True])
def test_decode_step_continues_the_prefill(kernels, weights, fused):
    """Prefill 12 tokens into the cache, decode the 13th: the same as the block on all 13 at once."""
    w = quantized(weights, TINY.group_size)
    w = fuse_projections(w) if fused else w
    x = torch.randn(2, 13, TINY.hidden_size, generator=torch.Generator().manual_seed(0)).to(DEVICE)
    ops, rot = course_ops(kernels, KERNELS), rotary_tables(TINY, 64, torch.float32, DEVICE)
    cache = KVCache.empty(TINY, 2, 13, torch.float32, DEVICE)
    block_forward(x[:, :12], w, TINY, ops, rot, 0, cache)
    last = block_forward(x[:, 12:], w, TINY, ops, rot, 12, cache)
    assert relative_error(last, reference(x, w)[:, 12:]) < REL_TOL[torch.float32]


@pytest.mark.parametrize("fused", [False, True])
def test_the_course_block_compiles_whole_prefill_and_decode(kernels, weights, fused):
    """torch.compile(fullgraph=True) takes the whole block, every course kernel on, with no graph break: each
    kernel is a registered op (course/ops.py). backend="aot_eager" runs AOTAutograd and the ops' fake
    implementations but leaves the graph to eager PyTorch; Inductor also compiles this block on a CPU,
    in about a minute (too slow for CI); scripts/llama_block_bench.py runs it under CUDA graphs on a GPU.
    With fused projections the splits of their outputs are traced too."""
    w = quantized(weights, TINY.group_size)
    w = fuse_projections(w) if fused else w
    x = torch.randn(2, 13, TINY.hidden_size, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    ops, rot = course_ops(kernels, KERNELS), rotary_tables(TINY, 64, torch.float32, DEVICE)
    cache = KVCache.empty(TINY, 2, 13, torch.float32, DEVICE)
    torch._dynamo.reset()
    step = torch.compile(block_forward, fullgraph=True, backend="aot_eager")  # a graph break raises
    prefill = step(x[:, :12], w, TINY, ops, rot, 0, cache)
    last = step(x[:, 12:], w, TINY, ops, rot, 12, cache)
    ref = reference(x, w)
    assert relative_error(prefill, ref[:, :12]) < REL_TOL[torch.float32]
    assert relative_error(last, ref[:, 12:]) < REL_TOL[torch.float32]


# The switches with a backward kernel; the projections' gradients are PyTorch's matmuls.
TRAINABLE = ("rmsnorm", "rope", "attention", "swiglu")


@pytest.mark.parametrize("batch,seq,compiled", [(1, 17, False), (2, 9, True)])
def test_training_step_gradients_match_a_float64_block(kernels, weights, batch, seq, compiled):
    """Forward and backward through the course's kernels, eager or under torch.compile(fullgraph=True)
    (aot_eager: the backward ops traced through their fake implementations): every gradient (x, both
    norms, all seven projections) against the PyTorch block's in float64."""
    gen = torch.Generator().manual_seed(batch * seq)
    x = torch.randn(batch, seq, TINY.hidden_size, generator=gen).to(DEVICE)
    grad_out = torch.randn(batch, seq, TINY.hidden_size, generator=gen).to(DEVICE)
    rot = rotary_tables(TINY, 64, torch.float32, DEVICE)
    torch._dynamo.reset()
    forward = torch.compile(block_forward, fullgraph=True, backend="aot_eager") if compiled else None
    grads = block_gradients(x, weights, TINY, course_ops(kernels, TRAINABLE), rot, grad_out, forward)
    w64, rot64 = weights.to(torch.float64), rotary_tables(TINY, 64, torch.float64, DEVICE)
    ref = block_gradients(x.double(), w64, TINY, torch_ops(), rot64, grad_out.double())
    assert set(grads) == set(ref) == {"x", "attn_norm", "ffn_norm", *weights.linears}
    errors = {name: relative_error(grads[name], ref[name]) for name in ref}
    assert max(errors.values()) < REL_TOL[torch.float32], errors


def _cpp_compiler() -> str | None:
    """The C++ compiler Inductor builds CPU kernels with, or None where there is none."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        return get_cpp_compiler()
    except Exception:  # noqa: BLE001 - whatever the reason, Inductor cannot compile for the CPU here
        return None


@pytest.mark.skipif(DEVICE == "cpu" and _cpp_compiler() is None, reason="Inductor needs a C++ compiler on the CPU")
def test_training_step_with_pytorch_attention_compiles_under_inductor(kernels, weights):
    """The course's RMSNorm, RoPE and SwiGLU beside PyTorch's attention, compiled by Inductor (which asserts that
    every op's output has the strides its fake implementation promised): SDPA's backward hands RoPE's backward a
    strided gradient, which the kernel copies first, so the fake must promise a contiguous result."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(1, 9, TINY.hidden_size, generator=gen).to(DEVICE)
    grad_out = torch.randn(1, 9, TINY.hidden_size, generator=gen).to(DEVICE)
    rot = rotary_tables(TINY, 64, torch.float32, DEVICE)
    torch._dynamo.reset()
    forward = torch.compile(block_forward, fullgraph=True)
    ops = course_ops(kernels, ("rmsnorm", "rope", "swiglu"))
    grads = block_gradients(x, weights, TINY, ops, rot, grad_out, forward)
    w64, rot64 = weights.to(torch.float64), rotary_tables(TINY, 64, torch.float64, DEVICE)
    ref = block_gradients(x.double(), w64, TINY, torch_ops(), rot64, grad_out.double())
    errors = {name: relative_error(grads[name], ref[name]) for name in ref}
    assert max(errors.values()) < REL_TOL[torch.float32], errors


@pytest.mark.parametrize("seqs", [(5, 7, 9), (1, 6)])
def test_pytorch_attention_compiles_with_dynamic_sequence_lengths(seqs):
    """The PyTorch block's baseline under torch.compile: a new length makes the shapes dynamic, and SDPA must
    still get a plain bool for is_causal (it refused the symbolic `seq > 1` on an H100, every prefill size)."""
    from course.llama import torch_attention

    def attend(q, k, v):
        return torch_attention(q, k, v, q.shape[2] > 1)

    compiled = torch.compile(attend, fullgraph=True, backend="eager")
    g = torch.Generator().manual_seed(0)
    for s in seqs:
        q, k, v = (torch.randn(1, h, s, 16, generator=g) for h in (4, 2, 2))
        torch.testing.assert_close(compiled(q, k, v), attend(q, k, v))


def test_prompt_not_at_position_zero_is_refused(weights):
    x = torch.randn(1, 3, TINY.hidden_size, device=DEVICE)
    with pytest.raises(ValueError, match="must start at position 0"):
        block_forward(x, weights, TINY, torch_ops(), rotary_tables(TINY, 64, torch.float32, DEVICE), start=2)


@pytest.mark.parametrize("n,k,group", [(3, 128, 128), (5, 256, 64), (16, 384, 128)])
def test_quantize_w4_rounds_to_the_nearest_code(n, k, group):
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(k))
    w_packed, scales = quantize_w4(w, group)
    assert w_packed.shape == (n, k // 2) and w_packed.dtype == torch.uint8 and scales.shape == (n, k // group)
    codes = unpack_int4(w_packed)
    assert int(codes.min()) >= 1 and int(codes.max()) <= 15  # symmetric: -7..7 around 8
    err = (dequantize_w4(w_packed, scales, group) - w).abs()
    half_step = scales.repeat_interleave(group, dim=1) / 2
    assert bool((err <= half_step * (1 + 1e-6)).all())


def test_w4a16_switch_needs_quantized_weights(kernels, weights):
    x = torch.randn(1, 2, TINY.hidden_size, device=DEVICE)
    with pytest.raises(ValueError, match="quantized"):
        block_forward(x, weights, TINY, course_ops(kernels, ["w4a16"]), rotary_tables(TINY, 64, torch.float32, DEVICE))


def test_unknown_switch_is_named(kernels):
    with pytest.raises(ValueError, match="layernorm"):
        course_ops(kernels, ["layernorm"])


def test_stubs_fall_back_to_the_solutions():
    """The shipped assignments are stubs: each kernel comes from the solution, and the reason says so."""
    modules, why = load_course_kernels(DEVICE)
    assert set(modules) == set(KERNELS.values())
    assert all("still has a TODO" in reason for reason in why.values())
    assert all(m.__name__.startswith("solutions_") for m in modules.values())


def test_work_counts_match_the_parameter_count():
    m = 3 * 100
    projection_flops, _ = work_by_kind(LLAMA3_8B, 3, 100, 100)["projections"]
    assert projection_flops == 2 * m * (LLAMA3_8B.n_params() - 2 * LLAMA3_8B.hidden_size)
    assert LLAMA3_8B.n_params() == 218_112_000  # 32 of these and the embeddings make Llama-3-8B's 8.0 billion
    causal, full = block_flops(LLAMA3_8B, 1, 4096, 4096, True), block_flops(LLAMA3_8B, 1, 4096, 4096, False)
    assert full - causal == pytest.approx(2 * LLAMA3_8B.n_heads * LLAMA3_8B.head_dim * 4096 * 4096)
