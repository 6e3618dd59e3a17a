"""Try every Triton kernel of the course's teaching material in the place of a graded kernel.

A student must not find a graded kernel in what they read. This module collects the functions defined in
a set of sources (the student notebooks, the lectures' code blocks; for the controls, the instructor
notebooks and the solutions) and tries each in a graded place, in this process:

- a `@triton.jit` kernel with as many parameters as a graded kernel (a function of solutions/<slug>/kernels.py
  that holds a solution region) takes that kernel's place: its parameters are renamed, by position, to the
  graded kernel's names (so that the wrapper's keyword launch reaches them), and the solution module is
  loaded with that name bound to it. The other graded kernels stay the solution's, so that a part graded
  on several kernels still tells whether this one would do.
- a plain function that launches one of its source's kernels (a notebook's wrapper) takes the place of a
  public function of the assignment (`gelu`, `flash_attention`, ...), for the parts that call it.

Each part's CPU-tier cases then run, smallest first, until one fails: a candidate passes a part when
every case does. Fresh memory is NaN during the call, as in the grader. Every interpreted launch may load and
store only in the tensors it is given, as in the grader's replay: a kernel without masks fails its case with
OutOfBounds instead of writing past its tensors. Should a kernel still bring the interpreter down,
`python tests/transplant.py` runs the jobs and prints one JSON line per job (and one before it): the caller restarts
it after a crash, from the next job, and counts the crashed one as failed, as the grader would.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import json
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
PREAMBLE = """from __future__ import annotations

