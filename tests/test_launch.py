"""course.launch.launch: Triton's launcher the first time a key is seen, the compiled kernel directly after,
and Triton's launcher again whenever anything Triton specializes on changes.

The direct launch happens only on a GPU; here a fake kernel stands in for a JITFunction (its signature, and
`kernel[grid](...)` returning a compiled kernel whose `run` records what it is given)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch

import course.launch as cl


def _signature(x_ptr, y_ptr, n, scale, BLOCK, FLAG=True):  # noqa: N803 - the kernel's parameter names
    pass


class FakeCompiled:
    packed_metadata = ("meta",)
    function = "handle"

    def __init__(self, calls: list) -> None:
        self.calls = calls

    def _init_handles(self) -> None:
        pass

    def run(self, *a: Any) -> None:
        self.calls.append(("direct", a))


class FakeKernel:
    signature = inspect.signature(_signature)

    def __init__(self) -> None:
        self.calls: list = []
        self.compiled = FakeCompiled(self.calls)

    def __getitem__(self, grid: tuple) -> Any:
        def run(*args: Any, **meta: Any) -> FakeCompiled:
            self.calls.append(("triton", grid, args, meta))
            return self.compiled

        return run


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> dict:
    """launch's view of a GPU: device 0, stream 7, no launch hooks; fresh caches."""
    state = {"hooked": False}
    monkeypatch.setattr(cl, "_GPU", {"device": lambda: 0, "stream": lambda d: 7, "hooked": lambda: state["hooked"]})
    monkeypatch.setattr(cl, "_BOUND", {})
    monkeypatch.setattr(cl, "_PLAIN", {})
    monkeypatch.setattr(cl, "_DIRECT", {"on": True})
    return state


def _kinds(k: FakeKernel) -> list[str]:
    return [c[0] for c in k.calls]


def test_second_launch_is_direct_with_constexprs_and_defaults(gpu: dict) -> None:
    k, x, y = FakeKernel(), torch.zeros(8), torch.zeros(8)
    for _ in range(3):
        cl.launch(k, (5, 2), x, y, 8, 0.5, BLOCK=4, num_warps=2)
    assert _kinds(k) == ["triton", "direct", "direct"]
    # grid padded to three, stream, handle, metadata, no hooks, the arguments, then BLOCK and FLAG's default
    assert k.calls[1][1] == (5, 2, 1, 7, "handle", ("meta",), None, None, None, x, y, 8, 0.5, 4, True)


@pytest.mark.parametrize(
    "change", ["int value", "int to 1", "bool for int", "float for int", "alignment", "dtype", "constexpr", "option"]
)
def test_anything_triton_specializes_on_goes_back_to_triton(gpu: dict, change: str) -> None:
    k, x, y = FakeKernel(), torch.zeros(64, dtype=torch.float16), torch.zeros(64)
    args: list[Any] = [x, y, 32, 0.5]
    meta = {"BLOCK": 4, "num_warps": 2}
    cl.launch(k, (1,), *args, **meta)
    cl.launch(k, (1,), *args, **meta)
    if change == "int value":
        args[2] = 48
    elif change == "int to 1":
        args[2] = 1
    elif change == "bool for int":
        args[2] = True
        cl.launch(k, (1,), x, y, 1, 0.5, **meta)  # int 1 first: True must not reuse its kernel
    elif change == "float for int":
        args[2] = 32.0
    elif change == "alignment":
        args[0] = x[1:]  # 2 bytes past a 16-byte boundary
    elif change == "dtype":
        args[1] = y.double()
    elif change == "constexpr":
        meta["BLOCK"] = 8
    else:
        meta["num_warps"] = 4
    cl.launch(k, (1,), *args, **meta)
    assert _kinds(k)[-1] == "triton"
    assert _kinds(k)[:2] == ["triton", "direct"]


def test_a_scalar_given_by_keyword_is_part_of_the_key(gpu: dict) -> None:
    k, x = FakeKernel(), torch.zeros(4)
    for scale in (0.5, 0.5, 2.0):
        cl.launch(k, (1,), x, x, 4, scale=scale, BLOCK=4)
    assert _kinds(k) == ["triton", "direct", "triton"]
    assert k.calls[1][1][9:] == (x, x, 4, 0.5, 4, True)


def test_a_float_value_does_not_specialize(gpu: dict) -> None:
    k, x = FakeKernel(), torch.zeros(4)
    cl.launch(k, (1,), x, x, 4, 0.5, BLOCK=4)
    cl.launch(k, (1,), x, x, 4, 2.0, BLOCK=4)
    assert _kinds(k) == ["triton", "direct"]
    assert k.calls[1][1][12] == 2.0


