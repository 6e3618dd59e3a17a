"""`python -m autograder new SLUG`: a new assignment's files, as a tiny but complete working example.

The example is "scale and shift", y = x * scale + shift over the last dimension: one elementwise kernel
with a graded region, its launch settings, a spec, a handout, a wrong submission, a grading test, and a
notebook and lecture to write. Each file has the shape docs/adding-an-assignment.md describes; replace the
operation with yours, file by file, keeping the shapes. The released stub scores 0 and the solution full
points on the CPU tier from the start (tests/test_scaffold.py grades them in a copy of the repo).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from string import Template

from autograder.release import release

REPO_ROOT = Path(__file__).resolve().parent.parent
SLUG = re.compile(r"^[a-z][a-z0-9_]*$")
SMALL = 1 << 20

KERNELS = Template('''"""Assignment $nn, $slug: scale and shift over the last dimension, as one Triton kernel.

    y[..., j] = x[..., j] * scale[j] + shift[j]        scale, shift: (N,) with N = x.shape[-1]

The handout is README.md beside this file. Fill in the region marked TODO; keep the signature and the
launch wrapper as they are: the grader calls `scale_shift(x, scale, shift)`.
Grade yourself with `python -m autograder grade $slug`.
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.configs import ConfigTable, SearchSpace, ceil_bucket, grid
from course.device import Device, device_of
from course.launch import cdiv, launch
from course.ops import OpLibrary
from course.validate import check_same, check_tensor

# --------------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------------


@triton.jit
def _scale_shift_kernel(
    x_ptr,  # (n_elements,) input: x flattened, rows of n_cols elements
    scale_ptr,  # (n_cols,)
    shift_ptr,  # (n_cols,)
    y_ptr,  # (n_elements,) output, x's dtype
    n_elements,
    n_cols,
    BLOCK: tl.constexpr,  # elements per program (a power of two)
):
    """Program p computes elements [p*BLOCK, (p+1)*BLOCK); float32 inside, rounded once on the store."""
    ### BEGIN SOLUTION $slug.forward
    #> Offsets p*BLOCK + arange(BLOCK), in int64 (n_elements can pass 2**31), masked past n_elements; the
    #> column of element i is i % n_cols. Load x, scale and shift as float32 and store x * scale + shift
    #> in y's dtype (y_ptr.dtype.element_ty): one rounding, at the very end.
    #> More, one step at a time: python -m autograder hint $slug.forward
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements  # the last block runs past the end unless n_elements is a multiple of BLOCK
    cols = offsets % n_cols
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    shift = tl.load(shift_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offsets, (x * scale + shift).to(y_ptr.dtype.element_ty), mask=mask)
    ### END SOLUTION


# --------------------------------------------------------------------------------------------------
# Configuration: launch settings per GPU and size, from configs.json
# --------------------------------------------------------------------------------------------------

# solutions/$slug/configs.json: "forward" by the number of elements. `python -m autograder tune $slug`
# measures an entry for the GPU it runs on, from the search space below.
CONFIGS = ConfigTable.beside(__file__, "$slug")
SMALL = 1 << 20


@CONFIGS.cached  # every launch asks: worked out once per (device, n_elements)
def forward_config(device: Device, n_elements: int) -> tuple[int, int]:
    """(BLOCK, num_warps) of the kernel over n_elements."""
    s = CONFIGS.pick(device, "forward", ceil_bucket(n_elements, (SMALL,), "elements", f"elements>{SMALL}"))
    return s["block"], s["num_warps"]


SEARCH_SPACE = [
    SearchSpace("forward", "$slug.forward",
                {f"elements<={SMALL}": [{"shape": [16, 4096], "dtype": "bfloat16"}],
                 f"elements>{SMALL}": [{"shape": [8192, 8192], "dtype": "bfloat16"}]},
                grid(block=[512, 1024, 2048, 4096], num_warps=[2, 4, 8])),
]  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Launchers: inputs already checked, settings from the configuration
# --------------------------------------------------------------------------------------------------