import course.env
from course.env import DEVICE
import math
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
"""
# A candidate that computes longer than this on the small cases fails (the grader times out too). CPU seconds,
# not wall-clock: with the tests on two processes a job waits for the CPU, and a wall-clock alarm then fired
# inside jobs that were merely slow, at any bytecode (a lock held), and hung the process once.
JOB_SECONDS = 60
BEGIN = re.compile(r"^\s*### BEGIN SOLUTION\s+(?P<task>[\w.]+)", re.M)


# --------------------------------------------------------------------------------------------------
# Sources and the functions they define
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    kind: str  # "notebook", "lecture" (the student's materials); "instructor", "solution" (the controls)
    path: str  # relative to the repository
    blocks: tuple[str, ...]  # code cells or code blocks, each parsed on its own


def notebook_blocks(path: Path) -> tuple[str, ...]:
    nb = json.loads(path.read_text())
    return tuple("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def markdown_blocks(path: Path) -> tuple[str, ...]:
    return tuple(re.findall(r"^```(?:python|py)\s*\n(.*?)^```", path.read_text(), re.S | re.M))


def student_sources(root: Path = REPO_ROOT) -> list[Source]:
    out = [Source("notebook", str(p.relative_to(root)), notebook_blocks(p)) for p in sorted((root / "notebooks").glob("*.ipynb"))]
    out += [Source("lecture", str(p.relative_to(root)), markdown_blocks(p)) for p in sorted((root / "lectures").glob("*.md"))]
    return out


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def _constant(node: ast.stmt) -> bool:
    """A top-level assignment of a literal (or tl.constexpr of one): safe to carry along with the functions."""
    if not isinstance(node, ast.Assign):
        return False
    value = node.value.args[0] if (isinstance(node.value, ast.Call) and node.value.args
                                   and "constexpr" in ast.unparse(node.value.func)) else node.value
    try:
        ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError):
        return False
    return True


@dataclass
class Defs:
    text: str  # the preamble, the source's constants and every top-level function it defines
    kernels: dict[str, ast.FunctionDef]
    wrappers: dict[str, ast.FunctionDef]  # plain functions that launch one of the kernels, directly or not


def collect(source: Source) -> Defs:
    functions: dict[str, ast.FunctionDef] = {}
    constants: list[str] = []
    for block in source.blocks:
        try:
            tree = ast.parse(block)
        except SyntaxError:  # a lecture's fragment, or pseudo-code
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = node  # a later definition wins, as in the notebook
            elif _constant(node):
                constants.append(ast.unparse(node))
    kernels = {n: f for n, f in functions.items() if _is_jit(f)}
    calls = {n: {c.func.id for c in ast.walk(f) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
             for n, f in functions.items()}  # fmt: skip
    launches = {n: {s.value.id for s in ast.walk(f) if isinstance(s, ast.Subscript) and isinstance(s.value, ast.Name)}
                for n, f in functions.items()}  # fmt: skip
    wrappers = {n for n in functions if n not in kernels and launches[n] & set(kernels)}
    grew = True
    while grew:  # a function that calls a wrapper is a wrapper too
        new = {n for n in functions if n not in kernels and n not in wrappers and calls[n] & wrappers}
        wrappers |= new
        grew = bool(new)
    for n, f in functions.items():
        if n not in kernels:
            f.decorator_list = []  # (functools.cache and the like: the functions run as plain ones)
    text = PREAMBLE + "\n".join(constants) + "\n\n" + "\n\n".join(ast.unparse(f) for f in functions.values()) + "\n"
    return Defs(text, kernels, {n: functions[n] for n in sorted(wrappers)})


# --------------------------------------------------------------------------------------------------
# Graded places
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    slug: str
    name: str  # the graded function
    task: str  # the task of its solution region
    params: tuple[str, ...]


@functools.cache
def targets(slug: str, root: Path = REPO_ROOT) -> list[Target]:
    text = (root / "solutions" / slug / "kernels.py").read_text()
    lines = text.splitlines(keepends=True)
    out = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            found = BEGIN.search("".join(lines[node.lineno - 1:node.end_lineno]))
            if found:
                out.append(Target(slug, node.name, found.group("task"), tuple(a.arg for a in node.args.args)))
    return out


def parts_of(spec: Any, task: str, region_tasks: set[str]) -> list[Any]:
    """The parts a region's kernel serves: the part of that task, and for the one main region, the parts
    that have no region of their own (flash attention's causal, gqa and ragged parts)."""
    main = [t for t in region_tasks if not any(p.bonus for p in spec.parts if p.task == t)]
    return [p for p in spec.parts if p.task == task or (p.task not in region_tasks and main == [task])]


# --------------------------------------------------------------------------------------------------
# Transplanting
# --------------------------------------------------------------------------------------------------


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        if node.arg in self.mapping:
            node.arg = self.mapping[node.arg]
        return node


def renamed_kernel(fn: ast.FunctionDef, params: tuple[str, ...], new_name: str) -> str:
    """The source of fn with its parameters renamed, by position, to `params`, as a @triton.jit `new_name`."""
    tree = ast.parse(ast.unparse(fn)).body[0]
    assert isinstance(tree, ast.FunctionDef)
    own = [a.arg for a in tree.args.args]
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(own)
    mapping = {name: f"_tp_{name}" for name in used if name in params}  # locals that would be captured
    mapping.update(dict(zip(own, params)))
    tree = _Rename(mapping).visit(tree)
    tree.name = new_name
    tree.decorator_list = [ast.parse("triton.jit", mode="eval").body]
    return ast.unparse(tree)


def _load(path: Path, name: str, inject: dict[str, Any] | None = None) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(inject or {})
    sys.modules[name] = module  # Triton resolves a kernel's globals through its module
    spec.loader.exec_module(module)
    return module


def solution_with(target: Target, kernel: Any, workdir: Path, tag: str) -> ModuleType:
    """solutions/<slug>/kernels.py with the graded function `target.name` bound to `kernel`."""
    text = (REPO_ROOT / "solutions" / target.slug / "kernels.py").read_text()
    lines = text.splitlines(keepends=True)
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == target.name)
    first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    lines[first:node.end_lineno] = [f"{target.name} = __transplant__\n"]
    path = workdir / f"solution_{tag}.py"
    path.write_text("".join(lines))
    return _load(path, f"transplant_solution_{tag}", {"__transplant__": kernel})


