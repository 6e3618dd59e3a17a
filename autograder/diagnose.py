"""Why is my kernel slow: what a compiled kernel says about itself, read without a profiler.

For each kernel a timed call launched: registers per thread, registers spilled to local memory, shared
memory per program, the occupancy those allow on one SM (course/device.py's SM_LIMITS), and the number of
programs against the number of SMs (waves, and the idle share of the last one). Beside the time's place
on the roofline, which the speed verdict already knows, that is usually enough to say which ceiling a
slow kernel hits; when one is obvious, one sentence says what to change.

The facts come from a compiled kernel: on a GPU, Triton's `CompiledKernel` after its launch (`n_regs`,
`n_spills`, `metadata.shared`); without one, the cubin Triton compiled for a target, read with the
`cuobjdump` Triton ships (`facts_from_cubin`), which is how this module is tested on a CPU. On sm_90 the PTX
also goes through ptxas once more, for the note Triton does not print when ptxas serializes the kernel's
tensor-core products (`serialized_products`).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from typing import Any

import torch

from course.device import Device, SmLimits, cuda_device, sm_limits

WARP = 32


@dataclass(frozen=True)
class KernelFacts:
    """One launch of one compiled kernel, as plain data (it travels from the replayer to the grader)."""

    name: str
    grid: tuple[int, ...]
    num_warps: int
    registers: int  # per thread
    spilled: int  # registers per thread kept in local memory instead (local bytes / 4, as Triton's n_spills)
    shared: int  # bytes of shared memory per program
    serialized: str = ""  # ptxas's reason for making each wgmma product wait for the one before ("" if it does not)

    @property
    def programs(self) -> int:
        return math.prod(self.grid)

    def plain(self) -> dict[str, Any]:
        return {**asdict(self), "grid": list(self.grid)}

    @staticmethod
    def from_plain(d: dict[str, Any]) -> KernelFacts:
        return KernelFacts(str(d["name"]), tuple(int(g) for g in d["grid"]), int(d["num_warps"]), int(d["registers"]),
                           int(d["spilled"]), int(d["shared"]), str(d.get("serialized", "")))  # fmt: skip


def facts_from_compiled(name: str, grid: tuple[int, ...], compiled: Any) -> KernelFacts | None:
    """Facts of a kernel Triton compiled and launched on this GPU (None for anything else, e.g. the interpreter)."""
    meta = getattr(compiled, "metadata", None)
    regs = getattr(compiled, "n_regs", None)
    if meta is None or not isinstance(regs, int):
        return None
    try:  # a Triton whose metadata lacks a field gives no diagnosis, never a failed timing
        return KernelFacts(name, tuple(int(g) for g in grid), int(meta.num_warps), regs,
                           int(getattr(compiled, "n_spills", 0) or 0), int(meta.shared),
                           _serialized_once(compiled))  # fmt: skip
    except (AttributeError, TypeError, ValueError):
        return None


_SERIALIZED: dict[str, str] = {}  # compiled kernel's hash -> serialized_products of its PTX (one ptxas run each)


def _serialized_once(compiled: Any) -> str:
    """serialized_products of a kernel compiled on this GPU, once per compiled kernel; '' when it cannot be read."""
    try:
        key = str(getattr(compiled, "hash", "")) or str(id(compiled))
        if key not in _SERIALIZED:
            _SERIALIZED[key] = serialized_products(compiled.asm["ptx"], int(compiled.metadata.target.arch))
        return _SERIALIZED[key]
    except Exception:  # noqa: BLE001 - a note that cannot be read is no diagnosis, never a failed timing
        return ""


def resource_usage(cubin: bytes) -> dict[str, int]:
    """The first function's resource line of `cuobjdump -res-usage` (REG, STACK, SHARED, LOCAL ...)."""
    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if "REG:" in ln)
    return {k: int(v) for k, v in re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+)", line)}


