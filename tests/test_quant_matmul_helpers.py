"""The given helpers of quant_matmul's kernels that the W4A16 dot kernel builds on: the exact field decode and the
split of an activation tile into its nibble planes. Students call them; a wrong helper would fail every W4A16 case
with no hint of where, so each is checked on its own here, in the CPU interpreter."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from course.loader import load_kernels

k = load_kernels("quant_matmul", "assignments")  # the copy students get; the solution's is the same code
_field_exact, _k_to_planes, _planes_to_k, MAGIC = k._field_exact, k._k_to_planes, k._planes_to_k, k.MAGIC


@triton.jit
def _field_exact_probe(w_ptr, out_ptr, N: tl.constexpr, MASK: tl.constexpr, ZERO: tl.constexpr, BIT: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, _field_exact(tl.load(w_ptr + offs) | MAGIC, MASK, ZERO, BIT))


@triton.jit
def _k_to_planes_probe(t_ptr, out_ptr, C: tl.constexpr, M: tl.constexpr):
    rows, cols = tl.arange(0, 8 * C), tl.arange(0, M)
    planes = _k_to_planes(tl.load(t_ptr + rows[:, None] * M + cols[None, :]))  # (8C, M) -> 8 x (C, M)
    r = tl.arange(0, C)
    for i in tl.static_range(8):
        tl.store(out_ptr + i * C * M + r[:, None] * M + cols[None, :], planes[i])


@triton.jit
def _round_trip_probe(t_ptr, out_ptr, C: tl.constexpr, M: tl.constexpr):
    """_k_to_planes then _planes_to_k on the transposes: back to the tile in k order."""
    rows, cols = tl.arange(0, 8 * C), tl.arange(0, M)
    p = _k_to_planes(tl.load(t_ptr + rows[:, None] * M + cols[None, :]))
    back = _planes_to_k(tl.trans(p[0]), tl.trans(p[1]), tl.trans(p[2]), tl.trans(p[3]), tl.trans(p[4]),
                        tl.trans(p[5]), tl.trans(p[6]), tl.trans(p[7]))  # (M, 8C)
    tl.store(out_ptr + cols[:, None] * (8 * C) + rows[None, :], back)


@pytest.mark.parametrize(("mask", "zero", "bit"), [(0xF, 8.0, 0), (0xF0, 8.0, 4), (0xF00, 8.0, 8), (0xF000, 8.0, 12),
                                                   (0xF0000, 8.0, 16), (0xFF, 128.0, 0), (0xFF00, 128.0, 8)])
def test_field_exact_gives_the_field_minus_its_zero_exactly(mask: int, zero: float, bit: int) -> None:
    g = torch.Generator().manual_seed(0)
    width = (mask >> bit).bit_length()
    fields = torch.arange(2**width, dtype=torch.int32).repeat(4)  # every value of the field, 4 times
    noise = torch.randint(0, 2**20, (fields.numel(),), generator=g, dtype=torch.int32) & ~mask & 0x7FFFF  # other bits set
    words = (fields << bit) | noise  # (N,)
    out = torch.empty(words.numel(), dtype=torch.float32)
    _field_exact_probe[(1,)](words, out, N=words.numel(), MASK=mask, ZERO=zero, BIT=bit)
    assert torch.equal(out, fields.float() - zero)


@pytest.mark.parametrize(("c", "m"), [(2, 2), (4, 16), (16, 16), (16, 4)])
def test_k_to_planes_puts_row_8j_plus_i_in_plane_i(c: int, m: int) -> None:
    t = torch.arange(8 * c * m, dtype=torch.float32).reshape(8 * c, m)  # (8C, M), every element distinct
    out = torch.empty(8, c, m)
    _k_to_planes_probe[(1,)](t, out, C=c, M=m)
    for i in range(8):
        assert torch.equal(out[i], t[i::8]), f"plane {i}"


@pytest.mark.parametrize(("c", "m"), [(2, 4), (16, 16)])
def test_planes_to_k_undoes_k_to_planes(c: int, m: int) -> None:
    t = torch.randn(8 * c, m, generator=torch.Generator().manual_seed(1))
    out = torch.empty(m, 8 * c)
    _round_trip_probe[(1,)](t, out, C=c, M=m)
    assert torch.equal(out, t.T)
