"""torch.compile traces into a course op (course/ops.py), so that Inductor launches its kernels itself, and keeps
the op whole where that would change what the kernels compute: a float argument, a TMA descriptor, symbolic
shapes, a launcher with state (`traced=False`), or the switch off.

The CPU interpreter's kernels cannot be recorded into a graph, so here the recording is a stand-in: a "kernel"
whose launch is ordinary PyTorch code (y = 2x), traced by AOTAutograd like any other. The real kernels are
traced on a GPU (results/provenance/traced_ops.py: every op of the solutions, Inductor's output bitwise equal to
the eager call's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch._dynamo.testing import AotEagerAndRecordGraphs

import course.launch
import course.ops
from course.env import DEVICE, interpreter_requested
from course.loader import load_kernels
from conftest import SEED


class _Doubling:
    """Stands in for a Triton kernel: launched as kernel[grid](x, y, *rest), it writes y = 2 x."""

    __name__ = "_doubling_kernel"

    def __getitem__(self, grid: tuple) -> Callable[..., None]:
        def run(x: torch.Tensor, y: torch.Tensor, *rest: Any, **meta: Any) -> None:
            y.copy_(x * 2)

        return run


KERNEL = _Doubling()


@pytest.fixture(scope="module")
def library() -> dict[str, Any]:
    """Ops defined as a GPU would define them (the interpreter not in use), launching the stand-in kernel."""
    patch = pytest.MonkeyPatch()
    patch.setattr(course.ops, "interpreter_requested", lambda: False)
    ops = course.ops.OpLibrary("/nowhere/kernels.py")

    def like(x: torch.Tensor, *rest: Any) -> torch.Tensor:
        return torch.empty_like(x)

    def define(name: str, extra: tuple, schema: str = "(Tensor x) -> Tensor", traced: bool = True,
               rows: bool = True, float32_floats: bool = False) -> Any:  # fmt: skip
        @ops.op(name, schema, like, traced=traced, float32_floats=float32_floats)
        def op(x: torch.Tensor, *args: Any) -> torch.Tensor:
            y = torch.empty_like(x)
            course.launch.launch(KERNEL, (1,), x, y, *((x.shape[0],) if rows else ()), *extra, BLOCK=16)
            return y

        return op

    def define_reading(name: str) -> Any:
        @ops.op(name, "(Tensor x) -> Tensor", like)
        def op(x: torch.Tensor) -> torch.Tensor:  # a launcher that reads a value on the host: a trace has none
            y = torch.empty_like(x)
            course.launch.launch(KERNEL, (1,), x, y, int(x.abs().max().item() > 0), BLOCK=16)
            return y

        return op

    made = {
        "plain": define("doubled", ()),
        "float": define("doubled_eps", (1e-6,)),
        "float32 float": define("doubled_eps32", (1e-6,), float32_floats=True),  # its kernel casts eps first
        "descriptor": define("doubled_desc", (object(),)),
        "stateful": define("doubled_kept", (), traced=False),
        "no sizes": define("doubled_anywhere", (), rows=False),  # a launch that would trace with symbolic shapes
        "data": define_reading("doubled_read"),
    }
    patch.undo()
    return made


@pytest.fixture
def stand_in(library: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The ops above, with a launch recorded as the stand-in kernel's PyTorch code (for this test only)."""
    monkeypatch.setattr(torch.library, "wrap_triton", lambda kernel: kernel)
    return library


def _graph(
    fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, dynamic: bool = False
) -> tuple[torch.Tensor, str]:
    torch._dynamo.reset()
    recorder = AotEagerAndRecordGraphs()
    if dynamic:
        torch._dynamo.mark_dynamic(x, 0)
    out = torch.compile(fn, backend=recorder, fullgraph=True)(x)
    return out, "\n".join(g.code for g in recorder.fw_graphs)


def _x(rows: int = 5) -> torch.Tensor:
    torch.manual_seed(SEED)
    return torch.randn(rows, 3)


