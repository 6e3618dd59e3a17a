"""Compare a submission's output with the float64 reference, and explain a mismatch in words."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from autograder.spec import Tolerance


@dataclass
class Verdict:
    ok: bool
    message: str  # empty when ok
    max_error: float = float("nan")  # max |out - ref| / (atol * scale + rtol * |ref|); <= 1 passes


def _fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return "(" + ", ".join(str(i) for i in reversed(idx)) + ")"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def check_meta(name: str, out: object, shape: tuple[int, ...], dtype: torch.dtype, device: str) -> str:
    """A sentence about the first thing wrong with the output's type, shape, dtype or device, or ''."""
    if type(out) is not torch.Tensor:
        return f"`{name}` should be a torch.Tensor, but the call returned {type(out).__name__}."
    if tuple(out.shape) != shape:
        return f"`{name}` has shape {tuple(out.shape)}, but should have shape {shape}."
    if out.dtype != dtype:
        return f"`{name}` has dtype {_dtype_name(out.dtype)}, but should have {_dtype_name(dtype)} (the input dtype)."
    if out.device.type != device:
        return f"`{name}` is on {out.device.type}, but should be on {device} like the inputs."
    return ""


def _edge_hint(bad: torch.Tensor, shape: tuple[int, ...]) -> str:
    """Say when the wrong elements all sit past a power-of-two column or row: the mark of a block edge."""
    if len(shape) == 0 or bad.numel() == 0:
        return ""
    n_cols = shape[-1]
    cols = bad % n_cols
    first_col = int(cols.min())
    hints = []
    if first_col > 0:
        block = first_col & -first_col  # the largest power of two dividing first_col
        if block >= 16:
            hints.append(
                f"every wrong element lies in columns {first_col}..{n_cols - 1} of {n_cols}, past a multiple "
                f"of {block}: the mark of a block edge (a load or store without its mask, or a loop that "
                f"stops one block short)"
            )
        else:
            hints.append(f"every wrong element lies in columns {first_col}..{n_cols - 1} of {n_cols}")
    if len(shape) >= 2:
        n_rows = math.prod(shape[:-1])
        rows = bad // n_cols
        first_row = int(rows.min())
        if first_row > 0 and n_rows > 1:
            last = "the last row is" if first_row == n_rows - 1 else f"rows {first_row}..{n_rows - 1} are"
            hints.append(f"only {last} wrong (of {n_rows} rows, counting leading dims as rows)")
    return "; ".join(hints)


TERM_SCALE = "term_scale"  # attribute of a reference tensor: the per-element scale of its summed terms


def attach_term_scale(ref: torch.Tensor, terms: torch.Tensor) -> torch.Tensor:
    """Mark ref (a sum of terms per element, as a matmul's) with the size each element would have if its terms
    had random signs, sqrt(2/pi) * sqrt(sum of squared terms): what compare then scales atol by.

    For random inputs this is about mean|ref|, so tolerances carry over; where the terms cancel it stays at
    the terms' size, which is what float32 rounding errors are proportional to.
    """
    setattr(ref, TERM_SCALE, terms.to(ref.dtype) * math.sqrt(2.0 / math.pi))
    return ref


def _mean_abs(t: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """mean(|t|) over its finite elements (an infinite reference element is checked on its own)."""
    finite = torch.isfinite(t)
    total = torch.where(finite, t.abs(), torch.zeros_like(t))
    if dim is None:
        return total.sum() / finite.sum().clamp_min(1)
    return total.sum(dim, keepdim=True) / finite.sum(dim, keepdim=True).clamp_min(1)


def compare(name: str, out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> Verdict:
    """Elementwise check of out against the float64 reference, with a report on failure."""
    shape = tuple(ref.shape)
    got = out.detach().to(device=ref.device, dtype=torch.float64).reshape(-1)
    want = ref.reshape(-1)
    terms = getattr(ref, TERM_SCALE, None)
    if terms is not None:
        scale = terms.reshape(-1)
        where = "the size of its summed terms"
    elif tol.scale in ("row", "row_or_tensor") and ref.dim() >= 1 and want.numel():
        row_mean = _mean_abs(ref, -1)
        if tol.scale == "row_or_tensor":  # the larger of the row's mean and the tensor's: big rows on their own scale
            row_mean = row_mean.clamp_min(_mean_abs(want).item())
            where = "max(mean|ref| of its row, of the tensor)"
        else:
            where = "mean|ref| of its row"
        scale = row_mean.expand(shape).reshape(-1)
    else:
        scale = _mean_abs(want).item() if want.numel() else 0.0
        where = "mean|ref|"
    finite = torch.isfinite(want)
    allowed = torch.where(finite, tol.atol * scale + tol.rtol * want.abs(), torch.zeros_like(want))
    err = torch.where(finite, (got - want).abs(), torch.zeros_like(want))
    # NaN or inf where the reference is finite is always wrong; where the reference is inf or NaN, the
    # output must be the same inf, or NaN.
    same = (got == want) | (torch.isnan(got) & torch.isnan(want))
    bad = (err > allowed) | (finite & ~torch.isfinite(got)) | (~finite & ~same)
    ratio = torch.where(torch.isfinite(err), err / allowed.clamp_min(1e-300), torch.full_like(err, float("inf")))
    ratio = torch.where(bad & ~finite, torch.full_like(ratio, float("inf")), ratio)
    max_ratio = ratio.max().item() if ratio.numel() else 0.0
    n_bad = int(bad.sum())
    if n_bad == 0:
        return Verdict(True, "", max_ratio)

    idx = torch.nonzero(bad).reshape(-1)
    first = int(idx[0])
    total = want.numel()
    parts = [
        f"`{name}`: {n_bad:,} of {total:,} elements ({100.0 * n_bad / total:.2g}%) are outside the tolerance "
        f"(|out - ref| <= {tol.atol:g} * {where} + {tol.rtol:g} * |ref|).",
        f"The first is at index {_fmt_index(first, shape)}: got {got[first].item():.6g}, "
        f"expected {want[first].item():.6g}.",
    ]
    n_nan = int((torch.isnan(got) & ~torch.isnan(want)).sum())
    if n_nan:
        parts.append(
            f"{n_nan:,} elements are NaN. The grader fills fresh memory with NaN before your call, so these "
            "were probably never written (or were computed from an unmasked load)."
        )
    if torch.count_nonzero(got) == 0:  # (the reference's own zeros, if any, are not counted as wrong)
        parts.append("Every element is zero: is the output ever written?")
    elif n_bad < total:
        worst = int(torch.where(bad, ratio, torch.zeros_like(ratio)).argmax())
        if worst != first and torch.isfinite(got[worst]):
            parts.append(
                f"The worst is at {_fmt_index(worst, shape)}: got {got[worst].item():.6g}, "
                f"expected {want[worst].item():.6g}."
            )
        hint = _edge_hint(idx, shape)
        if hint:
            parts.append(hint[0].upper() + hint[1:] + ".")
    return Verdict(False, " ".join(parts), max_ratio)


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
