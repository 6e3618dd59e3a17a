"""The replay's parts, without a worker: reading kernels from source text, refusing what is not Triton,
the compile check, and replaying (and refusing) tapes written by hand as a forger would write them."""

from __future__ import annotations

import os

import torch
import pytest

from autograder import kernel_check, kernel_source, policy
from autograder import tape as tapes
from autograder.replay import Replay, ReplayRefused, install_bounds_checks
from course.env import interpreter_requested

# Replays below run kernels under Triton's interpreter, which must be chosen before triton is imported.
interpreted = pytest.mark.skipif(not interpreter_requested(), reason="replays under the CPU interpreter")

SOURCE = '''
import triton
import triton.language as tl
from pathlib import Path

open("/nonexistent/side-effect", "w")  # never runs: the source is parsed, not imported
TABLE = Path(__file__)                  # not a constant: left out
SCALE = tl.constexpr(2.0)
HALF = tl.constexpr(SCALE * 0.25)
BLOCK = 64


@triton.jit(do_not_specialize=["n"])
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 64):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, _twice(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@triton.jit
def _twice(v):
    return v * SCALE


@triton.autotune(configs=[], key=["n"])
@triton.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], tl.float32) + HALF, mask=tl.arange(0, BLOCK) < n)
'''


def _read(source: str) -> kernel_source.Kernels:
    kernels = kernel_source.read(source, "/nowhere/kernels.py")
    kernel_source.check(kernels)
    return kernels


def test_kernels_and_constants_are_read_without_running_the_file() -> None:
    kernels = _read(SOURCE)
    assert set(kernels.functions) == {"double", "_twice", "tuned"} and not kernels.refused
    assert kernels.jit_options["double"] == {"do_not_specialize": ["n"]}  # autotune is dropped, jit's literals kept
    assert kernels.constants["SCALE"].value == 2.0 and kernels.constants["HALF"].value == 0.5
    assert kernels.constants["BLOCK"] == 64 and "TABLE" not in kernels.constants


ESCAPES = {
    "calls plain Python": ("def k(x_ptr):\n    helper()\n", "it uses `helper`"),
    "imports": ("def k(x_ptr):\n    import os\n", "an import"),
    "reads a dunder": ("def k(x_ptr):\n    x_ptr.__class__\n", "it reads `x_ptr.__class__`"),
    "reads the interpreter's handle": ("def k(x_ptr):\n    tl.load(x_ptr).handle\n", "`.handle`"),
    "leaves triton.language": ("def k(x_ptr):\n    tl.core.os.system('x')\n", "not part of triton.language"),
    "uses a lambda": ("def k(x_ptr):\n    f = lambda: 0\n", "a lambda"),
    "defines a function": ("def k(x_ptr):\n    def f():\n        pass\n", "a nested function"),
    "catches": ("def k(x_ptr):\n    try:\n        pass\n    except Exception:\n        pass\n", "`try`"),
    "calls getattr": ("def k(x_ptr):\n    getattr(x_ptr, 'dtype')\n", "it uses `getattr`"),
    "has a default that runs code": ("def k(x_ptr, N: tl.constexpr = helper()):\n    pass\n", "is not a constant"),
    "writes an attribute": ("def k(x_ptr):\n    x_ptr.dtype = 1\n", "assigns to an attribute"),
    # triton.language's own host-side Python: str_to_ty eval()s part of a type string, the others build functions
    "evaluates a type string": ("def k(x_ptr):\n    tl.str_to_ty(tl.constexpr('fp32').value, None)\n", "`tl.str_to_ty`"),
    "dispatches by hand": ("def k(x_ptr):\n    tl.core.dispatch(None, None, None, None, None, None)\n", "`tl.core.dispatch`"),
    "makes a builtin": ("def k(x_ptr):\n    tl.core.builtin(x_ptr)\n", "`tl.core.builtin`"),
    "reaches the code generator's semantic": ("def k(x_ptr):\n    tl.semantic.TritonSemantic(None)\n", "`tl.semantic"),
    # annotations: Triton's code generator evaluates a parameter's annotation, with getattr among its builtins
    "runs code in an annotation": ("def k(x_ptr, n: getattr(tl, 'core')):\n    pass\n", "parameter `n` is annotated with"),
    "annotates with a call": ("def k(x_ptr, n: tl.constexpr(1)):\n    pass\n", "parameter `n` is annotated with"),
    "annotates with a name of its own": ("def k(x_ptr, n: not_constexpr):\n    pass\n", "parameter `n` is annotated"),
    "annotates the return value": ("def k(x_ptr) -> helper():\n    pass\n", "its return value is annotated"),
    "annotates through a dunder": ("def k(x_ptr, n: tl.core.__builtins__):\n    pass\n", "parameter `n` is annotated"),
}


