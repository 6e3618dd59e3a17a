"""GPU timing shared by the grader and the benchmarks: L2 flushed before every call, CUDA events around
it, a device-wide synchronize after it, candidates interleaved call by call, medians reported.

Python's launch cost is hidden behind the flush and a short device-side spin, so a time is the GPU's
(as with triton.testing.do_bench, whose flush plays the same part); `host_overhead_us` measures the
launch cost on its own, for calls small enough that it matters.

Every entry point used here (the event class and its methods, synchronize, the device-side sleep,
the host clock) is bound when this module is imported, which the worker does before it imports a
submission: a submission that patches torch.cuda or time afterwards does not change what is used
here (and the worker's snapshot reports the patch).

On a CPU, `time_calls` times with the host clock and flushes nothing: the repo's own tests use it to
exercise the grader's timing defences under the interpreter; those times mean nothing about speed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time
_synchronize = torch.cuda.synchronize
_sleep = getattr(torch.cuda, "_sleep", None)
_perf_counter = time.perf_counter


def flush_buffer(device: torch.device) -> torch.Tensor:
    """A buffer at least twice the L2 (and at least 256 MiB), zeroed before each timed call."""
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
    return torch.empty(max(256 << 20, 2 * l2) // 4, dtype=torch.int32, device=device)


def time_interleaved(
    fns: dict[str, Callable[[int], object]],
    n_inputs: int,
    reps: int,
    device: torch.device,
    warmup_ms: float = 100.0,
    min_warmup_calls: int = 10,
) -> dict[str, list[float]]:
    """Time each fn(i) (i cycles over the input pool) `reps` times, interleaved; milliseconds per call."""
    return time_calls(fns, list(range(n_inputs)), lambda r: r % n_inputs, reps, device, warmup_ms, min_warmup_calls)


def time_calls(
    fns: dict[str, Callable[[Any], object]],
    warm_args: list[Any],
    timed_arg: Callable[[int], Any],
    reps: int,
    device: torch.device,
    warmup_ms: float = 100.0,
    min_warmup_calls: int = 10,
    after: Callable[[str, int, object], None] | None = None,
    settle: Callable[[int], None] | None = None,
    min_reps: int | None = None,
    settled_spread: float = 0.0,
) -> dict[str, list[float]]:
    """Time each fn(arg) up to `reps` times, interleaved; milliseconds per call.

    With `min_reps`, timing stops early once at least that many reps (an even number: each order as often)
    have run and every fn's spread (interquartile range over median) is at most `settled_spread`: a median
    of 20 calls whose middle half lies within 3% of it moves by well under 1% with 30 more. The warm-up ends
    once `min_warmup_calls` have run and either `warmup_ms` of GPU time has passed or the last
    SETTLED_CALLS times agree within SETTLED_WARMUP (clocks up, caches and autotuning done).

    Warm-up calls cycle over `warm_args`. Timed rep r calls every fn on `timed_arg(r)`, which is made
    once per rep, before the flush, outside the timed region (the grader makes new inputs there, so no
    timed call sees contents it has seen before). `after(name, r, result)` runs right after the end
    event is recorded, before the synchronize: work it queues lands on the timing stream just behind
    the call (the grader keeps a copy of the output there, so work the call left running on another
    stream or thread shows up as a wrong output). Warm-up calls pass r = -1. `settle(r)` runs after
    the synchronize.
    """
    cuda = device.type == "cuda"
    flush = flush_buffer(device) if cuda else None
    head_start = _sleep_cycles_per_us(device) * HEAD_START_US if cuda else 0
    # Warm-up: compile, autotune and settle clocks, for at least warmup_ms and min_warmup_calls each.
    for name, fn in fns.items():
        calls, elapsed = 0, 0.0
        recent: list[float] = []
        while calls < min_warmup_calls or (elapsed < warmup_ms and not _settled(recent)):
            result, ms = _timed_call(fn, warm_args[calls % len(warm_args)], cuda, None, 0, after, name, -1)
            elapsed += ms
            calls += 1
            recent = (recent + [ms])[-SETTLED_CALLS:]
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    enough = max(2, min_reps + min_reps % 2) if min_reps else reps + 1
    for r in range(reps):
        if r >= enough and r % 2 == 0 and settled_spread > 0 and all(spread(t) <= settled_spread for t in times.values()):
            break
        arg = timed_arg(r)
        order = names if r % 2 == 0 else names[::-1]  # alternate the order so neither always goes first
        for name in order:
            _, ms = _timed_call(fns[name], arg, cuda, flush, head_start, after, name, r)
            times[name].append(ms)
            if settle is not None:
                settle(r)
    return times


SETTLED_CALLS = 5  # warm-up calls whose times must agree before the warm-up may end early
SETTLED_WARMUP = 0.02  # within 2% of each other (slowest over fastest, minus one)


def _settled(recent: list[float]) -> bool:
    return len(recent) == SETTLED_CALLS and min(recent) > 0 and max(recent) / min(recent) - 1 <= SETTLED_WARMUP


def _timed_call(fn: Callable[[Any], object], arg: Any, cuda: bool, flush: torch.Tensor | None, head_start: int,
                after: Callable[[str, int, object], None] | None, name: str, r: int) -> tuple[object, float]:
    if not cuda:
        t0 = _perf_counter()
        result = fn(arg)
        ms = (_perf_counter() - t0) * 1e3
        if after is not None:
            after(name, r, result)
        return result, ms
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    if flush is not None:
        # No synchronize between the flush and the start event: while the GPU clears L2 and then
        # spins for HEAD_START_US, the host gets through Python and queues the call, so the events
        # measure the GPU's work rather than the time Python takes to launch it.
        flush.zero_()
        _sleep(head_start)
    _record(start)
    result = fn(arg)
    _record(end)
    if after is not None:
        after(name, r, result)
    _synchronize()  # device-wide: work the call left on any stream is finished before the next
    return result, _elapsed(start, end)


# More than a graded call's host time, so launch cost stays out of the timing. A wrapper alone takes tens
# of us, but during grading every PyTorch op also passes through the grader's op recorder (tens of us
# each): at 300 us, the matmul solution's padding path (a dozen ops) outran the spin in some calls and
# its times split into two modes, 46 and 90 us (results/h200/stability_2026-11-21.md).
HEAD_START_US = 1000
_cycles_per_us: dict[int, int] = {}


def _sleep_cycles_per_us(device: torch.device) -> int:
    """GPU clock cycles per microsecond, measured once with torch.cuda._sleep (a device-side spin)."""
    index = device.index or 0
    if index not in _cycles_per_us:
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _sleep(1_000_000)  # warm the clocks
        _record(start)
        _sleep(10_000_000)
        _record(end)
        _synchronize()
        _cycles_per_us[index] = max(1, int(10_000_000 / (_elapsed(start, end) * 1e3)))
    return _cycles_per_us[index]


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float]) -> float:
    """Interquartile range over the median: how much one timing moves from call to call (0 with fewer than two)."""
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def copy_bandwidth_gbps(device: torch.device, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth, counting bytes read plus bytes written, in GB/s."""
    if device.type != "cuda":
        nbytes = min(nbytes, 64 << 20)
    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device=device).normal_()
    dst = torch.empty_like(src)
    times = time_interleaved({"copy": lambda i: dst.copy_(src)}, 1, 20, device, warmup_ms=0.0 if device.type != "cuda" else 100.0,
                             min_warmup_calls=2 if device.type != "cuda" else 10)["copy"]  # fmt: skip
    return 2 * nbytes / (median(times) * 1e-3) / 1e9


