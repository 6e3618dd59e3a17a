"""Compare an output with its float64 reference, and say in words where and how it is wrong.

The grader (autograder/checking.py) and the notebooks' inline exercise checks (course/exercises.py) both
judge with this module, so a student reads the same diagnosis in a notebook and in a grade report: the
first bad index, how many elements, NaN left by unwritten memory, and wrong elements past a block edge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    """An element passes when |out - ref| <= atol * scale + rtol * |ref|.

    `scale` is how large the element is allowed to be wrong in absolute terms, per unit of atol:
    - "tensor": mean(|ref|) over the whole output. One table then holds for outputs of any size.
    - "row": mean(|ref|) over the element's own row (the last dimension), for outputs whose rows have
      magnitudes of their own (a normalised row whose input was near zero, say): each row is judged on
      its own size, so a small row is not waved through because other rows are large.
    - "row_or_tensor": the larger of the two, for outputs whose rows are larger than typical but never
      smaller than the typical rounding error (attention's: a causal row averages as many values as its
      query sees keys, from one to thousands).
    A reference can instead carry, per element, the size the element would have had if the terms it sums
    had random signs (`attach_term_scale`): sums whose terms cancel are then judged against their terms,
    where float32's rounding error lives, not against their small result.
    """

    rtol: float
    atol: float
    scale: str = "tensor"  # "tensor", "row" or "row_or_tensor"


@dataclass
class Verdict:
    ok: bool
    message: str  # empty when ok
    max_error: float = float("nan")  # max |out - ref| / (atol * scale + rtol * |ref|); <= 1 passes
    # The same diagnosis as parts of one sentence, for a reader who wants it short (empty when ok).
    brief: str = ""
    wrong_fraction: float = 0.0  # of the elements, outside the tolerance


def fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    """The multi-dimensional index of element `flat` of a row-major tensor of `shape`, as '(i, j, ...)'."""
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return "(" + ", ".join(str(i) for i in reversed(idx)) + ")"


def fmt_percent(pct: float) -> str:
    """A percentage as a student reads it at a glance: "37%", "2.5%", "0.0031%", "99.96%" (never "100%" for less than
    100), "0%" only for nothing; the general format wrote 100 as "1e+02"."""
    if pct == 0:
        return "0%"
    if pct >= 10:
        text = f"{pct:.0f}"
        return f"{min(pct, 99.99):.2f}%" if text == "100" and pct < 100 else f"{text}%"
    if pct >= 1:
        return f"{pct:.1f}%"
    return f"{pct:.2g}%" if pct >= 1e-4 else "less than 0.0001%"


def fmt_share(part: int, whole: int) -> str:
    """part / whole as a percentage (fmt_percent): "100%" only when every element is."""
    return "100%" if part == whole else fmt_percent(100.0 * part / whole)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def check_meta(name: str, out: object, shape: tuple[int, ...], dtype: torch.dtype, device: str) -> str:
    """A sentence about the first thing wrong with the output's type, shape, dtype or device, or ''."""
    if type(out) is not torch.Tensor:
        return f"`{name}` should be a torch.Tensor, but the call returned {type(out).__name__}."
    if tuple(out.shape) != shape:
        return f"`{name}` has shape {tuple(out.shape)}, but should have shape {shape}."
    if out.dtype != dtype:
        return f"`{name}` has dtype {dtype_name(out.dtype)}, but should have {dtype_name(dtype)} (the input dtype)."
    if out.device.type != device:
        return f"`{name}` is on {out.device.type}, but should be on {device} like the inputs."
    return ""


def edge_hint(bad: torch.Tensor, shape: tuple[int, ...]) -> str:
    """Say when the wrong elements fill the columns (or rows) from some index to the end: the mark of a block edge.
    Only when every one of those columns (rows) holds a wrong element: one stray element near the end is no edge."""
    if len(shape) == 0 or bad.numel() == 0:
        return ""
    n_cols = shape[-1]
    cols = bad % n_cols
    first_col = int(cols.min())
    hints = []
    if first_col > 0 and int(cols.unique().numel()) == n_cols - first_col:
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
        if first_row > 0 and n_rows > 1 and int(rows.unique().numel()) == n_rows - first_row:
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