def test_the_language_a_kernel_uses_is_still_allowed() -> None:
    """Builtins, Triton's own @jit and constexpr functions, its classes and libdevice's stubs, as the solutions use them."""
    body = ("def k(x_ptr, N: tl.constexpr, M: 'tl.constexpr', J: constexpr, I: tl.int32, n: int, f: float = 1.0):\n"
            "    offs = tl.arange(0, N)\n    x = tl.load(x_ptr + offs)\n"
            "    y = tl.sum(tl.math.exp2(x), axis=0) + libdevice.tanh(x) + tl.cdiv(N, 2) + triton.cdiv(N, 4)\n"
            "    for i in tl.static_range(2):\n        y += tl.zeros([N], tl.float32)\n"
            "    tl.store(x_ptr + offs, y.to(tl.float32))\n")  # fmt: skip
    source = ("import triton\nimport triton.language as tl\nfrom triton.language import constexpr\n"
              f"from triton.language.extra import libdevice\n@triton.jit\n{body}")
    kernels = _read(source)
    assert "k" in kernels.functions and not kernels.refused, kernels.refused


@pytest.mark.parametrize("name", list(ESCAPES))
def test_a_kernel_body_that_is_not_triton_is_refused_before_anything_runs(name: str) -> None:
    body, phrase = ESCAPES[name]
    kernels = _read(f"import triton\nimport triton.language as tl\ndef helper():\n    return 1\n@triton.jit\n{body}")
    assert phrase in kernels.refused.get("k", ""), kernels.refused


def test_a_kernel_calling_a_refused_one_is_refused_too() -> None:
    kernels = _read("import triton\n@triton.jit\ndef bad(x):\n    import os\n@triton.jit\ndef good(x):\n    bad(x)\n")
    assert kernels.refused["good"].startswith("it calls bad")


SHIFTED = (
    "#\u2028\u2028\u2028\u2028\u2028\u2028\nimport triton\nimport triton.language as tl\n"
    "def unchecked(x_ptr, n):\n    getattr(tl, 'core')\n    tl.store(x_ptr, 1.0)\n"
    "@triton.jit\ndef k(x_ptr, n):\n    tl.store(x_ptr, 2.0)\n"
)


def test_triton_reads_the_text_of_the_function_that_was_checked() -> None:
    """str.splitlines breaks at U+2028 and form feeds, Python's parser does not: with the source's lines cut that
    way, Triton (which reads a kernel's text through linecache) compiled the unchecked function above `k` as `k`."""
    kernels = _read(SHIFTED)
    built = kernel_source.build(kernels, interpret=False)
    assert built["k"].src.startswith("def k(") and "unchecked" not in built["k"].src
    assert kernel_check.CompileCheck(built).check("k", [torch.zeros(4), 4], {}) == ""


def test_a_kernel_whose_text_reads_back_otherwise_is_refused() -> None:
    """Whatever moves the text Triton reads away from what was checked, the kernel is not built."""
    kernels = _read(SHIFTED)
    kernels.source = SHIFTED.replace("#\u2028", "#\n\n\n\n", 1)  # the same function, three lines further down
    built = kernel_source.build(kernels, interpret=True)
    assert "k" not in built and "does not read back" in kernels.refused["k"]


def test_python_behind_a_constexpr_branch_does_not_compile_for_a_gpu() -> None:
    """Under the interpreter `float(tl.load(p))` reads a value into Python; compiled for a GPU it cannot."""
    kernels = _read(
        "import triton\nimport triton.language as tl\n@triton.jit\n"
        "def k(x_ptr, y_ptr, INTERPRETED: tl.constexpr):\n"
        "    if INTERPRETED:\n        v = float(tl.load(x_ptr))\n        tl.store(y_ptr, v)\n"
        "    else:\n        tl.store(y_ptr, tl.load(x_ptr))\n"
    )
    check = kernel_check.CompileCheck(kernel_source.build(kernels, interpret=False))
    x, y = torch.ones(4), torch.empty(4)
    assert check.check("k", [x, y], {"INTERPRETED": False}) == ""
    assert check.check("k", [x, y], {"INTERPRETED": True}) != ""


# --------------------------------------------------------------------------------------------------
# Tapes written by hand
# --------------------------------------------------------------------------------------------------


def _ref(sid: int, shape: list[int], stride: list[int] | None = None, offset: int = 0) -> dict:
    return {"T": [str(sid), offset, shape, stride or [1], "float32", "cpu"]}


def _tape(entries: list[dict], outputs: dict, carried: dict | None = None) -> dict:
    storages = {"0": {"nbytes": 400, "origin": "input", "device": "cpu"},
                "1": {"nbytes": 400, "origin": "created", "device": "cpu"}}  # fmt: skip
    return {"storages": storages, "inputs": {"x": _ref(0, [100])}, "outputs": outputs, "entries": entries,
            "carried": carried or {}, "unrecorded": []}  # fmt: skip


