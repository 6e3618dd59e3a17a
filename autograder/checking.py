"""Compare a submission's output with the float64 reference, and refuse timings below the physical floor.

The comparison itself lives in course/comparison.py, where the notebooks' exercise checks use it too.
"""

from __future__ import annotations

from course.comparison import (  # noqa: F401  (the grader's names)
    TERM_SCALE, Verdict, attach_term_scale, check_meta, compare, fmt_percent,
)


# A timing is refused as a measurement error when it implies more than this many times the copy
# bandwidth or the matmul rate the grader measured itself on the same GPU. Honest kernels reach about
# 1.0x copy bandwidth (bytes_moved counts the least traffic) and 0.7-0.9x cuBLAS; 1.5x leaves room for
# the measurements' own noise and clocks, and no honest kernel gets near it.
FLOOR_SLACK = 1.5


def physical_floor(ms: float, bytes_moved: int, flops: int | None, copy_gbps: float, peak_tflops: float,
                   slack: float = FLOOR_SLACK) -> str:
    """A sentence when `ms` is below what the hardware allows for this much traffic or arithmetic, or ''."""
    if not (ms > 0.0):  # also catches NaN
        return f"The timed call took {ms!r} ms: a time that is not positive is a measurement error."
    gbps = bytes_moved / (ms * 1e-3) / 1e9
    if copy_gbps > 0 and gbps > slack * copy_gbps:
        return (
            f"The timing is below the physical floor: moving {bytes_moved / 1e6:,.1f} MB in {ms * 1e3:.2f} us is "
            f"{gbps:,.0f} GB/s, more than {slack:g}x the copy bandwidth measured on this GPU ({copy_gbps:,.0f} GB/s). "
            "That is a measurement error (work left running on another stream or thread, or a patched timer), "
            "so the case earns no points."
        )
    if flops and peak_tflops > 0:
        tflops = flops / (ms * 1e-3) / 1e12
        if tflops > slack * peak_tflops:
            return (
                f"The timing is below the physical floor: {flops / 1e9:,.1f} GFLOP in {ms * 1e3:.2f} us is "
                f"{tflops:,.0f} TFLOP/s, more than {slack:g}x the matmul rate measured on this GPU "
                f"({peak_tflops:,.0f} TFLOP/s). That is a measurement error, so the case earns no points."
            )
    return ""