def matmul_tflops(device: torch.device, n: int = 8192) -> float:
    """Dense matmul rate of the device's fastest 16-bit path (cuBLAS bf16 on a GPU, fp16 before sm_80), in TFLOP/s."""
    cuda = device.type == "cuda"
    dtype = torch.float32 if not cuda else torch.bfloat16 if torch.cuda.get_device_capability(device)[0] >= 8 else torch.float16
    n = n if device.type == "cuda" else min(n, 512)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    cuda = device.type == "cuda"
    times = time_interleaved({"mm": lambda i: a @ b}, 1, 10 if cuda else 3, device, warmup_ms=100.0 if cuda else 0.0,
                             min_warmup_calls=5 if cuda else 1)["mm"]  # fmt: skip
    return 2 * n**3 / (median(times) * 1e-3) / 1e12


def host_overhead_us(fn: Callable[[], object], calls: int = 200, reps: int = 1, warmup: int = 10) -> float:
    """Host time per call when calls are queued back to back (the GPU never waits on one), in us; the best of reps."""
    cuda = torch.cuda.is_available()
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(reps):
        if cuda:
            _synchronize()
        t0 = _perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, _perf_counter() - t0)
        if cuda:
            _synchronize()
    return best / calls * 1e6


def back_to_back_ms(fn: Callable[[], object], calls: int = 1, reps: int = 7, warmup: int = 3) -> float:
    """Median over reps of the mean time of `calls` calls issued back to back, CUDA events around them and no
    flush: what a call costs inside a loop of them (a model's layers), launch gaps included. The host clock on a CPU."""
    for _ in range(warmup):
        fn()
    cuda = torch.cuda.is_available()
    times = []
    for _ in range(reps):
        if cuda:
            _synchronize()
            start, end = _Event(enable_timing=True), _Event(enable_timing=True)
            _record(start)
        t0 = _perf_counter()
        for _ in range(calls):
            fn()
        if cuda:
            _record(end)
            _synchronize()
            times.append(_elapsed(start, end) / calls)
        else:
            times.append((_perf_counter() - t0) * 1e3 / calls)
    return median(times)


def interleaved_ms(
    fns: dict[str, Callable[[], object]], reps: int, device: torch.device, **warmup: Any
) -> dict[str, float]:
    """`time_interleaved` for functions of no argument: each one's median milliseconds per call."""
    times = time_interleaved({name: (lambda i, f=f: f()) for name, f in fns.items()}, 1, reps, device, **warmup)
    return {name: median(ts) for name, ts in times.items()}