EMPTY = {"kind": "op", "op": "aten.empty_like.default", "args": [_ref(0, [100])], "kwargs": {}, "out": _ref(1, [100])}
LAUNCH = {"kind": "launch", "kernel": "double", "file": "/nowhere/kernels.py", "grid": [2],
          "args": [_ref(0, [100]), _ref(1, [100]), 100], "kwargs": {"BLOCK": 64}}  # fmt: skip


def _replay(tape: dict, x: torch.Tensor, source: str = SOURCE, refused_ops: frozenset[str] = frozenset()) -> dict:
    kernels = _read(source)
    install_bounds_checks()
    replay = Replay(tape, kernel_source.build(kernels, interpret=True), kernels.refused, torch.device("cpu"), bounds=True,
                    refused_ops=refused_ops)  # fmt: skip
    return replay.run(replay.bind({"x": x}))


@interpreted
def test_a_tape_replays_on_new_inputs() -> None:
    x = torch.randn(100)
    out = _replay(_tape([EMPTY, LAUNCH], {"y": _ref(1, [100])}), x)["y"]
    assert torch.equal(out, 2 * x)


@interpreted
def test_a_tape_that_computes_with_pytorch_is_refused_in_the_grader_and_in_the_replay() -> None:
    mul = {"kind": "op", "op": "aten.mul.Tensor", "args": [_ref(0, [100]), 2.0], "kwargs": {}, "out": _ref(1, [100])}
    tape = _tape([mul, LAUNCH], {"y": _ref(1, [100])})
    assert "computed with PyTorch (aten.mul)" in tapes.problems(tape, "/nowhere/kernels.py")
    with pytest.raises(ReplayRefused, match="aten.mul"):
        _replay(tape, torch.randn(100))


def test_an_output_placed_in_an_input_is_refused() -> None:
    tape = _tape([LAUNCH], {"y": _ref(0, [100])})
    assert "`y` shares memory with the input `x`" in tapes.problems(tape, "/nowhere/kernels.py")


@interpreted
def test_a_forged_new_storage_that_is_really_an_input_is_refused() -> None:
    """set_ points a tensor at the input's memory, and the forged record calls the result new memory."""
    alias = {"kind": "op", "op": "aten.set_.source_Storage", "args": [_ref(1, [100]), {"S": "0"}], "kwargs": {},
             "out": _ref(2, [100])}  # fmt: skip
    tape = _tape([EMPTY, alias], {"y": _ref(2, [100])})
    tape["storages"]["2"] = {"nbytes": 400, "origin": "created", "device": "cpu"}
    with pytest.raises(ReplayRefused, match="does not match what its operations do"):
        _replay(tape, torch.randn(100))


@interpreted
def test_carried_memory_is_what_the_worker_had_and_nothing_more() -> None:
    """A buffer the call did not allocate comes with the contents the worker saw: the answer to its own inputs,
    which is not the answer on the replay's."""
    worker_x = torch.randn(100)
    carried = {"1": (2 * worker_x).view(torch.uint8).clone()}
    noop = {**LAUNCH, "kernel": "tuned", "args": [_ref(2, [100]), 0], "kwargs": {"BLOCK": 64}, "grid": [1]}
    tape = _tape([noop], {"y": _ref(1, [100])}, carried)
    tape["storages"]["1"]["origin"] = "carried"
    tape["storages"]["2"] = {"nbytes": 400, "origin": "created", "device": "cpu"}
    out = _replay(tape, torch.randn(100))["y"]
    assert torch.equal(out, 2 * worker_x)  # carried as it was: right for the worker's inputs only


@interpreted
def test_a_launch_of_a_kernel_that_is_not_in_the_source_is_refused() -> None:
    tape = _tape([EMPTY, {**LAUNCH, "kernel": "reference_kernel"}], {"y": _ref(1, [100])})
    with pytest.raises(ReplayRefused, match="not a @triton.jit function at the top level"):
        _replay(tape, torch.randn(100))


@pytest.mark.parametrize("value", ["a tensor", "a storage", "a tuple holding a tensor"])
def test_a_launch_that_gives_a_constexpr_a_tensor_is_refused_before_it_compiles(value: str) -> None:
    """A constexpr reaches the kernel body as the object itself: a PyTorch tensor there computes with PyTorch."""
    given = {"a tensor": _ref(0, [100]), "a storage": {"S": "0"}, "a tuple holding a tensor": {"tuple": [64, _ref(0, [100])]}}
    tape = _tape([EMPTY, {**LAUNCH, "kwargs": {"BLOCK": given[value]}}], {"y": _ref(1, [100])})
    with pytest.raises(ReplayRefused, match="to its constexpr parameter `BLOCK`"):
        _replay(tape, torch.randn(100))


@pytest.mark.parametrize("name", ["aten.unfold.__init__", "aten.empty_like.__call__", "aten.empty_like", "aten.empty_like.default.x",
                                  "aten.empty_like.no_such_overload"])