# --------------------------------------------------------------------------------------------------
# Grading one part in process
# --------------------------------------------------------------------------------------------------

SEED = 20261121


def _size(inputs: dict[str, Any]) -> int:
    return sum(v.numel() for v in inputs.values() if hasattr(v, "numel"))


_CASES: dict[tuple[str, str], list[tuple[Any, dict[str, Any], dict[str, Any]]]] = {}


def _cases(slug: str, part: Any) -> list[tuple[Any, dict[str, Any], dict[str, Any]]]:
    """The part's CPU-tier cases, smallest first, with their inputs and float64 references (made once)."""
    import torch

    from autograder.spec import generator

    key = (slug, part.task)
    if key not in _CASES:
        made = []
        for case in part.cases_for("cpu"):
            inputs = part.make_inputs(case.params, generator(SEED, torch.device("cpu")), torch.device("cpu"))
            made.append((case, inputs, part.reference({k: v.clone() for k, v in inputs.items()}, case.params)))
        _CASES[key] = sorted(made, key=lambda c: _size(c[1]))
    return _CASES[key]


def run_part(module: ModuleType, slug: str, part: Any, used: list[int] | None = None,
             max_cases: int = 0) -> tuple[bool, str]:
    """(True, '') when every CPU-tier case of the part passes (or the max_cases smallest); else (False, what
    failed first)."""
    import torch

    from course.comparison import compare

    for case, made, reference in _cases(slug, part)[:max_cases or None]:
        inputs = {k: v.clone() for k, v in made.items()}
        before = len(used) if used is not None else 0
        set_mode = getattr(torch._C, "_set_deterministic_algorithms", torch.use_deterministic_algorithms)
        set_mode(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True
        try:
            prepared = part.setup(module, inputs, case.params) if part.setup is not None else {}
            outputs = part.call(module, {**inputs, **prepared}, case.params)
        except Exception as exc:  # noqa: BLE001  (a candidate that raises fails the case)
            lines = str(exc).strip().splitlines()
            return False, f"{case.name}: {type(exc).__name__}: {lines[-1][:160] if lines else ''}"
        finally:
            set_mode(False, warn_only=False)
            torch.utils.deterministic.fill_uninitialized_memory = False
        if used is not None and len(used) == before:
            return False, NOT_USED
        for key, ref in reference.items():
            out = outputs.get(key) if isinstance(outputs, dict) else None
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(ref.shape):
                return False, f"{case.name}: `{key}` is not a tensor of shape {tuple(ref.shape)}"
            verdict = compare(key, out, ref, part.tolerance(case.params))
            if not verdict.ok:
                return False, f"{case.name}: {verdict.brief}"
    return True, ""


NOT_USED = "not used by this part"


# --------------------------------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    source_kind: str
    source: str
    candidate: str
    how: str  # "kernel" or "wrapper"
    slug: str
    place: str  # the graded kernel, or the public function, taken over
    max_cases: int = 0  # grade only this many of each part's smallest cases (the controls); 0: all


def jobs(sources: list[Source], slugs: list[str], self_only: bool = False,
         only: set[tuple[str, str]] | None = None, max_cases: int = 0) -> Iterator[tuple[Job, Defs]]:
    """Every (candidate, graded place) pair worth trying. self_only: a solution's kernels in their own
    places only; only: the (source, candidate) pairs to try, for the instructor notebooks' controls."""
    from autograder.specs import load_spec

    all_targets = {slug: targets(slug) for slug in slugs}
    for source in sources:
        defs = collect(source)
        for name, fn in defs.kernels.items():
            if only is not None and (source.path, name) not in only:
                continue
            arity = len(fn.args.args)
            for slug, ts in all_targets.items():
                for t in ts:
                    if len(t.params) == arity and (not self_only or (t.slug in source.path and t.name == name)):
                        yield Job(source.kind, source.path, name, "kernel", slug, t.name, max_cases), defs
        if self_only:
            continue
        for name, fn in defs.wrappers.items():
            if only is not None and (source.path, name) not in only:
                continue
            for slug in slugs:
                for api, signature in load_spec(slug).api.items():
                    call = ast.parse(signature, mode="eval").body
                    if _accepts(fn, len(call.args) + len(call.keywords)):
                        yield Job(source.kind, source.path, name, "wrapper", slug, api, max_cases), defs


def _accepts(fn: ast.FunctionDef, n_args: int) -> bool:
    """Whether fn can be called with n_args positional arguments (the public function's signature)."""
    args = fn.args
    total = len(args.posonlyargs) + len(args.args)
    return args.vararg is not None or total - len(args.defaults) <= n_args <= total


_CANDIDATES: dict[str, ModuleType] = {}  # source -> its functions, loaded once for the wrapper jobs
_SOLUTIONS: dict[str, ModuleType] = {}  # slug -> the solution module the wrappers take a place in


def run_job(job: Job, defs: Defs, workdir: Path, tag: str, scramble: bool = False) -> dict[str, Any]:
    """Load the candidate, put it in its place, and grade the parts it serves. Returns the job's result."""
    from autograder.specs import load_spec

    spec = load_spec(job.slug)
    ts = targets(job.slug)
    region_tasks = {t.task for t in ts}
    results = []
    if job.how == "kernel":
        target = next(t for t in ts if t.name == job.place)
        fn = defs.kernels[job.candidate]
        if scramble:  # the solution controls: rename the parameters away first, so the renaming is exercised
            fn = ast.parse(renamed_kernel(fn, tuple(f"p{i}" for i in range(len(fn.args.args))), fn.name)).body[0]
        text = defs.text + "\n\n" + renamed_kernel(fn, target.params, "__transplant__") + "\n"
        path = workdir / f"candidate_{tag}.py"
        path.write_text(text)
        candidate = _load(path, f"transplant_candidate_{tag}").__transplant__
        module = solution_with(target, candidate, workdir, tag)
        for part in parts_of(spec, target.task, region_tasks):
            ok, why = run_part(module, job.slug, part, max_cases=job.max_cases)
            results.append({"part": part.task, "passed": ok, "why": why})
    else:
        if job.source not in _CANDIDATES:
            path = workdir / f"candidate_{tag}.py"
            path.write_text(defs.text)
            _CANDIDATES[job.source] = _load(path, f"transplant_candidate_{tag}")
        wrapper = getattr(_CANDIDATES[job.source], job.candidate)
        if job.slug not in _SOLUTIONS:
            _SOLUTIONS[job.slug] = _load(REPO_ROOT / "solutions" / job.slug / "kernels.py", f"transplant_solution_{job.slug}")
        module = _SOLUTIONS[job.slug]
        saved = {name: module.__dict__.get(name) for name in (job.place, "prepare")}
        module.__dict__.pop("prepare", None)  # the candidate has no offline step of its own
        used: list[int] = []

        def shim(*args: Any, **kwargs: Any) -> Any:
            used.append(1)
            return wrapper(*args, **kwargs)

        setattr(module, job.place, shim)
        try:
            for part in spec.parts:
                ok, why = run_part(module, job.slug, part, used, job.max_cases)
                if why != NOT_USED:
                    results.append({"part": part.task, "passed": ok, "why": why})
        finally:
            for name, value in saved.items():
                if value is not None:
                    setattr(module, name, value)
    return {**asdict(job), "parts": results, "passed": [r["part"] for r in results if r["passed"]]}


class _TimedOut(BaseException):
    pass


def bound_every_launch() -> None:
    """Every interpreted launch in this process may touch only the storages of its own tensor arguments (and of the
    tensors its tensor descriptors describe): an unmasked store past a tensor's end raises OutOfBounds, which fails
    the case, where it once corrupted the heap and left the interpreter spinning for minutes."""
    import torch
    from triton.runtime import interpreter

    from autograder.replay import bounded, install_bounds_checks

    install_bounds_checks()
    executor = interpreter.GridExecutor
    if getattr(executor, "_transplant_bounded", False):
        return
    launch = executor.__call__

    def storages(values: Iterable[Any]) -> Iterator[Any]:
        for v in values:
            if isinstance(v, tuple):
                yield from storages(v)
            elif isinstance(v, torch.Tensor):
                yield v.untyped_storage()
            elif isinstance(getattr(v, "base", None), torch.Tensor):  # a TensorDescriptor
                yield v.base.untyped_storage()

    def bounded_launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        with bounded(list(storages([*args, *kwargs.values()]))):
            return launch(self, *args, **kwargs)

    executor.__call__ = bounded_launch
    executor._transplant_bounded = True


CONTROL_CASES = 1  # the controls show that the transplant can pass; the grading tests grade the whole parts


def all_jobs(sets: list[str], only: set[tuple[str, str]]) -> Iterator[tuple[Job, Defs]]:
    from autograder.specs import SLUGS

    if "student" in sets:
        yield from jobs(student_sources(), SLUGS)
    if "solution" in sets:
        sources = [Source("solution", f"solutions/{s}/kernels.py", ((REPO_ROOT / "solutions" / s / "kernels.py").read_text(),))
                   for s in SLUGS]  # fmt: skip
        yield from jobs(sources, SLUGS, self_only=True, max_cases=CONTROL_CASES)
    if "instructor" in sets:
        paths = sorted({path for path, _ in only})
        sources = [Source("instructor", path, notebook_blocks(REPO_ROOT / path)) for path in paths]
        yield from jobs(sources, SLUGS, only=only, max_cases=CONTROL_CASES)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", default="student", help="comma-separated: student, solution (controls), instructor (controls)")
    p.add_argument("--only", default="", help="instructor: the path:candidate pairs to try, comma-separated")
    p.add_argument("--skip", type=int, default=0, help="start at this job (after a crash)")
    p.add_argument("--stop", type=int, default=1 << 30, help="stop before this job")
    args = p.parse_args(argv)
    os.environ.setdefault("TRITON_INTERPRET", "1")
    sys.path.insert(0, str(REPO_ROOT))
    import warnings

    warnings.filterwarnings("ignore")  # candidates overflow exp on purpose, and the interpreter warns
    only = {tuple(x.split(":")) for x in args.only.split(",") if x}

    def alarm(signum: int, frame: Any) -> None:
        raise _TimedOut(f"computed past {JOB_SECONDS} s")

    signal.signal(signal.SIGPROF, alarm)
    bound_every_launch()
    with tempfile.TemporaryDirectory() as tmp:
        for i, (job, defs) in enumerate(all_jobs(args.set.split(","), only)):
            if i < args.skip:
                continue
            if i >= args.stop:
                break
            print(json.dumps({"start": i, **asdict(job)}), flush=True)
            t0 = time.perf_counter()
            signal.setitimer(signal.ITIMER_PROF, JOB_SECONDS)  # the process's CPU time, all threads
            try:
                result = run_job(job, defs, Path(tmp), str(i), scramble=job.source_kind == "solution")
            except (Exception, _TimedOut) as exc:  # noqa: BLE001  (a candidate that cannot even load fails everywhere)
                result = {**asdict(job), "parts": [], "passed": [], "error": f"{type(exc).__name__}: {exc}"[:300]}
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            result["seconds"] = round(time.perf_counter() - t0, 3)
            print(json.dumps({"job": i, **result}), flush=True)
    print(json.dumps({"done": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
