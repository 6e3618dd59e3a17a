"""`python -m autograder portability`: does every solution kernel fit every GPU architecture the course meets?

For each solution and each GPU of course.device.KNOWN_GPUS, the graded GPU-tier calls (every correctness
case and speed case of the spec) run on tensors of the `meta` device, which have shapes and no data, with
the solution's `device_of` answering that GPU. Each kernel launch is recorded instead of run (an
autotuned kernel records each of its configurations: any of them may win on a GPU). Each distinct launch
(kernel, argument types and specialisations, constexprs, options, architecture) is then compiled with
Triton for that architecture, without a GPU, and its shared memory, registers and local memory are
checked against the architecture's limits (course.device.ARCH_LIMITS).

A GPU without bfloat16 tensor cores has no bfloat16 case to run (the grader reports them as not gradeable
there), and a GPU without TMA must not be handed a tensor descriptor by a kernel that has a pointer path for
such GPUs (flash attention's forward): both are checked too. A kernel that takes descriptors on every GPU (the
tiling TMA bonus) is allowed them there, where Triton turns the descriptors' loads into ordinary loads. On sm_90
a kernel whose tensor-core products ptxas serializes (each waits for the one before: autograder.diagnose's
`serialized_products`) is a problem too: it fits, but it has lost the overlap its pipeline was built for.

Compiling needs Triton's compiler, not its interpreter, so the work runs in a child process started with
TRITON_INTERPRET=0 (course/env.py keeps an explicit 0 on a machine without a GPU).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
ARCHS: tuple[int, ...] = (75, 80, 86, 89, 90, 100, 120)


@dataclass
class Launch:
    """One distinct compilation: what a wrapper launched on one GPU, bound for that GPU's architecture."""

    slug: str
    kernel: str
    arch: int
    gpus: list[str]  # the GPUs whose wrappers chose it
    cases: list[str]  # the first few graded calls that launch it
    key: str
    tma: bool  # a tensor descriptor among the arguments
    num_warps: int
    num_stages: int
    job: Any = field(default=None, repr=False)  # (JITFunction, signature, constexprs, attrs, options): not pickled
    pointer_path: bool = True  # the kernel is launched with pointers somewhere (else it takes descriptors everywhere)


@dataclass
class Compiled:
    slug: str
    kernel: str
    arch: int
    gpus: list[str]
    cases: list[str]
    num_warps: int
    num_stages: int
    tma: bool = False
    shared: int = 0
    registers: int = 0
    spill_bytes: int = 0  # local memory per thread (ptxas puts spills there)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


# --------------------------------------------------------------------------------------------------
# Capture: run the graded calls on meta tensors and record what they launch
# --------------------------------------------------------------------------------------------------