def test_an_op_name_is_an_overload_of_that_op_and_nothing_else(name: str) -> None:
    """The overload part of a recorded op name reached the op's own Python object (a red team re-initialised
    `torch.ops.aten.unfold` as another operator through `aten.unfold.__init__`, in the replayer)."""
    tape = _tape([{**EMPTY, "op": name}, LAUNCH], {"y": _ref(1, [100])})
    if name != "aten.empty_like.no_such_overload":  # well formed, so only the replay can tell
        assert "computed with PyTorch" in tapes.problems(tape, "/nowhere/kernels.py")
    with pytest.raises(ReplayRefused, match="computed with PyTorch|names an op PyTorch does not have"):
        _replay(tape, torch.randn(100))
    assert torch.ops.aten.unfold.default._schema.name == "aten::unfold"


@pytest.mark.parametrize("option", ["ptx_options", "ir_override", "extern_libs"])
def test_a_launch_option_that_names_files_is_refused(option: str) -> None:
    """Options that would have Triton's compilers in the replayer read or write where the submission says."""
    tape = _tape([EMPTY, {**LAUNCH, "kwargs": {"BLOCK": 64, option: "/somewhere"}}], {"y": _ref(1, [100])})
    with pytest.raises(ReplayRefused, match=f"sets `{option}`"):
        _replay(tape, torch.randn(100))
    allowed = _tape([EMPTY, {**LAUNCH, "kwargs": {"BLOCK": 64, "num_warps": 2, option: None}}], {"y": _ref(1, [100])})
    assert _replay(allowed, torch.ones(100))["y"].eq(2).all()


@interpreted
def test_an_interpreted_kernel_touches_only_the_memory_of_its_call() -> None:
    """Under the interpreter a pointer is an address: the replay refuses any load or store outside its storages
    (a kernel could otherwise read or write the replayer itself)."""
    unmasked = SOURCE.replace("_twice(tl.load(x_ptr + offs, mask=mask))", "_twice(tl.load(x_ptr + offs))")
    tape = _tape([EMPTY, LAUNCH], {"y": _ref(1, [100])})
    with pytest.raises(ReplayRefused, match="reached memory outside every tensor of the call"):
        _replay(tape, torch.randn(100), unmasked)  # 128 lanes read from a 100-element input
    assert torch.equal(_replay(tape, torch.ones(100))["y"], 2 * torch.ones(100))  # masked, it runs


@interpreted
def test_in_the_replayer_an_interpreted_launch_reaches_only_the_memory_it_was_bounded_to() -> None:
    """The grader's own launch of a part's kernel once ran with no bounds at all (red team 6 read the replay's output
    from it): in the replayer an access outside every bounded launch is refused, and a bounded launch keeps to it."""
    from autograder import replay as replay_module

    double = kernel_source.build(_read(SOURCE), interpret=True)["double"]
    x, y = torch.ones(100), torch.empty(100)
    install_bounds_checks()
    replay_module._STRICT[0] = True
    try:
        with pytest.raises(Exception) as unbounded:
            double[(2,)](x, y, 100, BLOCK=64)
        assert replay_module.out_of_bounds(unbounded.value) is not None
        with pytest.raises(Exception) as outside, replay_module.bounded([x.untyped_storage()]):
            double[(2,)](x, y, 100, BLOCK=64)  # stores into y, which it was not given
        assert "store reached memory outside every tensor" in str(replay_module.out_of_bounds(outside.value))
        with replay_module.bounded([x.untyped_storage(), y.untyped_storage()]):
            double[(2,)](x, y, 100, BLOCK=64)
        assert torch.equal(y, 2 * x)
    finally:
        replay_module._STRICT[0] = False


def _matrix_tape(x_stride: list[int], out_stride: list[int] | None = None) -> dict:
    """A (10, 12) input x, an empty_like of it, and the launch that doubles it (as 120 flat elements)."""
    x_ref, y_ref = _ref(0, [10, 12], x_stride), _ref(1, [10, 12], out_stride or [12, 1])
    flat = [_ref(0, [120]), _ref(1, [120]), 120]
    tape = _tape([{**EMPTY, "args": [x_ref], "out": y_ref}, {**LAUNCH, "args": flat}], {"y": y_ref})
    tape["inputs"] = {"x": x_ref}
    tape["storages"]["0"]["nbytes"] = tape["storages"]["1"]["nbytes"] = 480
    return tape