@pytest.mark.parametrize("kind", ["plain", "float32 float"])
def test_a_plain_op_is_traced_into_its_launches(stand_in: dict, kind: str) -> None:
    """A float argument is recorded too where the op says its kernels cast floats to float32."""
    x = _x()
    out, code = _graph(lambda t: stand_in[kind](t) + 1, x)
    torch.testing.assert_close(out, 2 * x + 1, rtol=0, atol=0)
    assert "aten.mul" in code and "course_file" not in code


@pytest.mark.parametrize("kind", ["float", "descriptor", "stateful", "data"])
def test_an_op_that_cannot_be_traced_as_it_runs_stays_one_node(stand_in: dict, kind: str) -> None:
    x = _x(7)
    out, code = _graph(lambda t: stand_in[kind](t) + 1, x)
    torch.testing.assert_close(out, 2 * x + 1, rtol=0, atol=0)
    assert "course_file" in code and "aten.mul" not in code  # nothing of the abandoned trace is left behind


def test_symbolic_shapes_keep_the_op_whole(stand_in: dict) -> None:
    x = _x(9)
    out, code = _graph(lambda t: stand_in["no sizes"](t) + 1, x, dynamic=True)
    torch.testing.assert_close(out, 2 * x + 1, rtol=0, atol=0)
    assert "course_file" in code and "aten.mul" not in code


def test_an_exported_program_keeps_the_op_whole(stand_in: dict) -> None:
    """As torch.export keeps a triton_op: an exported program is meant to be saved and loaded, without kernels."""

    class Doubler(torch.nn.Module):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return stand_in["plain"](t) + 1

    x = _x(6)
    exported = torch.export.export(Doubler(), (x,)).run_decompositions()  # the inference IR: functionalized
    code = exported.graph_module.code
    assert "course_file" in code and "aten.mul" not in code
    torch.testing.assert_close(exported.module()(x), 2 * x + 1, rtol=0, atol=0)


def test_the_switch_keeps_every_op_whole_and_is_restored(stand_in: dict) -> None:
    before = course.ops.trace_into_ops(False)
    try:
        out, code = _graph(lambda t: stand_in["plain"](t), _x(4))
    finally:
        course.ops.trace_into_ops(before)
    assert before is True and "course_file" in code
    _, code = _graph(lambda t: stand_in["plain"](t), _x(4))
    assert "course_file" not in code


def test_a_solutions_op_is_traced_on_a_gpu_and_stays_opaque_in_the_interpreter() -> None:
    """On a GPU torch.compile records rope's kernel into the graph; on the CPU tier the op is one node, as
    before (interpreted kernels cannot be recorded). Either way the compiled call computes what the eager one does."""
    rope = load_kernels("rope", "solutions")
    torch.manual_seed(SEED)
    x, cos, sin = (torch.randn(*shape, device=DEVICE) for shape in ((1, 2, 5, 8), (5, 4), (5, 4)))
    torch._dynamo.reset()
    recorder = AotEagerAndRecordGraphs()
    out = torch.compile(lambda a: rope.rope_forward_op(a, cos, sin), backend=recorder, fullgraph=True)(x)
    torch.testing.assert_close(out, rope.rope_forward_op(x, cos, sin), rtol=0, atol=0)
    code = "\n".join(g.code for g in recorder.fw_graphs)
    traced = not interpreter_requested()
    assert ("triton_kernel_wrapper" in code) is traced
    assert (f"{rope.OPS.namespace}.rope_forward" in code) is not traced


