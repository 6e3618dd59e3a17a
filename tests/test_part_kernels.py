"""Parts named after a kernel (a split-K decode, decode over a quantized cache, RMSNorm fused into a linear layer, a
backward kernel) are earned by that kernel: another kernel of the same file that computes the same result, with the
copies the assignment allows, earns nothing there (red team 18 took 65 bonus points that way). And honest launchers
that reshape, convert or flatten inside a course op are graded as they are everywhere else.

Each submission below is a reference solution with a few lines changed, made here from solutions/ so that it follows
every change to them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder.grade import Selection, grade_assignment
from autograder.kernel_source import read
from autograder.specs import SLUGS, load_spec
from conftest import REPO_ROOT, SEED

OUTSIDE = "which is not one of this part's kernels"


def _solution(slug: str) -> str:
    return (REPO_ROOT / "solutions" / slug / "kernels.py").read_text()


def _edit(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the solution no longer holds {old!r}: update this test's edit"
    return source.replace(old, new)


def _grade(slug: str, source: str, tmp_path: Path, tasks: set[str], max_cases: int = 2) -> dict[str, list]:
    path = tmp_path / slug / "kernels.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    result = grade_assignment(slug, path, "cpu", seed=SEED, timeout=120.0,
                              selection=Selection(tasks=tasks, max_cases=max_cases))  # fmt: skip
    found: dict[str, list] = {}
    for case in result.cases:
        if case.kind == "correctness":
            found.setdefault(case.task, []).append((case.status, case.message))
    assert set(found) == tasks, found
    return found


@pytest.mark.parametrize("slug", SLUGS)
def test_every_kernel_a_part_names_is_a_kernel_of_the_starter_code(slug: str) -> None:
    """A part's `launches` and `launches_with_descriptors` name @triton.jit functions the student is given."""
    starter = read((REPO_ROOT / "assignments" / slug / "kernels.py").read_text(), "kernels.py")
    for part in load_spec(slug).parts:
        for name in (*part.launches, *([part.launches_with_descriptors] if part.launches_with_descriptors else [])):
            assert name in starter.functions, f"{part.task} names {name}, which the starter code does not define"


def test_decode_by_the_forward_kernel_earns_nothing(tmp_path: Path) -> None:
    # the forward kernel handles one query row (the ragged part asks it to), so without the dispatch it answers right
    source = _edit(_solution("flash_attention"),
                   "    if q.shape[2] == 1:\n        return attention_decode_op(q, k, v, scale)",
                   "    if False:\n        return attention_decode_op(q, k, v, scale)")  # fmt: skip
    found = _grade("flash_attention", source, tmp_path, {"flash_attention.decode", "flash_attention.ragged"})
    assert all(status == "failed" and OUTSIDE in message and "`_attn_fwd_kernel`" in message
               for status, message in found["flash_attention.decode"]), found  # fmt: skip
    assert all(status == "passed" for status, _ in found["flash_attention.ragged"]), found


DEQUANTIZE = '''

@triton.jit
def _dense_copy_kernel(codes_ptr, scales_ptr, out_ptr, n, D: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(codes_ptr + offs, mask=mask, other=0).to(tl.float32)
    s = tl.load(scales_ptr + offs // D, mask=mask, other=0.0)
    tl.store(out_ptr + offs, (c * s).to(out_ptr.dtype.element_ty), mask=mask)


def _dense(codes, scales, dtype):
    out = torch.empty(codes.shape, dtype=dtype, device=codes.device)
    n = codes.numel()
    _dense_copy_kernel[(triton.cdiv(n, 256),)](codes, scales, out, n, D=codes.shape[-1], BLOCK=256)
    return out


def flash_decode_int8(q, k_q, k_scale, v_q, v_scale, scale=None):
    return flash_attention(q, _dense(k_q, k_scale, q.dtype), _dense(v_q, v_scale, q.dtype), False, scale)
'''


def test_a_quantized_cache_made_dense_for_the_forward_kernel_earns_nothing(tmp_path: Path) -> None:
    found = _grade("flash_attention", _solution("flash_attention") + DEQUANTIZE, tmp_path, {"flash_attention.kv_int8"})
    assert all(status == "failed" and OUTSIDE in message and "`_dense_copy_kernel`" in message
               for status, message in found["flash_attention.kv_int8"]), found  # fmt: skip


