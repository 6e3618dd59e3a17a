"""The shape of an assignment's grading spec: parts, cases, tolerances, speed cases and rubric.

Each module in autograder/specs/ builds one `Assignment`. The same module is imported by the trusted
grader process (inputs, float64 reference, checks) and by the worker process that runs the
submission (inputs, the call, the PyTorch baseline for timing), so everything here is plain data
plus small functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from course.comparison import Tolerance  # noqa: F401  (specs import it from here)

Tensors = dict[str, torch.Tensor]
Params = dict[str, Any]

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


@dataclass(frozen=True)
class Case:
    """One correctness case: a name for the report, the parameters the input generator takes, a tier."""

    params: Params
    tier: str  # "cpu": small, float32, run under the interpreter; "gpu": every dtype, LLM shapes

    @property
    def name(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.params.items() if k not in ("shape", "dtype"))
        head = f"({'x'.join(str(s) for s in self.params['shape'])}) " if "shape" in self.params else ""
        return f"{head}{self.params['dtype']}" + (f" {extra}" if extra else "")


@dataclass
class Part:
    """A graded task: its cases, how to call the submission, and the float64 reference."""

    task: str  # the task ID shared with the stub's TODO and the handout, e.g. "rmsnorm.forward"
    title: str
    points: float  # split evenly across the cases of the tier being graded
    make_inputs: Callable[[Params, torch.Generator, torch.device], Tensors]
    call: Callable[[ModuleType, Tensors, Params], Tensors]  # runs in the worker, on the submission
    reference: Callable[[Tensors, Params], Tensors]  # float64, runs in the grader
    cases: list[Case]
    # By dtype name: a Tolerance, or a function of the case's parameters that returns one (for errors that
    # grow with a size, such as a matmul's inner dimension K).
    tolerances: dict[str, Tolerance | Callable[[Params], Tolerance]]
    bonus: bool = False
    # Optional, runs in the worker before the graded call, unwatched and untimed: the submission's own
    # offline step (e.g. re-laying quantized weights with `prepare`). Its tensors are added to the inputs.
    setup: Callable[[ModuleType, Tensors, Params], Tensors] | None = None
    # The inputs `setup` reads (a quantized matmul's weights). A replay, and every timed call, keeps these
    # from the worker's own inputs, so that what setup prepared from them still holds; all other inputs are
    # new. They must not determine the answer on their own (the activations are never among them).
    setup_reads: tuple[str, ...] = ()
    # With setup_reads: the bytes of state that may be derived from those kept inputs, a function of the inputs (a
    # quantized matmul's packed weights plus twice its scales: room to re-arrange them, not to widen them). Checked
    # in the replayer on every replayed and timed call: what setup returned plus the nonzero memory the call carried
    # from before it (module-level buffers, state kept by setup) may not exceed it. Without the check, setup could
    # keep a dequantized copy of the weights in a module-level buffer, which the replay, keeping the weights, keeps too.
    setup_allowance: Callable[[Tensors], int] | None = None
    # A kernel of kernels.py that the graded call (and the timed one) must launch, given tensor descriptors: a part
    # that asks for a particular kernel (the tiling TMA bonus) is not earned by handing its call to another part's
    # kernel, which computes the same product. "" for parts that ask only for a result.
    launches_with_descriptors: str = ""
    # The kernels of kernels.py the graded call (and the timed one) may launch, the first of them at least once: a part
    # named after a kernel (a split-K decode, a fused RMSNorm-linear, a backward kernel) is not earned by another
    # kernel of the file that computes the same result (the forward kernel at one query row, an unfused pair, the
    # forward kernel between swaps). () for parts that ask only for a result. Name every kernel the given launcher
    # may launch for the part's cases, the forward's too where the call runs it (a backward part).
    launches: tuple[str, ...] = ()
    # The grader's own launch of that kernel (or of the first of `launches`), as the given launcher makes it
    # (descriptors, a tile, a grid), on a case's inputs made anew for it, before the replay:
    # kernel_probe(kernels, inputs, params, device) -> outputs, with `kernels(name)` a kernel of kernels.py
    # launchable as kernels(name)[grid](...), and under the interpreter bounded to the tensors it is given.
    # It runs in the replayer, where nothing of the submission runs but its kernels, and its outputs must be right too:
    # a part that grades one kernel is then not earned by a launch of it on a decoy beside another kernel's answer.
    kernel_probe: Callable[[Any, Tensors, Params, torch.device], Tensors] | None = None
    # The most bytes the call's kernels may store, a function of the case's inputs and parameters: the output and the
    # workspace of the part's technique (a flash attention kernel keeps its scores on chip, a fused kernel writes
    # no intermediate, a quantized matmul never writes the weights widened). Counted on the CPU tier, where the
    # interpreter sees every store (tl.store, a descriptor's store, an atomic), in the replay; on a GPU the speed
    # cases judge what a kernel moves. `write_budget_says`: what the budget allows, the end of the refusal's sentence.
    write_budget: Callable[[Tensors, Params], int] | None = None
    write_budget_says: str = ""
    # Whether PyTorch's copies in one dtype count against the budget too (copies into another dtype always do): for a
    # part whose naive algorithm is an input laid out wider in memory, which strided copies into a zeroed buffer make
    # without arithmetic (red team 24 widened W8A16's weights to 32-bit words that way). Elsewhere copies move data the
    # technique allows moving (grouped-query attention's repeated K and V, a clone rotated in place). Fills by a number
    # never count: their values are fixed in the record, nothing computed from the inputs.
    write_budget_counts_moves: bool = False

    @property
    def probed_kernel(self) -> str:
        """The kernel that kernel_probe launches: the one named with descriptors, else the first of `launches`."""
        return self.launches_with_descriptors or (self.launches[0] if self.launches else "")

    def inputs(self, params: Params, seed: int, device: torch.device, fixed_seed: int | None = None) -> Tensors:
        """The inputs drawn from `seed`; with `fixed_seed`, those `setup` reads are drawn from it instead."""
        inputs = self.make_inputs(params, generator(seed, device), device)
        if fixed_seed is not None and self.setup_reads:
            fixed = self.make_inputs(params, generator(fixed_seed, device), device)
            inputs.update({k: fixed[k] for k in self.setup_reads})
        return inputs

    def cases_for(self, tier: str) -> list[Case]:
        return [c for c in self.cases if c.tier == tier]

    def tolerance(self, params: Params) -> Tolerance:
        """The tolerance of one case: the dtype's entry, evaluated on the case's parameters when it is a function."""
        tol = self.tolerances[params["dtype"]]
        return tol if isinstance(tol, Tolerance) else tol(params)


# Bytes past any write budget (Part.write_budget): a few counters and flags, such as a split launch's arrival counters,
# or an output padded to a whole block of 1024 floats and stored without a mask (red team 24). A part's small cases
# need no tighter slack: one case past the budget fails the part, and its large cases tell the techniques apart.
WRITE_SLACK = 4096


def output_once(name: str) -> Callable[[Tensors, Params], int]:
    """The write budget of a kernel that stores one output the size and dtype of input `name`, and nothing else."""

    def budget(inputs: Tensors, params: Params) -> int:
        t = inputs[name]
        return t.numel() * t.element_size() + WRITE_SLACK

    return budget


ONCE_SAYS = (
    "a fused kernel stores its output once and keeps every intermediate value in registers; a chain of kernels "
    "that each store a partial result (one kernel per operation) does not fuse them. Compute the whole expression "
    "in one kernel, between one load and one store"
)


# What a speed case's points are earned on, in units of the hardware the grade runs on, so that a kernel
# at the roofline earns full points on any GPU:
COPY = "copy"  # memory-bound: bytes_moved / time as a fraction of the copy bandwidth measured in the same run
LIBRARY = "library"  # compute-bound: the library's time over the kernel's (cuBLAS, SDPA), timed in the same run
MEASURES = (COPY, LIBRARY)


@dataclass
class SpeedCase:
    """A timed call on the GPU, scored on its `measure`, with its speed-up over the baseline reported beside.

    Points are log-linear in the measure: none at `zero_at` or below, all at `target` or above. COPY cases
    time the baseline (eager PyTorch) all the same: the ratio to it stays in the report, as information.
    """

    task: str  # the part whose kernel is timed; its correctness cases must all pass first
    params: Params
    points: float
    target: float  # full points at or above this value of `measure` (0.8: 80% of copy bandwidth; 0.85: 0.85x cuBLAS)
    bytes_moved: Callable[[Params], int]  # the least traffic the operation needs: inputs read and outputs written once
    flops: Callable[[Params], int] | None = None  # for compute-bound kernels: reported as TFLOP/s
    # Per-case call and baseline; by default the assignment's `speed_call` and `baseline`.
    call: Callable[[ModuleType, Tensors, Params], Any] | None = None
    baseline: Callable[[Tensors, Params], Any] | None = None
    baseline_name: str = "eager PyTorch"
    # Optional: the baseline's own offline step (e.g. dequantizing weights for cuBLAS), run when each timed
    # call's inputs are made, outside the timed region; its tensors are added to the inputs.
    baseline_setup: Callable[[Tensors, Params], Tensors] | None = None
    zero_at: float = 1.0  # no points at or below this value of `measure`
    bonus: bool = False  # counts towards the bonus (e.g. a bonus part's speed), not the main score
    measure: str = LIBRARY
    # Timed only on a GPU with the tensor-memory accelerator (sm_90 on): elsewhere Triton turns descriptor loads
    # into ordinary loads, and the time would judge a kernel other than the one the case is about.
    needs_tma: bool = False

    def __post_init__(self) -> None:
        if self.measure not in MEASURES or not 0 < self.zero_at < self.target:
            raise ValueError(f"speed case {self.task} {self.params}: measure in {MEASURES}, 0 < zero_at < target")
        if self.measure == COPY and self.target > 0.9:  # the promise the README makes
            raise ValueError(f"speed case {self.task} {self.params}: a kernel at 90% of copy bandwidth must earn full points")

    def describe(self) -> str:
        """The threshold in words, e.g. 'full points at 80% of copy bandwidth, none at 15%'."""
        if self.measure == COPY:
            return f"full points at {self.target:.0%} of copy bandwidth, none at {self.zero_at:.0%}"
        return f"full points at {self.target:g}x {self.baseline_name}, none at {self.zero_at:g}x"

    @property
    def name(self) -> str:
        return Case(self.params, "gpu").name


def bonus_function(module: ModuleType, slug: str, name: str, signature: str) -> Callable[..., Any]:
    """The public function of a bonus that is not in the assignment's `api` (which every case checks before it runs):
    a kernels.py written before the bonus existed keeps its other parts graded and loses only the bonus's cases,
    with a sentence that says what to copy from the starter code."""
    fn = getattr(module, name, None)
    if not callable(fn):
        raise TypeError(
            f"kernels.py does not define `{name}`: this bonus calls {signature}. Copy the function, its launcher and "
            f"its kernel from the starter code (assignments/{slug}/kernels.py) into your file."
        )
    return fn


@dataclass
class Assignment:
    slug: str
    title: str
    api: dict[str, str]  # public function name -> signature the grader calls, for error messages
    parts: list[Part]
    speed: list[SpeedCase] = field(default_factory=list)
    # Timed in the worker as the baseline, and allowed nowhere in a submission's graded call.
    baseline: Callable[[Tensors, Params], Tensors] | None = None
    speed_call: Callable[[ModuleType, Tensors, Params], Any] | None = None
    # PyTorch ops refused in this assignment's graded calls although the grader allows them elsewhere
    # (a transpose must not be a PyTorch copy of a transposed view), and a sentence saying why.
    forbidden_ops: frozenset[str] = frozenset()
    forbidden_note: str = ""

    def part(self, task: str) -> Part:
        for p in self.parts:
            if p.task == task:
                return p
        raise KeyError(task)

    def max_points(self, tier: str, bonus: bool) -> float:
        total = sum(p.points for p in self.parts if p.bonus == bonus and p.cases_for(tier))
        if tier == "gpu":
            total += sum(s.points for s in self.speed if s.bonus == bonus)
        return total


# Elements of NaN after the end of every floating-point input (2**16: more than one block of any kernel in
# the course runs past an end). The worker fences the outputs a call allocates against stores past their
# ends; this is the same for loads: an unmasked load past the end of an input whose lanes reach the output
# shows there as NaN, instead of reading whatever memory happens to follow.
READ_FENCE = 1 << 16


def read_fenced(inputs: Tensors) -> Tensors:
    """The same tensors, each floating-point one contiguous at the start of a buffer that goes on with NaN."""
    out = {}
    for name, t in inputs.items():
        if t.is_floating_point():
            buf = torch.full((t.numel() + READ_FENCE,), float("nan"), dtype=t.dtype, device=t.device)
            buf[: t.numel()].copy_(t.reshape(-1))
            t = buf[: t.numel()].view(t.shape)
        out[name] = t
    return out


def generator(seed: int, device: torch.device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


@dataclass
class BenchCase:
    """One row group of `python -m autograder bench`: several implementations of one call, timed together."""

    pass_name: str  # "forward" or "backward"
    params: Params
    make_inputs: Callable[[Params, torch.Generator, torch.device], Tensors]
    # name -> prepare(inputs) returning a zero-argument callable to time (the backward's forward runs in prepare)
    impls: dict[str, Callable[[Tensors], Callable[[], object]]]
    bytes_moved: int
    flops: int = 0  # nonzero for compute-bound calls: the table then shows TFLOP/s