@interpreted
def test_an_input_is_bound_only_in_the_layout_it_was_given() -> None:
    """The replay used to copy an input into whatever layout the tape gave it: a tape that said the transpose's input
    lived column-major had the replayer itself write it transposed (a red team: 60/60 with a memcpy kernel)."""
    x = torch.randn(10, 12)
    assert torch.equal(_replay(_matrix_tape([12, 1]), x)["y"], 2 * x)
    with pytest.raises(ReplayRefused, match="lays the input `x` out in memory otherwise than the grader gave it"):
        _replay(_matrix_tape([1, 10]), x)
    moved = _matrix_tape([12, 1])  # the same layout further into a larger storage (a fenced worker's): a move
    moved["inputs"]["x"]["T"][1] = 8
    moved["entries"][1]["args"][0]["T"][1] = 8
    moved["storages"]["0"]["nbytes"] = 512
    assert torch.equal(_replay(moved, x)["y"], 2 * x)


@interpreted
def test_an_op_result_recorded_in_another_layout_is_refused() -> None:
    """What a replayed op returns is moved to its recorded place only in the layout the op made."""
    with pytest.raises(ReplayRefused, match="recorded in another shape or layout than the op makes"):
        _replay(_matrix_tape([12, 1], out_stride=[1, 10]), torch.randn(10, 12))


@interpreted
def test_an_out_overload_of_an_allowed_op_is_refused() -> None:
    """An allowed name says nothing of its overloads: `_unsafe_view.out` copies into the tensor it is given (a red
    team's transpose under a view's name)."""
    unsafe = {"kind": "op", "op": "aten._unsafe_view.out", "args": [_ref(0, [100]), [100]], "kwargs": {"out": _ref(1, [100])},
              "out": _ref(1, [100])}  # fmt: skip
    with pytest.raises(ReplayRefused, match="writes its result into a tensor it is given \\(`out`\\)"):
        _replay(_tape([EMPTY, unsafe, LAUNCH], {"y": _ref(1, [100])}), torch.randn(100))


@interpreted
@pytest.mark.parametrize("entry", [
    {"kind": "op", "op": "aten.copy_.default", "args": [_ref(1, [100])], "kwargs": {"src": _ref(0, [100])},
     "out": _ref(1, [100])},
    {"kind": "op", "op": "aten.clone.default", "args": [], "kwargs": {"self": _ref(0, [100])}, "out": _ref(1, [100])},
])  # fmt: skip
def test_an_argument_taken_by_position_and_recorded_by_name_is_refused(entry: dict) -> None:
    """The recorder passes by position whatever an op's schema takes by position; the write budget reads copies'
    tensors there. Red team 25 moved `copy_`'s source to `src=` and `clone`'s to `self=` in its own record: the
    weights' widening ran in the replay, uncounted (70/70 on quant_matmul)."""
    positional = {**entry, "args": [*entry["args"], *entry["kwargs"].values()], "kwargs": {}}
    tape = _tape([positional, LAUNCH], {"y": _ref(1, [100])})
    x = torch.randn(100)
    assert torch.equal(_replay(tape, x)["y"], 2 * x)  # as recorded: replays
    with pytest.raises(ReplayRefused, match="an argument PyTorch takes by position is recorded by name"):
        _replay(_tape([entry, LAUNCH], {"y": _ref(1, [100])}), x)


@interpreted
def test_an_op_result_recorded_in_another_dtype_is_refused() -> None:
    """Placing an op's result where the record says would convert it, unseen by the write budget (red team 25: an int8
    clone recorded as float32 replayed as the weights widened)."""
    clone = {"kind": "op", "op": "aten.clone.default", "args": [_ref(0, [100])], "kwargs": {},
             "out": {"T": ["1", 0, [100], [1], "int32", "cpu"]}}  # fmt: skip
    with pytest.raises(ReplayRefused, match="recorded in another dtype than the op makes"):
        _replay(_tape([clone, LAUNCH], {"y": _ref(1, [100])}), torch.randn(100))


COPIES_REFUSED = frozenset({"clone", "copy_", "_to_copy", "contiguous"})  # the transpose's refusals


@pytest.mark.parametrize("op", ["aten.fill_.Tensor", "aten.copy_.default", "aten.set_.source_Tensor"])
def test_an_overload_that_copies_is_a_copy_whatever_its_name(op: str) -> None:
    """`fill_` is a constant fill, but `fill_.Tensor` takes its value from a tensor: where copies are refused, so is it
    (red team 6 filled a transpose's output element by element from 0-d views of the input: 60/60, idle kernel)."""
    assert policy.copies_values(op)
    assert not policy.is_allowed(op, COPIES_REFUSED)
    assert policy.is_allowed(op, frozenset()) or op == "aten.copy_.default"


@pytest.mark.parametrize("op", ["aten.fill_.Scalar", "aten.zero_.default", "aten.expand_as.default", "aten.view_as.default",
                                "aten.is_same_size.default", "aten.empty_like.default", "aten.as_strided.default"])
def test_a_fill_view_or_allocation_is_not_a_copy(op: str) -> None:
    assert not policy.copies_values(op)
    assert policy.is_allowed(op, COPIES_REFUSED)


