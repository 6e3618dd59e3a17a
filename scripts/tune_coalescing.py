"""Measure access patterns and tune the transpose (coalescing solution) on a GPU; prints a table, writes JSON.

    python scripts/tune_coalescing.py [--out DIR] [--budget SECONDS]

Sections: correctness of the solution (bit-exact) in several dtypes; reading a row-major matrix along its
rows and along its columns (GB/s); naive transposes (one side strided) against the tiled one; a sweep of
tile shapes and warps; the solution, x.t().contiguous() and a plain copy across sizes; and whether the
compiler staged the tile in shared memory (TTGIR). Times are medians with L2 flushed before each call.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

from autograder import timing
from course.loader import load_kernels

T0 = time.monotonic()
p = argparse.ArgumentParser()
p.add_argument("--out", type=Path, default=Path("tune_out"))
p.add_argument("--budget", type=float, default=40.0)
args = p.parse_args()
args.out.mkdir(parents=True, exist_ok=True)

k = load_kernels("coalescing", "solutions")
dev = torch.device("cuda")
R: dict = {"meta": {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
                    "cuda": torch.version.cuda, "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
                    "command": "python scripts/tune_coalescing.py"}}  # fmt: skip
LINES: list[str] = []


def say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def save() -> None:
    R["meta"]["elapsed_s"] = round(time.monotonic() - T0, 1)
    (args.out / "tune_coalescing.json").write_text(json.dumps(R, indent=1) + "\n")


def left() -> float:
    return args.budget - (time.monotonic() - T0)


def ms_of(fns: dict, reps: int = 20) -> dict[str, float]:
    times = timing.time_interleaved({n: (lambda i, f=f: f()) for n, f in fns.items()}, 1, reps, dev, warmup_ms=5, min_warmup_calls=3)
    return {n: timing.median(t) for n, t in times.items()}


copy_gbps = timing.copy_bandwidth_gbps(dev)
R["meta"]["copy_gbps"] = copy_gbps
say(f"device copy: {copy_gbps:,.0f} GB/s (bytes read + written)")

# --------------------------------------------------------------------------------------------------
# Correctness: a transpose is exact, so the result must equal x.t() bit for bit.
# --------------------------------------------------------------------------------------------------
bad = []
n_checked = 0
for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8):
    for shape in [(1, 1), (33, 17), (4096, 4096), (1793, 1793), (1, 5000), (5000, 1), (777, 3001), (8192, 1024)]:
        x = (torch.randn(shape, device=dev) * 50).to(dtype)
        out = k.transpose(x)
        n_checked += 1
        if not (out.shape == (shape[1], shape[0]) and out.is_contiguous() and torch.equal(out, x.t())):
            bad.append((str(dtype), shape))
R["correctness"] = {"cases": n_checked, "wrong": bad}
say(f"correctness: {n_checked} cases, wrong: {bad or 'none'}")
save()

# --------------------------------------------------------------------------------------------------
# Reading along rows vs along columns (float32, 8192 x 8192 = 256 MiB): each program sums BLOCK elements.
# --------------------------------------------------------------------------------------------------


@triton.jit
def read_rows_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Program p sums elements p*BLOCK ... p*BLOCK + BLOCK - 1: a stretch of one row."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid, tl.sum(tl.load(x_ptr + offs), axis=0))


@triton.jit
def read_cols_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr, NEIGHBOURS: tl.constexpr):
    """Program p sums BLOCK elements down one column. NEIGHBOURS: consecutive programs take neighbouring
    columns (the same rows); otherwise they take the same column, further down."""
    pid = tl.program_id(0)
    if NEIGHBOURS:
        col = pid % n_cols
        rb = pid // n_cols
    else:
        rb = pid % (n_rows // BLOCK)
        col = pid // (n_rows // BLOCK)
    rows = rb * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid, tl.sum(tl.load(x_ptr + rows.to(tl.int64) * n_cols + col), axis=0))


if left() > 5:
    n = 8192
    x = torch.randn(n, n, device=dev)
    block = 1024
    sums = torch.empty(n * n // block, device=dev)
    fns = {
        "rows": lambda: read_rows_kernel[(n * n // block,)](x, sums, BLOCK=block),
        "columns, neighbouring columns in flight": lambda: read_cols_kernel[(n * n // block,)](x, sums, n, n, BLOCK=block, NEIGHBOURS=True),
        "columns, one column at a time": lambda: read_cols_kernel[(n * n // block,)](x, sums, n, n, BLOCK=block, NEIGHBOURS=False),
    }
    for name, f in fns.items():
        f()
        torch.cuda.synchronize()
    ok = torch.allclose(sums.sum(), x.sum(), rtol=1e-3)
    ms = ms_of(fns)
    R["reads"] = [{"pattern": name, "shape": [n, n], "dtype": "float32", "ms": t, "gbps": x.nbytes / (t * 1e-3) / 1e9} for name, t in ms.items()]
    say(f"reads fp32 {n}x{n} (sums agree: {ok}): " + ", ".join(f"{r['pattern']} {r['gbps']:,.0f} GB/s" for r in R["reads"]))
    save()

# --------------------------------------------------------------------------------------------------
# Naive transposes: one side coalesced, the other strided.
# --------------------------------------------------------------------------------------------------


@triton.jit
def transpose_row_read_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    """Program p reads BLOCK consecutive elements of a row of x (coalesced) and writes them down a column
    of out (each element in a different row of out: strided)."""
    pid = tl.program_id(0)
    per_row = tl.cdiv(n_cols, BLOCK)
    row = pid // per_row
    cols = (pid % per_row) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x_ptr + row.to(tl.int64) * n_cols + cols, mask=mask)
    tl.store(out_ptr + cols.to(tl.int64) * n_rows + row, v, mask=mask)


@triton.jit
def transpose_col_read_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    """Program p reads BLOCK elements down a column of x (strided) and writes them along a row of out."""
    pid = tl.program_id(0)
    per_col = tl.cdiv(n_rows, BLOCK)
    col = pid // per_col
    rows = (pid % per_col) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < n_rows
    v = tl.load(x_ptr + rows.to(tl.int64) * n_cols + col, mask=mask)
    tl.store(out_ptr + col.to(tl.int64) * n_rows + rows, v, mask=mask)


@triton.jit
def transpose_grouped_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, GROUP: tl.constexpr):
    """The solution's tile, visited in groups of GROUP tile rows (column by column inside a group)."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(n_rows, BLOCK_M)
    tiles_n = tl.cdiv(n_cols, BLOCK_N)
    per_group = GROUP * tiles_n
    first = (pid // per_group) * GROUP
    size = min(tiles_m - first, GROUP)
    pid_m = first + (pid % per_group) % size
    pid_n = (pid % per_group) // size
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows.to(tl.int64)[:, None] * stride_x + cols[None, :], mask=mask)
    tl.store(out_ptr + cols.to(tl.int64)[:, None] * stride_out + rows[None, :], tl.trans(tile), mask=tl.trans(mask))