@pytest.mark.parametrize("case", ["off", "hooked", "unknown argument", "unhashable constexpr", "callable grid", "interpreter"])
def test_triton_every_time(gpu: dict, case: str) -> None:
    k, x = FakeKernel(), torch.zeros(4)
    args: tuple = (x, x, 4, 0.5)
    meta: dict = {"BLOCK": 4}
    grid: Any = (1,)
    if case == "off":
        assert cl.direct_launches(False) is True
    elif case == "hooked":
        gpu["hooked"] = True
    elif case == "unknown argument":
        args = (x, x, 4, [0.5])
    elif case == "unhashable constexpr":
        meta = {"BLOCK": [4]}
    elif case == "callable grid":
        grid = lambda meta: (1,)  # noqa: E731 - as Triton's autotuned launches pass it
    else:
        k.compiled = None  # the interpreter's launch returns no compiled kernel
    for _ in range(3):
        cl.launch(k, grid, *args, **meta)
    assert _kinds(k) == ["triton"] * 3


def test_plain_launches_goes_through_triton_and_restores_the_setting(gpu: dict) -> None:
    k, x = FakeKernel(), torch.zeros(4)
    cl.launch(k, (1,), x, x, 4, 0.5, BLOCK=4)
    with cl.plain_launches():
        cl.launch(k, (1,), x, x, 4, 0.5, BLOCK=4)
    cl.launch(k, (1,), x, x, 4, 0.5, BLOCK=4)
    assert _kinds(k) == ["triton", "triton", "direct"]
    assert cl.direct_launches(True) is True


# --------------------------------------------------------------------------------------------------
# LaunchPlan: the scalars and constexprs fixed once, each call passing its tensors
# --------------------------------------------------------------------------------------------------


def test_a_plan_launches_through_triton_once_then_directly(gpu: dict) -> None:
    k, x, y = FakeKernel(), torch.zeros(8), torch.zeros(8)
    plan = cl.LaunchPlan(k, (5, 2), (8, 0.5), {"BLOCK": 4, "num_warps": 2})
    for _ in range(3):
        plan(x, y)
    assert _kinds(k) == ["triton", "direct", "direct"]
    assert k.calls[0][1:] == ((5, 2), (x, y, 8, 0.5), {"BLOCK": 4, "num_warps": 2})
    # the same arguments as launch passes: grid padded to three, stream, handle, metadata, then BLOCK and FLAG
    assert k.calls[2][1] == (5, 2, 1, 7, "handle", ("meta",), None, None, None, x, y, 8, 0.5, 4, True)


@pytest.mark.parametrize("change", ["alignment", "dtype", "device"])
def test_a_plan_goes_back_to_triton_when_a_tensor_specializes_differently(gpu: dict, change: str) -> None:
    k, x, y = FakeKernel(), torch.zeros(64, dtype=torch.float16), torch.zeros(64)
    plan = cl.LaunchPlan(k, (1,), (32, 0.5), {"BLOCK": 4})
    plan(x, y)
    plan(x, y)
    if change == "alignment":
        plan(x[1:], y)  # 2 bytes past a 16-byte boundary
    elif change == "dtype":
        plan(x, y.double())
    else:
        cl._GPU["device"] = lambda: 1
        plan(x, y)
    assert _kinds(k) == ["triton", "direct", "triton"]


@pytest.mark.parametrize("case", ["off", "hooked", "interpreter"])
def test_a_plan_goes_through_triton_every_time_where_launch_would(gpu: dict, case: str) -> None:
    k, x = FakeKernel(), torch.zeros(4)
    plan = cl.LaunchPlan(k, (1,), (4, 0.5), {"BLOCK": 4})
    if case == "off":
        cl.direct_launches(False)
    elif case == "hooked":
        plan(x, x)  # learnt while no hook is set
        gpu["hooked"] = True
        k.calls.clear()
    else:
        k.compiled = None
    for _ in range(3):
        plan(x, x)
    assert _kinds(k) == ["triton"] * 3


def test_a_plans_kernel_found_plain_by_launch_stays_plain(gpu: dict) -> None:
    """The interpreter, found by either path, sends both through Triton from then on."""
    k, x = FakeKernel(), torch.zeros(4)
    k.compiled = None
    cl.launch(k, (1,), x, x, 4, 0.5, BLOCK=4)
    k.compiled = FakeCompiled(k.calls)
    plan = cl.LaunchPlan(k, (1,), (4, 0.5), {"BLOCK": 4})
    plan(x, x)
    plan(x, x)
    assert _kinds(k) == ["triton"] * 3