@interpreted
def test_a_fill_from_a_tensor_is_refused_in_the_record_and_the_replay_where_copies_are() -> None:
    scalar = {"T": ["0", 3, [], [], "float32", "cpu"]}  # x[3] as a 0-d view
    fill = {"kind": "op", "op": "aten.fill_.Tensor", "args": [_ref(1, [100]), scalar], "kwargs": {}, "out": _ref(1, [100])}
    tape = _tape([EMPTY, fill, LAUNCH], {"y": _ref(1, [100])})
    assert "computed with PyTorch (aten.fill_)" in tapes.problems(tape, "/nowhere/kernels.py", refused=COPIES_REFUSED)
    with pytest.raises(ReplayRefused, match="computed with PyTorch \\(aten.fill_\\)"):
        _replay(tape, torch.randn(100), refused_ops=COPIES_REFUSED)
    assert torch.equal(_replay(tape, torch.ones(100))["y"], 2 * torch.ones(100))  # allowed where copies are


def test_an_output_is_laid_out_row_major() -> None:
    """The grader reads an output's values in its own layout: a transposed view of a copy read as the transpose."""
    tape = _matrix_tape([12, 1], out_stride=[1, 10])
    assert "`y` is not laid out row-major (shape (10, 12), strides (1, 10))" in tapes.problems(tape, "/nowhere/kernels.py")
    assert tapes.problems(_matrix_tape([12, 1]), "/nowhere/kernels.py") == ""


@pytest.mark.parametrize("name", ["aten.to.dtype", "aten.reshape.default", "aten.contiguous.default", "aten.copy_.Tensor"])
def test_an_op_the_recorder_never_meets_as_one_op_is_refused(name: str) -> None:
    """Composite ops reach the worker's recorder only as what they are made of: a tape naming one was written by
    hand, and its replay would run a copy unjudged (a red team's `aten.to.dtype` of a transposed input)."""
    tape = _tape([{**EMPTY, "op": name}, LAUNCH], {"y": _ref(1, [100])})
    with pytest.raises(ReplayRefused, match="never holds|PyTorch does not have"):
        _replay(tape, torch.randn(100))



# --------------------------------------------------------------------------------------------------
# What the replayer takes from the worker besides the tape: the setup step's tensors
# --------------------------------------------------------------------------------------------------


def _quant_replayer() -> tuple:
    from autograder.replayer import _Replayer
    from conftest import REPO_ROOT

    path = REPO_ROOT / "solutions" / "quant_matmul" / "kernels.py"
    replayer = _Replayer("quant_matmul", str(path), path.read_text(), "cpu")
    w4 = replayer.spec.part("quant_matmul.w4a16")
    return replayer, w4, w4.cases_for("cpu")[0].params