def _subnormal_spacing(dtype: torch.dtype) -> float:
    """The gap between adjacent subnormal numbers of a floating-point dtype (float16: 2**-24), else 0."""
    if not dtype.is_floating_point:
        return 0.0
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps


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
    # Near zero an output can be no nearer than its dtype's subnormal spacing allows: a value at a tie
    # between two subnormals (x/2 of a subnormal input, say) lands half a spacing away however it is
    # computed, and float32 rounding before the store can make that a whole one.
    floor = _subnormal_spacing(out.dtype)
    allowed = torch.where(finite, tol.atol * scale + tol.rtol * want.abs() + floor, torch.zeros_like(want))
    err = torch.where(finite, (got - want).abs(), torch.zeros_like(want))
    # NaN or inf where the reference is finite is always wrong; where the reference is inf or NaN, the
    # output must be the same inf, or NaN.
    same = (got == want) | (torch.isnan(got) & torch.isnan(want))
    bad = (err > allowed) | (finite & ~torch.isfinite(got)) | (~finite & ~same)
    ratio = torch.where(torch.isfinite(err), err / allowed.clamp_min(1e-300), torch.full_like(err, float("inf")))
    ratio = torch.where(bad & ~finite, torch.full_like(ratio, float("inf")), ratio)
    if out.dtype.is_floating_point and out.dtype != torch.float64:
        # A reference past the output dtype's largest value rounds, correctly, to an infinity of its sign
        # (float16 from 65520 on): that infinity is the right answer, not an overflow of the kernel's.
        rounded = want.to(out.dtype).to(torch.float64)
        exact_overflow = finite & torch.isinf(rounded) & (got == rounded)
        bad &= ~exact_overflow
        ratio = torch.where(exact_overflow, torch.zeros_like(ratio), ratio)
    max_ratio = ratio.max().item() if ratio.numel() else 0.0
    n_bad = int(bad.sum())
    if n_bad == 0:
        return Verdict(True, "", max_ratio)

    idx = torch.nonzero(bad).reshape(-1)
    first = int(idx[0])
    total = want.numel()
    first_at = fmt_index(first, shape)
    parts = [
        f"`{name}`: {n_bad:,} of {total:,} elements ({fmt_share(n_bad, total)}) are outside the tolerance "
        f"(|out - ref| <= {tol.atol:g} * {where} + {tol.rtol:g} * |ref|).",
        f"The first is at index {first_at}: got {got[first].item():.6g}, expected {want[first].item():.6g}.",
    ]
    brief = [
        f"{n_bad:,} of {total:,} elements of `{name}` are wrong, the first at {first_at} "
        f"(got {got[first].item():.6g}, expected {want[first].item():.6g})"
    ]
    n_nan = int((torch.isnan(got) & ~torch.isnan(want)).sum())
    if n_nan:
        parts.append(
            f"{n_nan:,} elements are NaN. The grader fills fresh memory with NaN before your call, so these "
            "were probably never written (or were computed from an unmasked load)."
        )
        brief.append(f"{n_nan:,} of them NaN (never written, or read through an unmasked load?)")
    if torch.count_nonzero(got) == 0:  # (the reference's own zeros, if any, are not counted as wrong)
        parts.append("Every element is zero: is the output ever written?")
        brief.append("every element is zero (is the output ever written?)")
    elif n_bad < total:
        worst = int(torch.where(bad, ratio, torch.zeros_like(ratio)).argmax())
        if worst != first and torch.isfinite(got[worst]):
            parts.append(
                f"The worst is at {fmt_index(worst, shape)}: got {got[worst].item():.6g}, "
                f"expected {want[worst].item():.6g}."
            )
        hint = edge_hint(idx, shape)
        if hint:
            parts.append(hint[0].upper() + hint[1:] + ".")
            brief.append(hint)
    return Verdict(False, " ".join(parts), max_ratio, "; ".join(brief), n_bad / total)