def serialized_products(ptx: str, arch: int) -> str:
    """ptxas's note when it makes each tensor-core product (wgmma, sm_90) wait for the one before, '' when it does
    not or the kernel has none. Triton runs ptxas with -v but does not print its notes; this runs it again on the
    PTX. The note ("Potential Performance Loss: wgmma.mma_async instructions are serialized due to ...", C7515 and
    its kin) costs the overlap of products the pipeline was built for: a TMA kernel with two accumulators in a loop
    flattened with tl.range(flatten=True) ran 0.73-0.78x as fast as unflattened
    (results/h100/tiling_tma_wide_probe.md)."""
    import triton

    if arch != 90 or "wgmma.mma_async" not in ptx:
        return ""
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        try:  # Triton ran the same ptxas on the same PTX moments before, so a minute is ample
            log = subprocess.run([tool, "-arch=sm_90a", "-v", src, "-o", out], capture_output=True, text=True,
                                 timeout=60).stderr  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return ""
    found = re.search(r"wgmma\.mma_async instructions are serialized( due to [^\n]*?)?(?: in the function|\n|$)", log)
    return ("serialized" + (found.group(1) or "")).strip() if found else ""


def facts_from_cubin(name: str, grid: tuple[int, ...], compiled: Any) -> KernelFacts:
    """Facts of a kernel compiled for a GPU target that is not here (`triton.compile(..., target=...)`)."""
    usage = resource_usage(compiled.asm["cubin"])
    # The driver's local size (Triton's n_spills * 4) is the stack frame plus declared local arrays.
    spilled = (usage.get("STACK", 0) + usage.get("LOCAL", 0)) // 4
    serialized = serialized_products(compiled.asm["ptx"], int(compiled.metadata.target.arch))
    return KernelFacts(name, tuple(grid), int(compiled.metadata.num_warps), usage["REG"], spilled,
                       int(compiled.metadata.shared), serialized)  # fmt: skip