UNFUSED = '''

def rmsnorm_linear(x, norm_weight, w, eps=1e-6):
    """The norm by the forward kernel, the product by the forward kernel's rows dotted one by one: two kernels."""
    normed = rmsnorm(x, norm_weight, eps)  # (M, K)
    y = torch.empty((x.shape[0], w.shape[0]), dtype=x.dtype, device=x.device)
    _rows_dot_kernel[(x.shape[0], w.shape[0])](normed, w, y, x.shape[1], w.shape[0], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


@triton.jit
def _rows_dot_kernel(a_ptr, w_ptr, y_ptr, K, N, BLOCK: tl.constexpr):
    m, n = tl.program_id(0), tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + m * K + offs, mask=offs < K, other=0.0).to(tl.float32)
    b = tl.load(w_ptr + n * K + offs, mask=offs < K, other=0.0).to(tl.float32)
    tl.store(y_ptr + m * N + n, tl.sum(a * b, axis=0).to(y_ptr.dtype.element_ty))
'''


def test_rmsnorm_then_a_product_earns_nothing_of_the_fused_part(tmp_path: Path) -> None:
    found = _grade("rmsnorm", _solution("rmsnorm") + UNFUSED, tmp_path, {"rmsnorm.linear"})
    assert all(status == "failed" and OUTSIDE in message for status, message in found["rmsnorm.linear"]), found


# R(-t) = S R(t) S, with S the swap of a head's halves: the forward kernel between two swaps is the backward
SWAPPED = '''
        half = dy.shape[-1] // 2
        z = torch.empty_like(dy)
        z[..., :half].copy_(dy[..., half:])
        z[..., half:].copy_(dy[..., :half])
        out = rope_forward_op(z, cos, sin)
        dx = torch.empty_like(out)
        dx[..., :half].copy_(out[..., half:])
        dx[..., half:].copy_(out[..., :half])
        {decoy}
        return dx, None, None'''
# and the backward kernel, its body emptied, launched beside it on one row
DECOY = "rope_backward_op(dy[:1, :1, :1].contiguous(), cos[:1], sin[:1])"


@pytest.mark.parametrize("decoy", [False, True], ids=["alone", "beside_a_decoy"])
def test_the_rope_backward_by_the_forward_kernel_earns_nothing(tmp_path: Path, decoy: bool) -> None:
    source = _edit(_solution("rope"), "        return rope_backward_op(dy, cos, sin), None, None",
                   SWAPPED.format(decoy=DECOY if decoy else ""))  # fmt: skip
    if decoy:
        body = re.search(r"### BEGIN SOLUTION rope.backward\n(.*?)### END SOLUTION", source, re.S)
        assert body is not None
        source = source.replace(body.group(1), "    pass\n")
    found = _grade("rope", source, tmp_path, {"rope.backward"}, max_cases=3)
    for status, message in found["rope.backward"]:
        assert status == "failed", found
        if decoy:  # the call launched the backward kernel, and the grader's own launch of it gave no gradient
            assert "The grader also launches your `_rope_bwd_kernel` itself" in message, message
        else:
            assert "did not launch `_rope_bwd_kernel`" in message, message


# Launchers an honest student writes: a composite op (reshape, .to, .float, .contiguous, flatten) inside a course op
# reached the recorder whole and was refused as a forged record.
IDIOMS = (
    "    x = x.reshape(x.shape).to(x.dtype).contiguous()\n"
    "    x = x.float() if x.dtype == torch.float32 else x\n"
    "    x = x.flatten(0, -2).view(x.shape) if x.dim() > 1 else x\n"
)


def test_honest_idioms_inside_a_course_op_are_graded_as_the_ops_they_are(tmp_path: Path) -> None:
    launcher = "(M, N). Returns y (shaped like x) and rstd (M,) or None.\"\"\"\n    n_cols = x.shape[-1]\n"
    source = _edit(_solution("rmsnorm"), launcher + "    x2 = x.view(-1, n_cols)  # (M, N)",
                   launcher + IDIOMS + "    x2 = x.reshape(-1, n_cols)  # (M, N)")  # fmt: skip
    found = _grade("rmsnorm", source, tmp_path, {"rmsnorm.forward", "rmsnorm.backward"}, max_cases=3)
    assert all(status == "passed" for cases in found.values() for status, _ in cases), found