def gbps(x: torch.Tensor, ms: float) -> float:
    return 2 * x.nbytes / (ms * 1e-3) / 1e9


variants = []
if left() > 5:
    for dtype in (torch.bfloat16, torch.float32):
        m = n = 8192
        x = torch.randn(m, n, device=dev).to(dtype)
        out = torch.empty(n, m, device=dev, dtype=dtype)
        dst = torch.empty_like(x)
        fns = {
            "copy (dst.copy_(x))": lambda: dst.copy_(x),
            "x.t().contiguous()": lambda: x.t().contiguous(),
            "naive: rows read, columns written": lambda: transpose_row_read_kernel[(m * triton.cdiv(n, 1024),)](x, out, m, n, BLOCK=1024),
            "naive: columns read, rows written": lambda: transpose_col_read_kernel[(n * triton.cdiv(m, 1024),)](x, out, m, n, BLOCK=1024),
            "tiled (the solution)": lambda: k.transpose(x),
        }
        for name in list(fns)[2:4]:
            out.zero_()
            fns[name]()
            torch.cuda.synchronize()
            if not torch.equal(out, x.t()):
                say(f"  WRONG: {name}")
        ms = ms_of(fns)
        for name, t in ms.items():
            variants.append({"impl": name, "dtype": str(dtype).replace("torch.", ""), "shape": [m, n], "ms": t,
                             "gbps": gbps(x, t), "pct_copy": 100 * gbps(x, t) / copy_gbps})
        say(f"transposes {str(dtype)[6:]} {m}x{n}: " + ", ".join(f"{v['impl']} {v['gbps']:,.0f} GB/s ({v['pct_copy']:.0f}%)"
                                                          for v in variants if v["dtype"] == str(dtype)[6:]))
    R["variants"] = variants
    save()