def test_a_setup_step_is_held_to_its_allowance_in_the_replayer() -> None:
    """The worker checks prepare()'s bytes too, but the submission runs there: a red team swapped the spec's limit
    for the call and back, and a plain float32 matmul passed the W4A16 cases. The replayer's check is the one that counts."""
    replayer, w4, params = _quant_replayer()
    inputs = w4.inputs(params, 1, torch.device("cpu"))
    limit = w4.setup_allowance(inputs)
    request = {"tape": {"carried": {}}, "params": params, "seed": 1, "prepared": {"prepared.w": torch.zeros(limit // 4 + 1)}}
    problem, _ = replayer._kept_state(w4, request)
    assert problem.startswith("Your setup step (prepare()) returned") and f"more than the {limit:,} bytes" in problem
    request["prepared"] = {"prepared.w": torch.zeros(limit // 4)}
    assert replayer._kept_state(w4, request) == ("", request["tape"])


def test_setup_tensors_come_only_to_a_part_with_a_setup_step_and_under_names_of_their_own() -> None:
    replayer, w4, params = _quant_replayer()
    w8 = replayer.spec.part("quant_matmul.w8a16")
    inputs = w8.inputs(w8.cases_for("cpu")[0].params, 1, torch.device("cpu"))
    with pytest.raises(ReplayRefused, match="from a setup step that this part does not have"):
        replayer._prepared(w8, {"prepared": {"prepared.w": torch.zeros(4)}}, inputs)
    inputs = w4.inputs(params, 1, torch.device("cpu"))
    with pytest.raises(ReplayRefused, match=r"the names of its inputs \(x\)"):
        replayer._prepared(w4, {"prepared": {"x": torch.zeros(4)}}, inputs)
    assert list(replayer._prepared(w4, {"prepared": {"prepared.w": torch.zeros(4)}}, inputs)) == ["prepared.w"]


def test_setup_tensors_reach_the_replay_in_memory_of_their_own() -> None:
    """A one-element view of a storage that also held the dense weights: its byte count is four, and that is all the
    replay may read (a red team's pickled view once brought the whole storage, which the replay adopted)."""
    replayer, w4, params = _quant_replayer()
    big = torch.arange(1000, dtype=torch.float32)
    inputs = w4.inputs(params, 1, torch.device("cpu"))
    view = replayer._prepared(w4, {"prepared": {"prepared.w": big[:1]}}, inputs)["prepared.w"]
    assert view.untyped_storage().nbytes() == 4 and view.item() == 0.0
    strided = replayer._prepared(w4, {"prepared": {"prepared.w": big.view(10, 100)[:, ::50]}}, inputs)["prepared.w"]
    assert strided.stride() == (100, 50) and torch.equal(strided, big.view(10, 100)[:, ::50])
    assert strided.untyped_storage().nbytes() == 4 * (9 * 100 + 50 + 1)  # its strides' span, the gaps NaN
    assert torch.isnan(torch.empty(0).set_(strided.untyped_storage())).sum() == 951 - 20


NARROWED = """
import os

import torch
from autograder import kernel_check, kernel_source
kernel_source.narrow_code_generator()  # as the replayer's main() does, for its whole process
src = "import triton\\nimport triton.language as tl\\n@triton.jit\\ndef k(x_ptr, N: tl.constexpr):\\n" \\
      "    offs = tl.arange(0, N)\\n    tl.store(x_ptr + offs, tl.sum(tl.load(x_ptr + offs), axis=0) + tl.zeros([N], tl.float32))\\n"
unchecked = src.replace("    offs", "    getattr(tl, 'core')\\n    offs", 1)
for text in (src, unchecked):
    kernels = kernel_source.read(text, "/nowhere/kernels.py")  # not checked: as if text had slipped past the check
    print(repr(kernel_check.CompileCheck(kernel_source.build(kernels, interpret=False)).check("k", [torch.zeros(16)], {"N": 16})[-60:]))
"""


def test_the_replayers_code_generator_cannot_reach_python_objects() -> None:
    """Defence in depth behind the check of a kernel's text: in the replayer, Triton's code generator has no getattr,
    hasattr, isinstance or list, which text that slipped past the check (an annotation, a shifted line) used."""
    import subprocess
    import sys

    from conftest import REPO_ROOT

    run = subprocess.run([sys.executable, "-c", NARROWED], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    lines = run.stdout.splitlines()
    assert run.returncode == 0 and lines[0] == "''", run.stdout + run.stderr
    assert "getattr is not defined" in lines[1], run.stdout


def test_the_checked_timed_calls_are_a_uniform_draw_from_every_call_that_ran() -> None:
    """Checks drawn from the first 20 calls let a counter skip the work of every later call (red team 7)."""
    import random

    from autograder.replayer import CheckedCalls

    runs, calls, k = 20000, 50, 5
    counts = [0] * calls
    for seed in range(runs):
        draw, kept = CheckedCalls(k, random.Random(seed)), set()
        for r in range(calls):
            take, dropped = draw.offer(r)
            kept.discard(dropped)
            if take:
                kept.add(r)
        assert len(kept) == k and kept == set(draw.chosen)
        for r in kept:
            counts[r] += 1
    expected = runs * k / calls  # 2000
    assert all(abs(c - expected) < 0.1 * expected for c in counts), counts
    few = CheckedCalls(k, random.Random(0))
    assert [few.offer(r) for r in range(3)] == [(True, None)] * 3 and few.chosen == [0, 1, 2]  # fewer calls than checks


@interpreted
def test_carried_memory_past_the_allowance_is_replayed_poisoned() -> None:
    """A kernel can branch on what carried memory holds (red team 7 kept the dequantized weights with a flag and a
    sample of the weights, and used them only where both matched), so comparing results with the memory zeroed proved
    nothing: past a kept-input part's allowance, every replay gets carried memory with its nonzero bytes poisoned."""
    import types

    from autograder.replayer import _Replayer

    kernels = _read(SOURCE)
    install_bounds_checks()
    replayer = object.__new__(_Replayer)
    replayer.torch, replayer.device, replayer.interpret, replayer.problem, replayer.check = torch, torch.device("cpu"), True, "", None
    replayer.kernels, replayer.launchable = kernels, kernel_source.build(kernels, interpret=True)
    replayer.spec = types.SimpleNamespace(forbidden_ops=frozenset())
    part = types.SimpleNamespace(setup_allowance=lambda inputs: 64, setup_reads=("x",), setup=None,
                                 inputs=lambda params, seed, device, fixed_seed=None: {"x": torch.ones(100)})  # fmt: skip
    kept = torch.full((400,), 7, dtype=torch.uint8)  # past the allowance of 64 bytes and its 256 of slack
    kept[:40] = 0  # zeros stay zeros (counters a call leaves at zero)
    storages = {"2": {"nbytes": 400, "origin": "carried", "device": "cpu"}}
    unread = _tape([EMPTY, LAUNCH], {"y": _ref(1, [100])}, carried={"2": kept})
    unread["storages"].update(storages)
    problem, tape = replayer._kept_state(part, {"tape": unread, "params": {}, "seed": 1})
    assert problem == "" and torch.equal(tape["carried"]["2"][:40], kept[:40]) and bool(tape["carried"]["2"][40:].eq(0xFF).all())
    read = _tape([EMPTY, {**LAUNCH, "args": [_ref(2, [100]), _ref(1, [100]), 100]}], {"y": _ref(1, [100])}, carried={"2": kept})
    read["storages"].update(storages)
    problem, _ = replayer._kept_state(part, {"tape": read, "params": {}, "seed": 1})
    assert problem.startswith("Your call read 400 bytes of memory kept from before it")


@pytest.mark.skipif(os.environ.get("AUTOGRADER_TEST_DEVICE") != "cuda", reason="on a GPU: AUTOGRADER_TEST_DEVICE=cuda")
def test_what_the_baseline_frees_is_never_handed_to_a_replayed_call() -> None:
    """The caching allocator hands a freed block to the next allocation of its size: without the baseline's pool, the
    block below would come back as the replay's output, holding the baseline's intermediate."""
    from autograder.replayer import baseline_pool

    device = torch.device("cuda")  # no index, as the replayer is given it
    in_baseline_pool = baseline_pool(device)
    with in_baseline_pool():
        freed = torch.full((1 << 20,), 7.0, device=device)
        address = freed.data_ptr()
        del freed
    taken = [torch.empty(1 << 20, device=device) for _ in range(4)]
    assert address not in {t.data_ptr() for t in taken}
    with in_baseline_pool():  # the baseline's next call reuses its own blocks
        assert torch.empty(1 << 20, device=device).data_ptr() == address


def test_on_a_cpu_the_baseline_allocates_as_everything_else() -> None:
    import contextlib

    from autograder.replayer import baseline_pool

    assert baseline_pool(torch.device("cpu")) is contextlib.nullcontext


CONSTANT_SPELLINGS = '''
import math as m
import numpy as np
import triton
import triton.language as tl
from math import factorial, pi, sqrt
from triton.language import constexpr

A = tl.constexpr(sqrt(2.0 / pi))
B = constexpr(m.sqrt(2.0 / m.pi))
C = tl.constexpr(factorial(5))
D = tl.constexpr(np.sqrt(2.0))
E = tl.constexpr(factorial(10**7))


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, D)
'''


def test_constants_imported_by_name_are_read_and_the_others_say_why_not() -> None:
    """`from math import sqrt` and `from triton.language import constexpr` are how many write a kernel's constants (red
    team 21: refused, with a sentence that said the constant was not one); NumPy is not read, and the refusal says so;
    a factorial is refused before it is computed (10**7! takes minutes)."""
    kernels = kernel_source.read(CONSTANT_SPELLINGS, "/nowhere/kernels.py")
    assert kernels.constants["A"].value == pytest.approx(0.7978845608)
    assert kernels.constants["B"].value == kernels.constants["A"].value
    assert kernels.constants["C"].value == 120
    assert set(kernels.unevaluated) == {"D", "E"} and kernels.unevaluated["E"] == "a factorial too large"
    kernel_source.check(kernels)
    refusal = kernels.refused["k"]
    assert "uses `D` (line 18), a top-level value the grader could not evaluate: it uses `np.sqrt`" in refusal


MORE_SPELLINGS = '''
import triton
import triton.language as tl

USE_EXP2 = True
A, B = tl.constexpr(0.5), tl.constexpr(2)
C = D = tl.constexpr(3.0)
E = tl.constexpr(2.0 * 1.4426950408889634 if USE_EXP2 else 2.0)
COEF = (1.0, 0.044715)
F = tl.constexpr(value=COEF[1])
G = tl.constexpr(1.0 > 0.5)


@triton.jit
def helper(x):
    return x


alias = helper


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, A + B + C + D + E + F + G)


@triton.jit
def j(x_ptr):
    tl.store(x_ptr, alias(1.0))
'''


def test_constants_bound_in_other_spellings_are_read_and_an_alias_says_what_to_do() -> None:
    """Chained and unpacked assignments, a conditional, a comparison, a tuple's element and `value=` (red team 22: each
    refused a correct kernel with a sentence saying it used a name that was not a constant)."""
    kernels = kernel_source.read(MORE_SPELLINGS, "/nowhere/kernels.py")
    values = {name: getattr(v, "value", v) for name, v in kernels.constants.items()}
    assert values["A"] == 0.5 and values["B"] == 2 and values["C"] == values["D"] == 3.0
    assert values["E"] == pytest.approx(2.885390081777927) and values["F"] == 0.044715 and values["G"] is True
    kernel_source.check(kernels)
    assert "k" not in kernels.refused
    assert "another name for the @triton.jit function `helper`" in kernels.refused["j"]
    assert "call it by that name" in kernels.refused["j"]
