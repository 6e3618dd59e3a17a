"""Every solution's calls are PyTorch operators (course/ops.py) that pass torch.library.opcheck: the schema
is honest (no hidden mutation, no aliasing), the fake implementation gives the real outputs' shapes and
dtypes, and AOTAutograd can trace the op. The public function reaches the kernels through them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from course.kivi import quantize_kivi
from course.loader import load_kernels
from course.ops import CourseOp, base_namespace
from conftest import REPO_ROOT, SEED

# The CPU tier's checks, less the one that needs a GPU-only cache; tiny odd shapes keep each under a second.
CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def _int4_weights(n: int, k: int) -> torch.Tensor:
    return torch.randint(0, 256, (n, k // 2), dtype=torch.uint8)


def _int8_cache(batch: int, heads: int, seqlen: int, head_dim: int) -> tuple[torch.Tensor, ...]:
    codes = lambda: torch.randint(-127, 128, (batch, heads, seqlen, head_dim), dtype=torch.int8)  # noqa: E731
    return codes(), torch.rand(batch, heads, seqlen), codes(), torch.rand(batch, heads, seqlen)


def _kivi_cache(batch: int, heads: int, seqlen: int, head_dim: int, group_size: int) -> tuple[torch.Tensor, ...]:
    cache = quantize_kivi(_randn(batch, heads, seqlen, head_dim), _randn(batch, heads, seqlen, head_dim), group_size)
    return tuple(cache.values())


# (slug, op attribute, a function that draws the op's arguments)
CASES: list[tuple[str, str, Callable[[], tuple]]] = [
    ("rmsnorm", "rmsnorm_forward_op", lambda: (_randn(3, 37), _randn(37), 1e-6, True)),
    ("rmsnorm", "rmsnorm_forward_op", lambda: (_randn(2, 3, 37), _randn(37), 1e-5, False)),
    ("rmsnorm", "rmsnorm_linear_op", lambda: (_randn(3, 37), _randn(37), _randn(5, 37), 1e-6)),
    ("rope", "rope_forward_op", lambda: (_randn(1, 2, 5, 8), _randn(5, 4), _randn(5, 4))),
    ("rope", "rope_backward_op", lambda: (_randn(1, 2, 5, 8), _randn(5, 4), _randn(5, 4))),
    # a gradient as autograd may hand it over, strided (from attention over a (B, S, H, D) layout, say)
    ("rope", "rope_backward_op", lambda: (_randn(1, 5, 2, 8).transpose(1, 2), _randn(5, 4), _randn(5, 4))),
    ("swiglu", "swiglu_forward_op", lambda: (_randn(3, 33), _randn(3, 33))),
    ("swiglu", "swiglu_backward_op", lambda: (_randn(3, 33), _randn(3, 33), _randn(3, 33))),
    ("swiglu", "swiglu_backward_op", lambda: (_randn(3, 33), _randn(3, 33), _randn(33, 3).t())),
    ("fusion", "gelu_op", lambda: (_randn(5, 33),)),
    ("fusion", "softmax_op", lambda: (_randn(5, 33),)),
    ("coalescing", "transpose_op", lambda: (_randn(7, 19),)),
    ("tiling", "matmul_op", lambda: (_randn(7, 19), _randn(19, 5))),
    ("tiling", "matmul_tma_op", lambda: (_randn(7, 19), _randn(19, 5))),
    ("flash_attention", "attention_forward_op", lambda: (_randn(1, 2, 9, 16), _randn(1, 1, 9, 16), _randn(1, 1, 9, 16), True, 0.25, True)),
    ("flash_attention", "attention_decode_op", lambda: (_randn(2, 4, 1, 16), _randn(2, 2, 11, 16), _randn(2, 2, 11, 16), 0.25)),
    ("flash_attention", "kv_quantize_int8_op", lambda: (_randn(1, 2, 7, 16),)),
    ("flash_attention", "attention_decode_int8_op", lambda: (_randn(2, 4, 1, 16), *_int8_cache(2, 2, 11, 16), 0.25)),
    ("flash_attention", "attention_decode_int4_op", lambda: (_randn(2, 4, 1, 16), *_kivi_cache(2, 2, 11, 16, 16), 16, 0.25)),
    ("quant_matmul", "w8a16_op", lambda: (_randn(3, 64), torch.randint(-128, 128, (5, 64), dtype=torch.int8), _randn(5))),
    ("quant_matmul", "w4a16_op", lambda: (_randn(3, 64), _int4_weights(5, 64), _randn(5, 2), 32)),
]  # fmt: skip


@pytest.fixture(scope="module")
def solutions() -> dict[str, object]:
    return {slug: load_kernels(slug, "solutions") for slug in sorted({c[0] for c in CASES})}


@pytest.mark.parametrize(("slug", "op", "draw"), CASES, ids=[f"{c[0]}.{c[1]}" for c in CASES])
def test_every_op_passes_opcheck(slug: str, op: str, draw: Callable[[], tuple], solutions: dict) -> None:
    torch.manual_seed(SEED)
    result = torch.library.opcheck(getattr(solutions[slug], op).overload, draw(), test_utils=CHECKS)
    assert result == {name: "SUCCESS" for name in CHECKS}


@pytest.mark.parametrize(("slug", "op", "draw"), CASES, ids=[f"{c[0]}.{c[1]}" for c in CASES])
def test_an_eager_call_skips_the_dispatcher_and_computes_the_same(slug: str, op: str, draw: Callable[[], tuple],
                                                                   solutions: dict) -> None:
    torch.manual_seed(SEED)
    args = tuple(a.requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in draw())
    course_op = getattr(solutions[slug], op)
    dispatched = course_op.overload(*args)

    def refuse(*_: object) -> None:
        raise AssertionError("an eager call with no dispatch mode went through the dispatcher")

    overload, course_op.overload = course_op.overload, refuse
    try:
        direct = course_op(*args)
    finally:
        course_op.overload = overload
    assert torch.is_grad_enabled()  # the direct call turned autograd off and back on
    for a, b in zip(torch.utils._pytree.tree_leaves(direct), torch.utils._pytree.tree_leaves(dispatched), strict=True):
        assert not a.requires_grad  # as below the dispatcher: the op records no graph
        assert a.shape == b.shape and a.dtype == b.dtype
        assert torch.equal(a.nan_to_num(), b.nan_to_num())


def test_the_backward_ops_pass_opcheck_on_the_forwards_saved_tensors(solutions: dict) -> None:
    torch.manual_seed(SEED)
    rms, fa = solutions["rmsnorm"], solutions["flash_attention"]
    x, w = _randn(4, 37), _randn(37)
    _, rstd = rms.rmsnorm_forward_op(x, w, 1e-6, True)
    # the output's gradient as given, and strided, as autograd may hand it over
    for dy in (_randn(4, 37), _randn(37, 4).t()):
        assert torch.library.opcheck(rms.rmsnorm_backward_op.overload, (x, w, rstd, dy), test_utils=CHECKS)
    q, k, v = _randn(1, 2, 9, 16), _randn(1, 1, 9, 16), _randn(1, 1, 9, 16)
    o, lse = fa.attention_forward_op(q, k, v, True, 0.25, True)
    for do in (_randn(1, 2, 9, 16), _randn(1, 9, 2, 16).transpose(1, 2)):
        args = (q, k, v, o, lse, do, True, 0.25)
        assert torch.library.opcheck(fa.attention_backward_op.overload, args, test_utils=CHECKS)


# Ops opchecked by test_the_backward_ops_pass_opcheck_on_the_forwards_saved_tensors instead of a line in CASES
OPCHECKED_ON_SAVED_TENSORS = {("rmsnorm", "rmsnorm_backward_op"), ("flash_attention", "attention_backward_op")}


def test_every_op_of_every_solution_has_a_case() -> None:
    """A new op (a new assignment's, or a new launcher of an old one) with no line in CASES would never be
    opchecked, and nothing would fail: this is what fails."""
    covered = {(slug, op) for slug, op, _ in CASES} | OPCHECKED_ON_SAVED_TENSORS
    kernels = sorted(path.parent.name for path in (REPO_ROOT / "solutions").glob("*/kernels.py"))
    registered = set()
    for slug in kernels:
        module = load_kernels(slug, "solutions")
        registered |= {(slug, name) for name, value in vars(module).items() if isinstance(value, CourseOp)}
    assert len(registered) >= len(CASES) - 2  # the search found the ops (several CASES lines share one op)
    missing = sorted(f"{slug}.{op}" for slug, op in registered - covered)
    assert not missing, f"ops with no opcheck case: add a line per op to CASES in tests/test_custom_ops.py: {missing}"


class _Ops(TorchDispatchMode):
    """The ops a call dispatches, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def test_the_public_calls_go_through_their_ops_forward_and_backward(solutions: dict) -> None:
    rms = solutions["rmsnorm"]
    x, w = _randn(3, 37).requires_grad_(), _randn(37).requires_grad_()
    with _Ops() as seen:
        rms.rmsnorm(x, w).sum().backward()
    ns = rms.OPS.namespace
    assert f"{ns}.rmsnorm_forward.default" in seen.names and f"{ns}.rmsnorm_backward.default" in seen.names
    a, b = _randn(7, 19), _randn(19, 5)
    with _Ops() as seen:
        solutions["tiling"].matmul(a, b)
    assert seen.names == [f"{solutions['tiling'].OPS.namespace}.matmul.default"]


def test_each_copy_of_a_kernels_py_gets_a_namespace_of_its_own(solutions: dict, tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert base_namespace(str(REPO_ROOT / "solutions" / "fusion" / "kernels.py")) == "course"
    assert base_namespace(str(REPO_ROOT / "assignments" / "fusion" / "kernels.py")) == "course_student"
    assert base_namespace(str(tmp_path / "kernels.py")) == "course_file"
    again = load_kernels("fusion", "solutions")  # a second load of one file: PyTorch refuses a name twice
    assert again.OPS.namespace not in (solutions["fusion"].OPS.namespace, None)
    x = _randn(4, 9)
    assert torch.equal(again.softmax(x), solutions["fusion"].softmax(x))