def scale_shift_forward(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Launch the kernel over every element of x. Returns a new tensor shaped like x."""
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:  # pragma: no cover - an empty input: no graded case has one
        return y
    block, num_warps = forward_config(device_of(x), n)
    launch(_scale_shift_kernel, (cdiv(n, block),), x, scale, shift, y, n, x.shape[-1], BLOCK=block, num_warps=num_warps)
    return y


# --------------------------------------------------------------------------------------------------
# Custom ops: the launchers as PyTorch operators (course/ops.py), so torch.compile and CUDA graphs take them whole
# --------------------------------------------------------------------------------------------------


OPS = OpLibrary(__file__)


def _scale_shift_fake(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(x)


@OPS.op("$slug", "(Tensor x, Tensor scale, Tensor shift) -> Tensor", _scale_shift_fake)
def scale_shift_op(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    return scale_shift_forward(x, scale, shift)


# --------------------------------------------------------------------------------------------------
# Module: the public API
# --------------------------------------------------------------------------------------------------


def scale_shift(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """x * scale + shift over the last dimension.

    x: (..., N) float32, float16 or bfloat16, contiguous. scale, shift: (N,), x's dtype and device.
    Returns a new tensor shaped like x, in x's dtype.
    """
    check_tensor("scale_shift", "x", x, min_ndim=1)
    check_tensor("scale_shift", "scale", scale, ndim=1)
    check_tensor("scale_shift", "shift", shift, ndim=1)
    check_same("scale_shift", "dtype", x=x, scale=scale, shift=shift)
    check_same("scale_shift", "device", x=x, scale=scale, shift=shift)
    for name, t in (("scale", scale), ("shift", shift)):
        if t.shape[0] != x.shape[-1]:
            raise ValueError(f"scale_shift: `{name}` must have x.shape[-1] = {x.shape[-1]} elements, got {t.shape[0]}.")
    return scale_shift_op(x, scale, shift)
''')

SPEC = Template('''"""Grading spec for assignment $nn, $slug: scale_shift(x, scale, shift) = x * scale + shift, last dimension."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType

import torch

from autograder.spec import COPY, DTYPES, Assignment, BenchCase, Case, Params, Part, SpeedCase, Tensors, Tolerance

# --------------------------------------------------------------------------------------------------
# Inputs, the float64 reference (in the grader's process) and the PyTorch baseline (the submission's dtype).
# --------------------------------------------------------------------------------------------------


def make_inputs(params: Params, g: torch.Generator, device: torch.device) -> Tensors:
    shape, dtype = tuple(params["shape"]), DTYPES[params["dtype"]]
    x = torch.randn(shape, generator=g, device=device)  # (..., N)
    scale = torch.randn(shape[-1], generator=g, device=device) * 0.5 + 1.0  # (N,)
    shift = torch.randn(shape[-1], generator=g, device=device)  # (N,): as large as x, so a lost shift shows
    return {"x": x.to(dtype), "scale": scale.to(dtype), "shift": shift.to(dtype)}


def reference(inputs: Tensors, params: Params) -> Tensors:
    return {"y": inputs["x"].double() * inputs["scale"].double() + inputs["shift"].double()}


def eager_baseline(inputs: Tensors, params: Params) -> torch.Tensor:
    """Two kernels, as PyTorch code writes it: the product goes to memory and comes back for the sum."""
    return inputs["x"] * inputs["scale"] + inputs["shift"]


# --------------------------------------------------------------------------------------------------
# Calls on the submission (run in the worker process).
# --------------------------------------------------------------------------------------------------


def call(module: ModuleType, inputs: Tensors, params: Params) -> Tensors:
    return {"y": module.scale_shift(inputs["x"], inputs["scale"], inputs["shift"])}


def speed_call(module: ModuleType, inputs: Tensors, params: Params) -> torch.Tensor:
    return module.scale_shift(inputs["x"], inputs["scale"], inputs["shift"])


def bytes_moved(params: Params) -> int:
    """Read x, scale and shift, write y, each once."""
    return (2 * math.prod(params["shape"]) + 2 * params["shape"][-1]) * DTYPES[params["dtype"]].itemsize


# --------------------------------------------------------------------------------------------------
# Cases and rubric.
# --------------------------------------------------------------------------------------------------

# float32 arithmetic is within a few 2^-24 of each term; the result is then rounded once to its dtype,
# at most u = 2^-11 (float16) or 2^-8 (bfloat16) of it: each 16-bit rtol is 2u. A product rounded to 16
# bits before the sum costs u of the product, more than that where the sum cancels.
TOLERANCES = {
    "float32": Tolerance(rtol=1e-6, atol=1e-6),
    "float16": Tolerance(rtol=1e-3, atol=1e-5),
    "bfloat16": Tolerance(rtol=8e-3, atol=1e-5),
}
# Element counts that are neither powers of two nor multiples of any block, and rows of several lengths.
CPU_CASES = [{"shape": [1]}, {"shape": [3, 100]}, {"shape": [2, 5, 129]}, {"shape": [7, 1000]}, {"shape": [4097]},
             {"shape": [3, 20001]}]  # fmt: skip
GPU_CASES = [{"shape": [4096, 4096]}, {"shape": [2, 1000, 5120]}, {"shape": [16, 14336]}, {"shape": [4097]}]


def _cases(cpu: list[Params], gpu: list[Params]) -> list[Case]:
    cases = [Case({**p, "dtype": "float32"}, "cpu") for p in cpu]
    cases += [Case({**p, "dtype": d}, "gpu") for d in ("float32", "float16", "bfloat16") for p in gpu]
    return cases


TASK = "$slug.forward"
ASSIGNMENT = Assignment(
    slug="$slug",
    title="$nn Scale and shift",
    api={"scale_shift": "scale_shift(x, scale, shift)"},
    parts=[Part(TASK, "forward kernel", 60, make_inputs, call, reference, _cases(CPU_CASES, GPU_CASES), TOLERANCES)],
    # One fused pass reads x once and writes once: memory-bound, scored on the copy bandwidth (full at 80%, none at 20%).
    speed=[SpeedCase(TASK, {"shape": [8192, 8192], "dtype": "bfloat16"}, 10, 0.8, bytes_moved, zero_at=0.2, measure=COPY)],
    baseline=eager_baseline,
    speed_call=speed_call,
)


# --------------------------------------------------------------------------------------------------
# Benchmarks (python -m autograder bench $slug): the solution against eager PyTorch and torch.compile.
# --------------------------------------------------------------------------------------------------

BENCH_SHAPES = [[16, 4096], [4096, 4096], [8192, 8192], [16384, 8192]]


def bench_suite(module: ModuleType, quick: bool = False) -> list[BenchCase]:
    fns: dict[str, Callable] = {
        "solution": lambda inputs, params: speed_call(module, inputs, params),
        "eager": eager_baseline,
        "torch.compile": torch.compile(eager_baseline, dynamic=False),
    }
    suite = []
    for shape in BENCH_SHAPES[1:3] if quick else BENCH_SHAPES:
        params = {"shape": shape, "dtype": "bfloat16"}
        impls = {k: (lambda inputs, f=f, params=params: (lambda: f(inputs, params))) for k, f in fns.items()}
        suite.append(BenchCase("forward", params, make_inputs, impls, bytes_moved(params)))
    return suite
''')

WRONG = Template('''"""Wrong: x * scale without the shift."""

import course.env  # noqa: F401
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, scale_ptr, y_ptr, n, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(scale_ptr + offs % n_cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (x * s).to(y_ptr.dtype.element_ty), mask=mask)  # BUG: no shift


def scale_shift(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    _kernel[(triton.cdiv(n, 256),)](x, scale, y, n, x.shape[-1], BLOCK=256)
    return y
''')

GRADING_TEST = Template('''"""Grading the $slug assignment on the CPU tier: the solution scores full points, the stub none, and a
kernel that forgets the shift fails every case."""

from __future__ import annotations

import pytest

from autograder.grade import grade_assignment
from conftest import REPO_ROOT, SEED, SUBMISSIONS


def test_solution_stub_and_a_wrong_submission() -> None:
    solution = grade_assignment("$slug", REPO_ROOT / "solutions" / "$slug" / "kernels.py", "cpu", seed=SEED, timeout=60.0)
    assert solution.score(False) == pytest.approx(solution.max_score(False)) and solution.max_score(False) > 0
    stub = grade_assignment("$slug", REPO_ROOT / "assignments" / "$slug" / "kernels.py", "cpu", seed=SEED, timeout=60.0)
    assert stub.score(False) == 0
    wrong = grade_assignment("$slug", SUBMISSIONS / "$slug" / "wrong_no_shift.py", "cpu", seed=SEED, timeout=60.0)
    assert all(c.status == "failed" for c in wrong.cases if c.kind == "correctness")
''')

HANDOUT = Template('''# Assignment $nn: $slug (scale and shift)

You write the Triton kernel behind `scale_shift(x, scale, shift)`. The notebook `notebooks/${nn}_$slug.ipynb`
builds it up; the lecture notes are `lectures/${nn}_$slug.md`. This handout is the contract: what the grader
calls, on which shapes, with what tolerance, and how many points each part is worth.

## 1. What to build

```python
scale_shift(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor
```

    y[..., j] = x[..., j] * scale[j] + shift[j]

- `x`: any shape with at least one dimension, `float32`, `float16` or `bfloat16`, contiguous; `scale` and
  `shift`: `(N,)` with `N = x.shape[-1]`, the same dtype and device.
- Returns a new tensor shaped like `x`, in its dtype, computed in float32 and rounded once.

## 2. Tasks

| task ID | what you write | points |
|---|---|---|
| `$slug.forward` | the body of `_scale_shift_kernel` | 60 correctness + 10 speed (GPU) |

The wrapper flattens `x`: program `p` owns elements `p*BLOCK` to `p*BLOCK + BLOCK - 1`, masked past the end;
element `i` is in column `i % N`. What the given code already does: `scale_shift_forward` allocates `y`,
returns at once for an empty input, reads `(BLOCK, num_warps)` for your GPU from `configs.json`
(`forward_config`) and launches `cdiv(n, BLOCK)` programs. Your kernel must be correct for any `BLOCK`.

## 3. Shapes and dtypes graded

Fresh random inputs on every run (`x` and `shift` standard normal, `scale` around 1).
**CPU tier** (float32): (1); (3, 100); (2, 5, 129); (7, 1000); (4097); (3, 20001).
**GPU tier** (float32, float16, bfloat16): (4096, 4096); (2, 1000, 5120); (16, 14336); (4097).

## 4. Tolerances

`|y - ref| <= atol * mean|ref| + rtol * |ref|`, with the float64 reference computed from your inputs:
float32 rtol 1e-6, float16 1e-3, bfloat16 8e-3 (twice the rounding of one result), atol 1e-6 or 1e-5.

## 5. Speed (GPU)

At (8192, 8192) bf16, against `x * scale + shift` in eager PyTorch (two kernels): full points at 1.5x, none
at 1x or below.

## 6. Hints

- Compute in float32: `.to(tl.float32)` after each load, one `.to(y_ptr.dtype.element_ty)` before the store.
- The masked lanes of the last block must neither load nor store.
''')

LECTURE = Template('''# $nn · $slug

Notebook: `notebooks/${nn}_$slug.ipynb`. Assignment: `assignments/$slug/` (task `$slug.forward`).

(Write the lecture: what the operation is and where it sits in a model; the bytes and FLOPs it must move;
what bounds it; the kernel, step by step; the measured numbers, with the file they come from.)
''')


HINTS = Template('''# Hint ladders for `python -m autograder hint <task> [--level N]`: level 1 is the gentlest, each level says
# more. The release writes them to assignments/$slug/hints.b64; every level a student asks for is recorded.

["$slug.forward"]
levels = [
\'\'\'One program per BLOCK elements: offsets = program_id(0).to(tl.int64) * BLOCK + arange(BLOCK), masked at n.\'\'\',
\'\'\'Load x, scale and shift with the same mask (scale and shift at offsets % n_cols), compute x * scale + shift in
float32, and store it rounded once to the output's dtype.\'\'\',
]
''')


def notebook(nn: str, slug: str) -> str:
    """A notebook that runs top to bottom on a CPU: the operation in PyTorch, then the student's kernel."""
    cells = [
        ("markdown", f"# {nn} · {slug}: scale and shift\n\n(Write the module: the idea, step by step.) The assignment is "
                     f"`assignments/{slug}/`; its handout `assignments/{slug}/README.md`."),
        ("code", "import course.env  # noqa: F401  (the CPU interpreter when there is no GPU)\nimport torch\n\n"
                 "from course.env import DEVICE, describe\nfrom course.loader import load_kernels\n\nprint(describe())"),
        ("markdown", "## 1. The operation in PyTorch"),
        ("code", "g = torch.Generator().manual_seed(0)\nx = torch.randn(4, 100, generator=g).to(DEVICE)\n"
                 "scale, shift = torch.randn(100, generator=g).to(DEVICE), torch.randn(100, generator=g).to(DEVICE)\n"
                 "y = x * scale + shift\nprint(tuple(y.shape))"),
        ("markdown", "(Exercises: at least two, each followed by its check, none of them the graded kernel. These two are "
                     "placeholders to replace.) **Exercise 1.** The operation in PyTorch, broadcasting over the rows."),
        ("code", "def scale_shift_rows(x, scale, shift):\n"
                 f"    ### BEGIN SOLUTION ex{nn}.eager\n"
                 "    #> x (..., C); scale and shift (C,), broadcast over the rows.\n"
                 "    return x * scale + shift\n"
                 "    ### END SOLUTION"),
        ("code", "from course.exercises import case, check as check_exercise\n\n"
                 f"check_exercise(\"ex{nn}.eager\", scale_shift_rows, lambda x, s, b: x * s + b,\n"
                 "               [case(torch.randn(r, c), torch.randn(c), torch.randn(c)) for r, c in [(1, 1), (3, 100), (5, 129)]])"),
        ("markdown", "**Exercise 2.** The least traffic the operation needs: x read and y written once, scale and shift read once."),
        ("code", "def bytes_moved(n_rows, n_cols, element_size):\n"
                 f"    ### BEGIN SOLUTION ex{nn}.bytes\n"
                 "    #> Count the elements read and written, times their size.\n"
                 "    return (2 * n_rows * n_cols + 2 * n_cols) * element_size\n"
                 "    ### END SOLUTION"),
        ("code", f"check_exercise(\"ex{nn}.bytes\", bytes_moved, lambda r, c, e: (2 * r * c + 2 * c) * e,\n"
                 "               [case(r, c, e) for r, c, e in [(1, 1, 4), (4096, 4096, 2), (3, 100, 4)]])"),
        ("markdown", f"## 2. Your kernel\n\nFill in the region for task `{slug}.forward` in `assignments/{slug}/kernels.py`, then re-run "
                     f"this cell. Grade yourself with `python -m autograder grade {slug}`."),
        ("code", f"try:\n    mine = load_kernels(\"{slug}\").scale_shift(x, scale, shift)\n"
                 "    print(\"max |error|:\", (mine - y).abs().max().item())\n"
                 "except Exception as err:  # the interpreter wraps the stub's NotImplementedError in an error of its own\n"
                 f"    unfilled = \"NotImplementedError\" in f\"{{err!r}} {{err.__cause__!r}}\"\n"
                 f"    print(\"Next: fill in {slug}.forward in assignments/{slug}/kernels.py.\" if unfilled else repr(err))"),
    ]  # fmt: skip
    body = {
        "cells": [{"cell_type": kind, "id": f"{slug}-{i}", "metadata": {}, "source": text.splitlines(keepends=True),
                   **({"execution_count": None, "outputs": []} if kind == "code" else {})}
                  for i, (kind, text) in enumerate(cells)],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }  # fmt: skip
    return json.dumps(body, indent=1, ensure_ascii=False) + "\n"


def table(slug: str) -> str:
    from course.configs import dump_table

    bucket = {f"elements<={SMALL}": {"block": 1024, "num_warps": 4}, f"elements>{SMALL}": {"block": 2048, "num_warps": 8}}
    data = {
        "about": f"Launch settings of solutions/{slug}/kernels.py: GPU name -> kernel -> shape bucket -> settings. Read by "
                 f"course/configs.py; `python -m autograder tune {slug}` measures an entry for the GPU it runs on.",
        "reference": "any GPU",
        "gpus": {
            "any GPU": {"meta": {"note": f"a starting point, not measured: run `python -m autograder tune {slug}` on a GPU"},
                        "forward": bucket},
            "interpreter": {"meta": {"note": "Triton's CPU interpreter: small blocks, so that small cases span several programs"},
                            "forward": {k: {"block": 256, "num_warps": 4} for k in bucket}},
        },
    }  # fmt: skip
    return dump_table(data)


def next_number(root: Path) -> str:
    numbers = [int(p.name[:2]) for p in (root / "solutions" / "notebooks").glob("[0-9][0-9]_*.ipynb")]
    return f"{max(numbers, default=0) + 1:02d}"


def adaptor_line(slug: str) -> str:
    """The line tests/test_integrity.py's ADAPTORS needs for the cheat suite to cover the new assignment."""
    return (f'Adaptor("{slug}", "(3x100) float32", {{"shape": [4, 256], "dtype": "float32"}},\n'
            f'        "{{\'scale_shift\': lambda x, scale, shift: x * scale + shift}}"),')  # fmt: skip


def scaffold(slug: str, root: Path = REPO_ROOT) -> list[Path]:
    """Write the new assignment's files under root and release its stub. Returns the files written."""
    if not SLUG.match(slug):
        raise ValueError(f"`{slug}` cannot be a slug: use lower-case letters, digits and underscores, starting with a letter.")
    nn = next_number(root)
    files = {
        root / "solutions" / slug / "kernels.py": KERNELS.substitute(slug=slug, nn=nn),
        root / "solutions" / slug / "configs.json": table(slug),
        root / "solutions" / slug / "README.md": HANDOUT.substitute(slug=slug, nn=nn),
        root / "autograder" / "specs" / f"{slug}.py": SPEC.substitute(slug=slug, nn=nn),
        root / "tests" / "submissions" / slug / "wrong_no_shift.py": WRONG.substitute(),
        root / "tests" / f"test_grading_{slug}.py": GRADING_TEST.substitute(slug=slug),
        root / "solutions" / slug / "hints.toml": HINTS.substitute(slug=slug),
        root / "solutions" / "notebooks" / f"{nn}_{slug}.ipynb": notebook(nn, slug),  # released to notebooks/
        root / "lectures" / f"{nn}_{slug}.md": LECTURE.substitute(slug=slug, nn=nn),
    }
    taken = [p for p in files if p.exists()] + ([root / "assignments" / slug] if (root / "assignments" / slug).exists() else [])
    if taken:
        raise ValueError(f"`{slug}` is taken: {', '.join(str(p.relative_to(root)) for p in taken)} already exist(s).")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    release([slug], root=root)
    return list(files) + sorted((root / "assignments" / slug).iterdir())


def custom_ops_line(slug: str) -> str:
    """The line tests/test_custom_ops.py's CASES needs for the new assignment's op to be opchecked."""
    return f'("{slug}", "scale_shift_op", lambda: (_randn(3, 33), _randn(33), _randn(33))),'


def next_steps(slug: str) -> str:
    return "\n".join([
        f"Next, to make {slug} a course assignment (docs/adding-an-assignment.md says why each):",
        f"  1. add \"{slug}\" to SYLLABUS in autograder/specs/__init__.py, at its place in the course;",
        "  2. add this line to ADAPTORS in tests/test_integrity.py, so the cheat suite covers it:",
        "         " + adaptor_line(slug).replace("\n", "\n         "),
        "  3. add this line to CASES in tests/test_custom_ops.py, so its op is opchecked:",
        "         " + custom_ops_line(slug),
        "     and its row to the README's syllabus table;",
        f"  4. replace scale-and-shift with your operation, file by file, then `python -m autograder release {slug}`,",
        f"     `python -m pytest tests/test_grading_{slug}.py tests/test_layout.py tests/test_configs.py tests/test_release.py`,",
        f"     and on a GPU `python -m autograder tune {slug}` for its configs.json;",
        "  5. fill in the lists kept by hand and what the other tests wait for (the guide's table: portability,",
        "     mutants, the notebook's exercises, a committed GPU grade).",
    ])  # fmt: skip