# The part's one kernel, by name, in two modes of a constexpr: the norm into a buffer, then a plain product (red team
# 19's route). Its own launches give the right y; the grader's launch of the kernel, in its default mode, does not.
TWO_MODES = '''

@triton.jit
def _rmsnorm_linear_kernel(x_ptr, nw_ptr, w_ptr, y_ptr, n_rows, n_out, n_in, stride_x, stride_w, stride_y, eps,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           DOT_PRECISION: tl.constexpr, PRODUCT: tl.constexpr = False):
    row = tl.program_id(0).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    mask = ks < n_in
    x = tl.load(x_ptr + row * stride_x + ks, mask=mask, other=0.0).to(tl.float32)
    if PRODUCT:  # y[row, n] = x[row] . w[n], one output a program
        n = tl.program_id(1)
        w = tl.load(w_ptr + n * stride_w + ks, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + n, tl.sum(x * w, axis=0).to(y_ptr.dtype.element_ty))
    else:  # the normalised row, into y_ptr
        nw = tl.load(nw_ptr + ks, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_in + eps)
        tl.store(y_ptr + row * stride_y + ks, (x * rstd * nw).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm_linear(x, norm_weight, w, eps=1e-6):
    (m, k), n = x.shape, w.shape[0]
    block = triton.next_power_of_2(k)
    normed = torch.empty_like(x)  # (M, K)
    _rmsnorm_linear_kernel[(m, 1)](x, norm_weight, w, normed, m, n, k, x.stride(0), w.stride(0), normed.stride(0), eps,
                                   BLOCK_M=1, BLOCK_N=1, BLOCK_K=block, DOT_PRECISION="ieee")
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _rmsnorm_linear_kernel[(m, n)](normed, norm_weight, w, y, m, n, k, normed.stride(0), w.stride(0), y.stride(0), eps,
                                   BLOCK_M=1, BLOCK_N=1, BLOCK_K=block, DOT_PRECISION="ieee", PRODUCT=True)
    return y
'''


def test_the_fused_kernel_in_two_modes_earns_nothing(tmp_path: Path) -> None:
    source = _solution("rmsnorm")
    start = source.index("@triton.jit\ndef _rmsnorm_linear_kernel(")
    end = source.index("\n\n\n", start)
    source = source[:start] + "# (the kernel is redefined at the end)" + source[end:] + TWO_MODES
    found = _grade("rmsnorm", source, tmp_path, {"rmsnorm.linear"}, max_cases=3)
    assert all(status == "failed" and "The grader also launches your `_rmsnorm_linear_kernel` itself" in message
               for status, message in found["rmsnorm.linear"]), found  # fmt: skip


def test_a_split_kernel_that_takes_its_length_from_a_constant_earns_nothing(tmp_path: Path) -> None:
    """Its own launcher's splits are 32 keys on the CPU (configs.json), and it hard-codes them (red team 20): right
    for its own launches, wrong for the grader's, whose splits are 48 keys."""
    source = _solution("flash_attention")
    old = "    start = split * keys_per_split\n    end = tl.minimum(start + keys_per_split, seqlen_k)\n"
    new = "    start = split * 32\n    end = tl.minimum(start + 32, seqlen_k)\n"
    assert source.count(old) >= 2, "the solution's split kernels changed: update this test's edit"
    found = _grade("flash_attention", source.replace(old, new), tmp_path, {"flash_attention.decode"}, max_cases=6)
    wrong = [(status, message) for status, message in found["flash_attention.decode"] if status != "passed"]
    # the probe launches both kernels of the decode, and the sentence names both (a wrong combine kernel is as likely)
    both = "The grader also launches your `_attn_decode_split_kernel` and `_attn_decode_combine_kernel` itself"
    assert wrong and all(both in message and "grades those kernels" in message for _, message in wrong), found


# A prepare() whose layout pads every row of the packed weights to 128 bytes and returns the unpadded view (red team
# 21): the tape records the view's strides, so the replay must be given them, not a contiguous copy.
PADDED_ROWS = '''

def prepare(w_packed, scales, group_size):
    n, half = w_packed.shape
    buf = torch.zeros((n, -(-half // 128) * 128), dtype=torch.uint8, device=w_packed.device)
    buf[:, :half] = w_packed
    return {"w": buf[:, :half]}


def w4a16_matmul(x, w_packed, scales, group_size=128):
    if isinstance(w_packed, dict):  # the prepared layout: the launcher passes the row stride
        return w4a16_op(x, w_packed["w"], scales, group_size)
    return w4a16_op(x, w_packed, scales, group_size)
'''


def test_a_prepared_layout_with_padded_rows_is_replayed_as_laid_out(tmp_path: Path) -> None:
    found = _grade("quant_matmul", _solution("quant_matmul") + PADDED_ROWS, tmp_path, {"quant_matmul.w4a16"}, max_cases=13)
    assert len(found["quant_matmul.w4a16"]) == 13, found
    assert all(status == "passed" for status, _ in found["quant_matmul.w4a16"]), found