# --------------------------------------------------------------------------------------------------
# Tile sweep
# --------------------------------------------------------------------------------------------------
TILES = [(32, 32), (32, 64), (64, 32), (64, 64), (64, 128), (128, 64), (128, 128), (32, 128), (128, 32)]
sweep = []
for dtype in (torch.bfloat16, torch.float32):
    for shape in [(8192, 8192), (4096, 14336)]:
        if left() < 6:
            say(f"[tile sweep stopped before {dtype} {shape}]")
            break
        x = torch.randn(shape, device=dev).to(dtype)
        fns = {"x.t().contiguous()": lambda: x.t().contiguous()}
        for (bm, bn) in TILES:
            for w in (4, 8):
                fns[f"{bm}x{bn} w{w}"] = lambda bm=bm, bn=bn, w=w: k.transpose_launch(x, bm, bn, w)
        for g in (4, 16):
            def grouped(g=g, x=x):
                m, n = x.shape
                o = torch.empty(n, m, device=dev, dtype=x.dtype)
                transpose_grouped_kernel[(triton.cdiv(m, 64) * triton.cdiv(n, 64),)](x, o, m, n, n, m, BLOCK_M=64, BLOCK_N=64, GROUP=g, num_warps=4)
                return o
            fns[f"64x64 w4 grouped {g}"] = grouped
        for name, f in fns.items():
            if name != "x.t().contiguous()" and not torch.equal(f(), x.t()):
                say(f"  WRONG: {name}")
        ms = ms_of(fns, reps=15)
        rows = [{"config": c, "dtype": str(dtype)[6:], "shape": list(shape), "ms": t, "gbps": gbps(x, t), "pct_copy": 100 * gbps(x, t) / copy_gbps}
                for c, t in ms.items()]
        sweep += rows
        best = max(rows[1:], key=lambda r: r["gbps"])
        sol = next(r for r in rows if r["config"] == "{}x{} w{}".format(*k._tile_config(x)))
        say(f"tiles {str(dtype)[6:]} {shape[0]}x{shape[1]}: torch {rows[0]['pct_copy']:.0f}%; best {best['config']} {best['pct_copy']:.0f}%; "
            f"solution's {sol['config']} {sol['pct_copy']:.0f}%; " + ", ".join(f"{r['config']}:{r['pct_copy']:.0f}" for r in rows[1:]))
        R["tile_sweep"] = sweep
        save()

# --------------------------------------------------------------------------------------------------
# Sizes, and what the compiler did with the tile
# --------------------------------------------------------------------------------------------------
sizes = []
for s in (1024, 2048, 4096, 8192, 16384):
    if left() < 3:
        break
    x = torch.randn(s, s, device=dev).to(torch.bfloat16)
    dst = torch.empty_like(x)
    ms = ms_of({"solution": lambda: k.transpose(x), "x.t().contiguous()": lambda: x.t().contiguous(), "copy": lambda: dst.copy_(x)})
    sizes += [{"impl": n, "dtype": "bfloat16", "shape": [s, s], "ms": t, "gbps": gbps(x, t), "pct_copy": 100 * gbps(x, t) / copy_gbps} for n, t in ms.items()]
    say(f"size bf16 {s}^2: " + ", ".join(f"{r['impl']} {r['gbps']:,.0f} GB/s" for r in sizes if r["shape"] == [s, s]))
R["sizes"] = sizes
save()

try:
    x = torch.randn(256, 256, device=dev)
    out = torch.empty_like(x)
    ir = {}
    for name, launch in {
        "tiled": lambda: k._transpose_kernel[(16,)](x, out, 256, 256, 256, 256, BLOCK_M=64, BLOCK_N=64, num_warps=4),
        "naive rows read": lambda: transpose_row_read_kernel[(256,)](x, out, 256, 256, BLOCK=256),
    }.items():
        compiled = launch()
        ttgir = compiled.asm["ttgir"]
        ir[name] = {"shared_bytes": compiled.metadata.shared, "convert_layout": len(re.findall(r"ttg\.convert_layout", ttgir)),
                    "lines": [ln.strip()[:160] for ln in ttgir.splitlines() if re.search(r"tt\.load|tt\.store|local_alloc|local_load|convert_layout", ln)][:12]}
    R["ttgir"] = ir
    say("ttgir: " + "; ".join(f"{n}: {v['convert_layout']} convert_layout, {v['shared_bytes']} bytes of shared memory" for n, v in ir.items()))
    save()
except Exception as e:  # noqa: BLE001
    say(f"[ttgir failed: {type(e).__name__}: {e}]")
say(f"done in {time.monotonic() - T0:.0f} s")
print("\n==== summary ====")
print("\n".join(LINES))
