"""GPU timing shared by the grader and the benchmarks: L2 flushed before every call, CUDA events around
it, a device-wide synchronize after it, candidates interleaved call by call, medians reported.

Python's launch cost is hidden behind the flush and a short device-side spin, so a time is the GPU's
(as with triton.testing.do_bench, whose flush plays the same part); `host_overhead_us` measures the
launch cost on its own, for calls small enough that it matters.

The CUDA entry points are bound when this module is imported, which the worker does before it
imports a submission, so a submission that patches torch.cuda afterwards does not change them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

_Event = torch.cuda.Event
_synchronize = torch.cuda.synchronize


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
    flush = flush_buffer(device)
    head_start = _sleep_cycles_per_us(device) * HEAD_START_US
    # Warm-up: compile, autotune and settle clocks, for at least warmup_ms and min_warmup_calls each.
    for fn in fns.values():
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        calls, elapsed = 0, 0.0
        while calls < min_warmup_calls or elapsed < warmup_ms:
            start.record()
            fn(calls % n_inputs)
            end.record()
            _synchronize()
            elapsed += start.elapsed_time(end)
            calls += 1
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(reps):
        order = names if r % 2 == 0 else names[::-1]  # alternate the order so neither always goes first
        for name in order:
            start, end = _Event(enable_timing=True), _Event(enable_timing=True)
            # No synchronize between the flush and the start event: while the GPU clears L2 and then
            # spins for HEAD_START_US, the host gets through Python and queues the call, so the events
            # measure the GPU's work rather than the time Python takes to launch it.
            flush.zero_()
            torch.cuda._sleep(head_start)
            start.record()
            fns[name](r % n_inputs)
            end.record()
            _synchronize()  # device-wide: work the call left on any stream is finished before the next
            times[name].append(start.elapsed_time(end))
    return times


HEAD_START_US = 300  # more than a wrapper's host time (tens of us), so launch cost stays out of the timing
_cycles_per_us: dict[int, int] = {}


def _sleep_cycles_per_us(device: torch.device) -> int:
    """GPU clock cycles per microsecond, measured once with torch.cuda._sleep (a device-side spin)."""
    index = device.index or 0
    if index not in _cycles_per_us:
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)  # warm the clocks
        start.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        _synchronize()
        _cycles_per_us[index] = max(1, int(10_000_000 / (start.elapsed_time(end) * 1e3)))
    return _cycles_per_us[index]


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float]) -> float:
    """Interquartile range over the median: how much one timing moves from call to call."""
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def copy_bandwidth_gbps(device: torch.device, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth, counting bytes read plus bytes written, in GB/s."""
    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device=device).normal_()
    dst = torch.empty_like(src)
    times = time_interleaved({"copy": lambda i: dst.copy_(src)}, 1, 20, device)["copy"]
    return 2 * nbytes / (median(times) * 1e-3) / 1e9


def host_overhead_us(fn: Callable[[], object], calls: int = 200) -> float:
    """Host time per call when calls are queued back to back (the GPU never waits on one), in us."""
    import time

    for _ in range(10):
        fn()
    _synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    _synchronize()
    return (t1 - t0) / calls * 1e6