def facts_for_target(kernel: Any, signature: dict[str, str], constexprs: dict[str, Any], grid: tuple[int, ...],
                     num_warps: int, device: Device) -> KernelFacts:  # fmt: skip
    """Compile a `@triton.jit` kernel (or its interpreted twin) for `device`'s architecture here, GPU or not,
    and read its facts from the cubin. signature: argument -> Triton type ("*bf16", "i32", "fp32" ...)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    from autograder.kernel_check import _compiled_language

    fn = kernel if isinstance(kernel, JITFunction) else JITFunction(kernel.fn)
    with _compiled_language():  # the language as compiled code needs it, even after the interpreter ran
        compiled = triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", device.arch, WARP),
                                  options={"num_warps": num_warps})  # fmt: skip
    return facts_from_cubin(fn.__name__, grid, compiled)


@dataclass(frozen=True)
class Occupancy:
    programs_per_sm: int  # resident programs of this kernel on one SM
    limit: str  # what stops one more: "warps", "registers", "shared memory" or "programs"
    warps: int  # resident warps per SM
    max_warps: int

    @property
    def fraction(self) -> float:
        return self.warps / self.max_warps


def occupancy(k: KernelFacts, sm: SmLimits) -> Occupancy:
    """Programs per SM as the hardware's allocation rules allow (registers per warp in units, shared memory
    with the driver's reserve per program), and the first ceiling that binds."""
    regs_per_warp = math.ceil(max(k.registers, 1) * WARP / sm.register_unit) * sm.register_unit
    by = {  # on a tie the first named binds: the fixed ceilings before what the kernel chose to use
        "warps": sm.max_warps // k.num_warps,
        "programs": sm.max_blocks,
        "registers": (sm.registers // regs_per_warp) // k.num_warps,
    }
    if k.shared:
        by["shared memory"] = sm.smem // (k.shared + sm.smem_reserved_per_block)
    limit = min(by, key=lambda key: by[key])
    n = by[limit]
    return Occupancy(n, limit, n * k.num_warps, sm.max_warps)


@dataclass(frozen=True)
class Diagnosis:
    lines: list[str]  # one per kernel
    advice: str  # one sentence, or "" when no ceiling is obvious

    def text(self) -> str:
        body = "; ".join(self.lines)
        return f"Kernel: {body}." + (f" {self.advice}" if self.advice else "")


def _kb(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n >= 1024 or n == 0 else f"{n} B"


def diagnose(launches: list[KernelFacts], device: Device, slow: bool) -> Diagnosis:
    """What each distinct kernel of a timed call says, and one sentence of advice when the call is `slow`
    (it did not get full points) and one ceiling is obvious: spills first, then tensor-core products that
    ptxas serialized, then a grid smaller than the GPU, then a tile so large that one program fills an SM."""
    sm = sm_limits(device.capability)
    seen: dict[str, KernelFacts] = {}
    for k in launches:
        if k.name not in seen or k.programs > seen[k.name].programs:
            seen[k.name] = k  # a kernel launched several times is described by its largest grid
    lines, advice = [], ""
    for k in seen.values():
        occ = occupancy(k, sm)
        per_wave = max(occ.programs_per_sm, 1) * device.sms
        waves = k.programs / per_wave
        last = waves - math.floor(waves)
        tail = f", the last {last:.0%} full" if waves > 1 and last else ""
        lines.append(
            f"{k.name}: {k.registers} registers/thread, {k.spilled} spilled, {_kb(k.shared)} shared memory, "
            f"{k.num_warps} warp{'s' if k.num_warps != 1 else ''}; {occ.programs_per_sm} program(s)/SM ({occ.fraction:.0%} occupancy, limited by "
            f"{occ.limit}); {k.programs} programs on {device.sms} SMs = {waves:.2f} waves{tail}"
            + ("; ptxas serializes its tensor-core products" if k.serialized else "")
        )
        if not slow or advice:
            continue
        if k.spilled:
            advice = (
                f"{k.name} spills {k.spilled} registers per thread to local memory, which is read back through the "
                "caches at every use: give each program a smaller tile, or more warps (num_warps) to spread it over."
            )
        elif k.serialized:
            advice = (
                f"ptxas makes each tensor-core product of {k.name} wait for the one before ({k.serialized}), so "
                f"nothing overlaps them: {_unserialize(k.serialized)}"
            )
        elif k.programs < device.sms:
            advice = (
                f"{k.name} launches {k.programs} programs for {device.sms} SMs, so {device.sms - k.programs} SMs sit "
                "idle: split the work into more, smaller programs (a smaller block, or split the long dimension)."
            )
        elif occ.programs_per_sm <= 1 and occ.limit in ("shared memory", "registers") and occ.fraction < 0.25:
            advice = (
                f"Only one program of {k.name} fits on an SM (its {occ.limit} fill it), so nothing hides its memory "
                "latency: use a smaller tile, or fewer pipeline stages (num_stages) if shared memory is the limit."
            )
    return Diagnosis(lines, advice)


def _unserialize(reason: str) -> str:
    """What to change, for the reasons ptxas gives for serializing wgmma products."""
    if "accumulator registers" in reason:
        return ("keep every instruction that writes or reads an accumulator outside the loop of products (two "
                "accumulators reset inside a loop flattened with tl.range(..., flatten=True) can do this; "
                "unflatten it, or keep one accumulator).")  # fmt: skip
    if "register resources" in reason:
        return ("give each program a smaller tile or fewer accumulators, so that ptxas has the registers to keep "
                "products in flight.")  # fmt: skip
    return "change what ptxas names as the reason, or compare with a kernel of one accumulator and one product a step."


def roofline(extra: dict[str, Any]) -> str:
    """Where a speed case's time sits against the hardware the grader measured ('' if it has no rate)."""
    if extra.get("tflops") and extra.get("floor_tflops"):
        return f"{extra['tflops'] / extra['floor_tflops']:.0%} of the measured matmul rate"
    if math.isfinite(extra.get("pct_copy", math.nan)):
        return f"{extra['pct_copy']:.0f}% of copy bandwidth"
    return ""


def report(kernels: list[dict] | None, device: Device | None, extra: dict[str, Any], slow: bool) -> str:
    """The sentences the grader adds to a speed case ('' when the replayer had no compiled kernel to read)."""
    if not kernels or device is None or device.interpreter:
        return ""
    try:
        where = roofline(extra)
        text = diagnose([KernelFacts.from_plain(k) for k in kernels], device, slow).text()
    except Exception as exc:  # noqa: BLE001  (advice must never cost a grade; say it failed instead)
        return f" (No kernel diagnosis: {type(exc).__name__}: {exc}.)"
    return (f" Roofline: {where}." if where else "") + f" {text}"


def device_facts(device: torch.device) -> Device:
    """The GPU the replayer timed on, as course/device.py describes it."""
    return cuda_device(device.index if device.index is not None else torch.cuda.current_device())