def _load_solution(slug: str) -> ModuleType:
    """solutions/<slug>/kernels.py under its own module name (its kernels compiled, never interpreted)."""
    path = REPO_ROOT / "solutions" / slug / "kernels.py"
    spec = importlib.util.spec_from_file_location(f"_portability_{slug}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _recording(module: ModuleType, device: Any, launches: list) -> Iterator[None]:
    """While open: the module's wrappers see `device`, and kernel launches are appended to `launches`."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    from course.launch import plain_launches
    from course.ops import run_implementations

    def record(self: JITFunction, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> None:
        launches.append((self, args, kwargs))

    def record_each(self: Autotuner, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("grid", None), kwargs.pop("warmup", None)
        for config in self.configs:
            record(self.fn, *args, **{**kwargs, **config.all_kwargs()})

    saved = (JITFunction.run, Autotuner.run, module.__dict__.get("device_of"))
    JITFunction.run, Autotuner.run = record, record_each
    module.device_of = lambda t: device
    try:
        # a course op on meta tensors runs its launcher, not its fake; every launch goes through JITFunction.run
        with run_implementations(), plain_launches():
            yield
    finally:
        JITFunction.run, Autotuner.run = saved[0], saved[1]
        module.device_of = saved[2]


def graded_calls(slug: str, bf16: bool) -> Iterator[tuple[str, Any, Any, dict]]:
    """(name, part, call, params) of every GPU-tier case and speed case of the spec; no bfloat16 ones without bf16."""
    from autograder.specs import load_spec

    spec = load_spec(slug)
    for part in spec.parts:
        for case in part.cases_for("gpu"):
            if bf16 or case.params.get("dtype") != "bfloat16":
                yield f"{part.task} {case.name}", part, part.call, case.params
    for s in spec.speed:
        if bf16 or s.params.get("dtype") != "bfloat16":
            yield f"speed {s.task} {s.name}", spec.part(s.task), s.call or spec.speed_call, s.params


def _bind(jit: Any, args: tuple, kwargs: dict, arch: int) -> tuple[str, tuple]:
    """What Triton would compile for this launch on this architecture: a key and (signature, constexprs, attrs, options)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(GPUTarget("cuda", arch, 32))
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    kwargs = {**kwargs, "debug": False}
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = jit._pack_args(backend, kwargs, bound, specialization, options)
    # The key leaves out the divisibility attributes (which integers are multiples of 16): every graded shape
    # would otherwise be a compilation of its own. They change how wide loads are, not the tiles a launch
    # keeps in shared memory; each group compiles with the most of them (the widest loads, most registers).
    key = repr((jit.fn.__qualname__, signature, sorted(constexprs.items()), sorted(options.__dict__.items()), arch))
    return key, (signature, constexprs, attrs, options)


def _meta_inputs(part: Any, params: dict) -> dict:
    """The case's inputs as meta tensors. A hostile distribution may index by values, which meta tensors do
    not have: its inputs are then made from the plain distribution, which has the same shapes and dtypes."""
    import torch

    from autograder.spec import generator

    try:
        return part.make_inputs(params, generator(0, torch.device("cpu")), torch.device("meta"))
    except (NotImplementedError, RuntimeError):
        plain = {k: v for k, v in params.items() if k != "dist"}
        return part.make_inputs(plain, generator(0, torch.device("cpu")), torch.device("meta"))


def capture(slug: str, gpus: list[Any]) -> list[Launch]:
    """Every distinct compilation the graded calls of one solution make on these GPUs."""
    module = _load_solution(slug)
    found: dict[str, Launch] = {}
    for device in gpus:
        for name, part, call, params in graded_calls(slug, device.bf16_tensor_cores):
            launches: list = []
            inputs = _meta_inputs(part, params)
            with _recording(module, device, launches):
                if part.setup is not None:
                    inputs = {**inputs, **part.setup(module, inputs, params)}
                call(module, inputs, params)
            for jit, args, kwargs in launches:
                key, job = _bind(jit, args, kwargs, device.arch)
                launch = found.get(key)
                if launch is not None and len(job[2]) > len(launch.job[3]):
                    launch.job = (jit, *job)
                if launch is None:
                    signature, _, _, options = job
                    tma = any("tensordesc" in str(t) for t in signature.values())
                    launch = Launch(slug, jit.fn.__name__, device.arch, [], [], key, tma, options.num_warps,
                                    options.num_stages, (jit, *job))  # fmt: skip
                    found[key] = launch
                if device.name not in launch.gpus:
                    launch.gpus.append(device.name)
                if len(launch.cases) < 3 and name not in launch.cases:
                    launch.cases.append(name)
    with_pointers = {launch.kernel for launch in found.values() if not launch.tma}
    for launch in found.values():
        launch.pointer_path = launch.kernel in with_pointers
    return list(found.values())


# --------------------------------------------------------------------------------------------------
# Compile and check
# --------------------------------------------------------------------------------------------------

_JOBS: list[Launch] = []  # filled before the pool forks: its workers find each job's kernel here


def _resource_usage(cubin: bytes) -> tuple[int, int]:
    """(registers per thread, local memory bytes per thread) as cuobjdump reads them from a cubin."""
    from autograder.diagnose import resource_usage

    usage = resource_usage(cubin)
    return usage["REG"], usage.get("LOCAL", 0)


def compile_one(index: int) -> Compiled:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from autograder.diagnose import serialized_products
    from course.device import ARCH_LIMITS, KNOWN_GPUS

    launch = _JOBS[index]
    jit, signature, constexprs, attrs, options = launch.job
    out = Compiled(launch.slug, launch.kernel, launch.arch, launch.gpus, launch.cases, launch.num_warps, launch.num_stages, launch.tma)
    limits = ARCH_LIMITS[launch.arch]
    start = time.perf_counter()
    try:
        kernel = triton.compile(ASTSource(jit, signature, constexprs, attrs), target=GPUTarget("cuda", launch.arch, 32),
                                options=options.__dict__)  # fmt: skip
    except Exception as e:  # noqa: BLE001 - a kernel that does not compile for a target is the finding
        out.problems.append(f"does not compile: {str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__}")
        out.seconds = time.perf_counter() - start
        return out
    out.seconds = time.perf_counter() - start
    out.shared = int(kernel.metadata.shared)
    out.registers, out.spill_bytes = _resource_usage(kernel.asm["cubin"])
    smem = min(KNOWN_GPUS[g].smem_per_block for g in launch.gpus)
    if out.shared > smem:
        out.problems.append(f"shared memory {out.shared} B > {smem} B per block")
    threads = 32 * launch.num_warps
    if threads > limits.threads_per_block:
        out.problems.append(f"{threads} threads > {limits.threads_per_block} per block")
    if out.registers * threads > limits.registers_per_block:
        out.problems.append(f"{out.registers} registers x {threads} threads > {limits.registers_per_block} per block")
    if launch.tma and launch.arch < 90 and launch.pointer_path:
        out.problems.append("a TMA descriptor on a GPU without TMA, where the kernel has a pointer path")
    serialized = serialized_products(kernel.asm["ptx"], launch.arch)
    if serialized:
        out.problems.append(f"ptxas waits for each wgmma product before the next ({serialized})")
    return out


def footprint(launch: Launch) -> int:
    """A proxy for the shared memory a launch may keep: its integer constexprs (tile sizes) multiplied, times
    its pipeline stages and the widest element among its pointers."""
    _, signature, constexprs, _, _ = launch.job
    size = 1
    for value in constexprs.values():
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            size *= value
    widest = max((4 if "32" in t else 8 if "64" in t else 2 for t in map(str, signature.values()) if t.startswith("*")), default=1)
    return size * max(1, launch.num_stages) * widest


def largest(launches: list[Launch]) -> list[Launch]:
    """Per solution, kernel and architecture, the launch with the largest footprint and the one with the most warps."""
    keep: dict[tuple, Launch] = {}
    for launch in launches:
        for what, score in (("tiles", footprint(launch)), ("warps", launch.num_warps)):
            key = (launch.slug, launch.kernel, launch.arch, what)
            best = keep.get(key)
            if best is None or score > (footprint(best) if what == "tiles" else best.num_warps):
                keep[key] = launch
    return list({id(v): v for v in keep.values()}.values())


def run(pairs: list[tuple[str, int]], workers: int, only_largest: bool = False) -> list[Compiled]:
    """Capture each (solution, architecture)'s launches on the known GPUs of the architecture, then compile each
    once (with `only_largest`, only each kernel's largest launches: see `largest`)."""
    from course.device import KNOWN_GPUS

    _JOBS.clear()
    for slug in dict.fromkeys(s for s, _ in pairs):
        archs = {a for s, a in pairs if s == slug}
        found = capture(slug, [d for d in KNOWN_GPUS.values() if d.arch in archs])
        _JOBS.extend(largest(found) if only_largest else found)
    order = sorted(range(len(_JOBS)), key=lambda i: -_JOBS[i].num_warps * _JOBS[i].num_stages)  # long ones first
    if workers <= 1:
        results = {i: compile_one(i) for i in order}
    else:
        import multiprocessing

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = dict(zip(order, pool.map(compile_one, order)))
    return [results[i] for i in range(len(_JOBS))]


def table(results: list[Compiled]) -> str:
    """One row per solution, kernel and architecture: its configurations' largest numbers, and what does not fit."""
    from course.device import KNOWN_GPUS

    groups: dict[tuple[str, str, int], list[Compiled]] = {}
    for r in results:
        groups.setdefault((r.slug, r.kernel, r.arch), []).append(r)
    head = f"{'solution':<15} {'kernel':<30} {'sm':>4} {'configs':>7} {'smem KB':>8} {'limit KB':>8} {'regs':>5} {'local B':>7}  verdict"
    rows = [head, "-" * len(head)]
    for (slug, kernel, arch), rs in sorted(groups.items()):
        limit = min(KNOWN_GPUS[g].smem_per_block for r in rs for g in r.gpus)
        problems = sorted({f"{p} ({', '.join(r.cases[:1])})" for r in rs for p in r.problems})
        rows.append(f"{slug:<15} {kernel:<30} {arch:>4} {len(rs):>7} {max(r.shared for r in rs) / 1024:>8.1f} {limit / 1024:>8.0f} "
                    f"{max(r.registers for r in rs):>5} {max(r.spill_bytes for r in rs):>7}  {'; '.join(problems) or 'fits'}")  # fmt: skip
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """The child process: TRITON_INTERPRET=0 is already in its environment."""
    from autograder.specs import SLUGS

    p = argparse.ArgumentParser(prog="python -m autograder portability")
    p.add_argument("slugs", nargs="*", default=SLUGS)
    p.add_argument("--arch", type=int, action="append", choices=ARCHS, help="only these architectures (default: all)")
    p.add_argument("--pair", action="append", metavar="SLUG:ARCH", help="only these solutions on these architectures (overrides the rest)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--largest", action="store_true", help="only each kernel's largest launches per architecture (quick)")
    p.add_argument("--json", type=Path, help="also write every compilation's numbers here")
    args = p.parse_args(argv)
    start = time.perf_counter()
    pairs = [(s, int(a)) for s, a in (p.split(":") for p in args.pair)] if args.pair else \
        [(s, a) for s in args.slugs for a in (args.arch or ARCHS)]  # fmt: skip
    results = run(pairs, args.workers, args.largest)
    print(table(results))
    bad = [r for r in results if r.problems]
    spills = sum(1 for r in results if r.spill_bytes)
    print(f"\n{len(results)} compilations ({len(pairs)} solution x architecture pairs{', largest launches' if args.largest else ''}) in "
          f"{time.perf_counter() - start:.0f} s: {len(bad)} do not fit, {spills} use local memory (spills).")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 1 if bad else 0


def run_in_child(argv: list[str]) -> int:
    """Run `main` in a fresh process whose Triton compiles instead of interpreting."""
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "autograder.portability", *argv], env=env, cwd=REPO_ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