def test_a_recorded_launch_refuses_what_the_graph_would_change() -> None:
    x, y = torch.ones(4), torch.empty(4)
    calls: list[tuple] = []

    class Recorder:
        def __getitem__(self, grid: tuple) -> Callable[..., None]:
            return lambda *args, **meta: calls.append((grid, args, meta))

    with pytest.MonkeyPatch.context() as patch, course.launch.traced_launches():
        patch.setattr(torch.library, "wrap_triton", lambda kernel: kernel)
        course.launch.launch(Recorder(), (3,), x, y, 4, True, None, BLOCK=8, launch_pdl=True)  # an option Inductor lacks
        plan = course.launch.LaunchPlan(Recorder(), (2, 1), (4,), {"BLOCK": 8})
        plan(x, y)
        for bad in (0.5, object()):
            with pytest.raises(course.launch.Untraceable):
                course.launch.launch(Recorder(), (3,), x, y, bad, BLOCK=8)
        with course.launch.traced_launches(floats=True):
            course.launch.launch(Recorder(), (5,), x, y, 0.5, BLOCK=8)
            with pytest.raises(course.launch.Untraceable):
                course.launch.launch(Recorder(), (5,), x, y, object(), BLOCK=8)
        assert course.launch._TRACING == {"on": True, "floats": False}
    assert calls == [((3,), (x, y, 4, True, None), {"BLOCK": 8}), ((2, 1), (x, y, 4), {"BLOCK": 8}),
                     ((5,), (x, y, 0.5), {"BLOCK": 8})]
    assert course.launch._TRACING == {"on": False, "floats": False}


@pytest.mark.parametrize("offset", [0, 1, 2, 3])
def test_alignment_is_read_from_the_address_or_while_tracing_from_the_offset(offset: int) -> None:
    t = torch.zeros(64, dtype=torch.bfloat16)[offset:]
    expected = offset * 2 % 4 == 0
    assert course.launch.aligned(t, 4) is expected
    with course.launch.traced_launches():
        assert course.launch.aligned(t, 4) is expected


def _descriptor_kernel() -> Any:
    """A compiled-kernel stand-in that takes a TMA descriptor: a JITFunction made directly, so that the interpreter
    (which turns @triton.jit into a function it runs) does not replace it. Only traced here, never launched."""
    import triton
    import triton.language as tl

    def copy_tile(desc, y_ptr, scale, BLOCK: tl.constexpr):
        tile = desc.load([0, 0])
        tl.store(y_ptr + tl.arange(0, BLOCK), tl.reshape(tile, [BLOCK]) * tl.cast(scale, tl.float32))

    return triton.runtime.jit.JITFunction(copy_tile)


def test_a_tma_descriptor_is_recorded_as_its_tensor_and_tile_shape() -> None:
    """As torch.compile records a descriptor in code it compiles: the graph holds the tensor it describes (as the
    descriptor's 2-D view) and its tile shape, and the compiled program makes the descriptor again before each
    launch. One that is not over a whole contiguous tensor, zero-padded, is refused (the op stays whole)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from triton.tools.tensor_descriptor import TensorDescriptor

    kernel = _descriptor_kernel()

    def record(x: torch.Tensor, rows: int, padding: str = "zero") -> torch.Tensor:
        y = torch.empty(64, dtype=x.dtype)
        desc = TensorDescriptor(x, shape=[rows, 8], strides=[8, 1], block_shape=[8, 8], padding=padding)
        with course.launch.traced_launches(floats=True):
            course.launch.launch(kernel, (1,), desc, y, 0.5, BLOCK=64)
        return y

    x = torch.randn(2, 3, 8, 8)  # (B, H, S, D), seen as one (B*H*S, D) matrix
    code = make_fx(lambda t: record(t, 48), tracing_mode="fake")(x).code
    assert "aten.view.default(t_1, [48, 8])" in code
    assert "tma_descriptor_metadata = {'desc': ('stable', ([8, 8],))}" in code
    assert "'desc': view" in code and "'scale': 0.5" in code
    for bad in (lambda t: record(t, 40), lambda t: record(t[:, :2], 32), lambda t: record(t, 48, "nan")):
        with pytest.raises(course.launch.Untraceable):
            make_fx(bad, tracing_mode="fake")(x)
