"""Check and tune the tiling solution (matmul) on a GPU; prints a table last and writes JSON.

    python scripts/tune_tiling.py [--out DIR] [--budget SECONDS]

Sections, each skipped once the time budget is spent: correctness and error statistics against a float64
reference; a block-size sweep; TFLOP/s across sizes against cuBLAS; tile quantization and alignment
(1792 vs 1793 and neighbours); wave quantization (tiles vs SMs); grouped launch order; the notebook's
progression of versions; float32; a tensor-descriptor (TMA) variant. Every time is the median of calls
with L2 flushed before each (autograder.timing), and cuBLAS (torch.matmul) is timed in the same run.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
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
p.add_argument("--budget", type=float, default=150.0, help="seconds; sections past it are skipped")
args = p.parse_args()
args.out.mkdir(parents=True, exist_ok=True)

k = load_kernels("tiling", "solutions")
dev = torch.device("cuda")
sms = torch.cuda.get_device_properties(0).multi_processor_count
R: dict = {
    "meta": {"gpu": torch.cuda.get_device_name(0), "sms": sms, "torch": torch.__version__, "triton": triton.__version__,
             "cuda": torch.version.cuda, "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
             "command": "python scripts/tune_tiling.py"},
}  # fmt: skip
LINES: list[str] = []  # the table printed at the end


def say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def save() -> None:
    R["meta"]["elapsed_s"] = round(time.monotonic() - T0, 1)
    (args.out / "tune_tiling.json").write_text(json.dumps(R, indent=1) + "\n")


class guard:
    """Reports an exception in a section and carries on with the next one."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is not None:
            import traceback

            traceback.print_exception(kind, exc, tb)
            say(f"[section {self.name} failed: {kind.__name__}: {str(exc)[:200]}]")
            save()
        return True


def left() -> float:
    return args.budget - (time.monotonic() - T0)


def section(name: str, need: float) -> bool:
    if left() < need:
        say(f"[skipped {name}: {left():.0f} s left, needs ~{need:.0f}]")
        return False
    print(f"--- {name} ({time.monotonic() - T0:.0f} s)", flush=True)
    return True


def ms_of(fns: dict, reps: int = 15) -> dict[str, float]:
    times = timing.time_interleaved({n: (lambda i, f=f: f()) for n, f in fns.items()}, 1, reps, dev, warmup_ms=5, min_warmup_calls=3)
    return {n: timing.median(t) for n, t in times.items()}


def tflops(m: int, n: int, kk: int, ms: float) -> float:
    return 2.0 * m * n * kk / (ms * 1e-3) / 1e12


def inputs(m: int, kk: int, n: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    return (torch.randn(m, kk, device=dev, generator=g).to(dtype), torch.randn(kk, n, device=dev, generator=g).to(dtype))


def raw(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bm: int, bn: int, bk: int, stages: int, warps: int, group: int = 8):
    """The solution's kernel with one explicit configuration (no autotuning)."""
    m, kk = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    return k._matmul_kernel[grid](a, b, c, m, n, kk, a.stride(0), b.stride(0), c.stride(0),
                                  BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group, num_stages=stages, num_warps=warps)


DT = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}

# --------------------------------------------------------------------------------------------------
# 1. Correctness and error statistics (float64 reference on the GPU)
# --------------------------------------------------------------------------------------------------
if section("correctness", 20):
    with guard("correctness"):
        rows = []
        shapes = {  # (M, K, N); fewer for bf16 and fp32, whose every new specialization costs compilations
            "float16": [(4096, 4096, 4096), (1793, 1793, 1793), (1, 4096, 4096), (1000, 333, 777), (127, 8192, 129),
                        (3, 5, 7), (2048, 14336, 4096), (64, 1000, 48)],
            "bfloat16": [(4096, 4096, 4096), (1793, 1793, 1793), (1000, 333, 777), (2048, 14336, 4096)],
            "float32": [(1793, 1793, 1793), (1000, 333, 777), (2048, 14336, 4096)],
        }
        for name, dtype in DT.items():
            for (m, kk, n) in shapes[name]:
                a, b = inputs(m, kk, n, dtype, seed=m + kk + n)
                ref = a.double() @ b.double()
                c = k.matmul(a, b)
                torch.cuda.synchronize()
                err = (c.double() - ref).abs()
                mean_ref = ref.abs().mean().item()
                row = {"dtype": name, "shape": [m, kk, n], "finite": bool(torch.isfinite(c).all()),
                       "max_err_over_mean_ref": (err.max() / mean_ref).item(),
                       "max_rel_err_big": (err / ref.abs()).masked_fill(ref.abs() < mean_ref, 0).max().item(),
                       "cublas_max_err_over_mean_ref": ((torch.matmul(a, b).double() - ref).abs().max() / mean_ref).item()}
                # The float32 accumulator before rounding (16-bit inputs, a float32 c): tensor-core summation error.
                if dtype != torch.float32:
                    c32 = torch.empty((m, n), dtype=torch.float32, device=dev)
                    pad = k.needs_padding(a, b)
                    if not pad:
                        raw(a, b, c32, 64, 128, 64, 4, 4)
                        row["acc32_max_err_over_mean_ref"] = ((c32.double() - ref).abs().max() / mean_ref).item()
                        row["acc32_in_units_of_2^-24_sqrtK"] = row["acc32_max_err_over_mean_ref"] / (2**-24 * math.sqrt(kk))
                else:
                    torch.backends.cuda.matmul.allow_tf32 = True
                    row["cublas_tf32_max_err_over_mean_ref"] = ((torch.matmul(a, b).double() - ref).abs().max() / mean_ref).item()
                    torch.backends.cuda.matmul.allow_tf32 = False
                rows.append(row)
                print(row, flush=True)
        R["correctness"] = rows
        bad = [r for r in rows if not r["finite"]]
        say(f"correctness: {len(rows)} cases, {len(bad)} with non-finite outputs")
        for r in rows:
            say(f"  {r['dtype']:9s} {'x'.join(map(str, r['shape'])):16s} max|err|/mean|ref| {r['max_err_over_mean_ref']:.2e} "
                f"(cuBLAS {r['cublas_max_err_over_mean_ref']:.2e}) rel(big) {r['max_rel_err_big']:.2e}"
                + (f" acc32 {r['acc32_max_err_over_mean_ref']:.1e} = {r['acc32_in_units_of_2^-24_sqrtK']:.1f} u*sqrtK" if "acc32_max_err_over_mean_ref" in r else "")
                + (f" cuBLAS-tf32 {r['cublas_tf32_max_err_over_mean_ref']:.1e}" if "cublas_tf32_max_err_over_mean_ref" in r else ""))
        save()

# --------------------------------------------------------------------------------------------------
# 2. The solution (autotuned) against cuBLAS across sizes
# --------------------------------------------------------------------------------------------------
SIZES = [256, 512, 1024, 1536, 1792, 1793, 2048, 3072, 4096, 6144, 8192]
if section("sizes", 25):
    with guard("sizes"):
        res = []
        for dtype_name in ("float16", "bfloat16"):
            for s in SIZES:
                if left() < 10:
                    break
                a, b = inputs(s, s, s, DT[dtype_name])
                ms = ms_of({"solution": lambda: k.matmul(a, b), "cuBLAS": lambda: torch.matmul(a, b)})
                res.append({"dtype": dtype_name, "size": s, **{f"{n}_ms": t for n, t in ms.items()},
                            "solution_tflops": tflops(s, s, s, ms["solution"]), "cublas_tflops": tflops(s, s, s, ms["cuBLAS"])})
                say(f"size {dtype_name} {s:5d}: solution {res[-1]['solution_tflops']:6.0f} TFLOP/s, cuBLAS {res[-1]['cublas_tflops']:6.0f}, "
                    f"ratio {ms['cuBLAS'] / ms['solution']:.2f}x")
        R["sizes"] = res
        save()

# --------------------------------------------------------------------------------------------------
# 3. Tile quantization and alignment around 1792
# --------------------------------------------------------------------------------------------------
if section("alignment", 15):
    with guard("alignment"):
        res = []
        for s in [1792, 1793, 1794, 1800, 1808, 1824, 1856, 1920]:
            a, b = inputs(s, s, s, torch.float16)
            c = torch.empty((s, s), dtype=torch.float16, device=dev)
            fns = {"cuBLAS": lambda: torch.matmul(a, b), "solution": lambda: k.matmul(a, b)}
            if s % 16:
                sp = k._round_up(s, k.ALIGN)
                fns["solution, no padding (128x256x64)"] = lambda: raw(a, b, c, 128, 256, 64, 3, 8)
                fns["solution, no padding (128x128x64)"] = lambda: raw(a, b, c, 128, 128, 64, 4, 4)
                fns["the three padding copies alone"] = lambda: (k._padded_copy(a, s, sp), k._padded_copy(b, sp, sp), k._padded_copy(c, s, s))
            ms = ms_of(fns)
            row = {"size": s, "tflops": {n: tflops(s, s, s, t) for n, t in ms.items()}, "us": {n: t * 1e3 for n, t in ms.items()}}
            res.append(row)
            say(f"align {s}: " + ", ".join(f"{n} {v:.0f}" for n, v in row["tflops"].items() if "copies" not in n) + " TFLOP/s"
                + "".join(f"; {n}: {v:.1f} us" for n, v in row["us"].items() if "copies" in n))
        R["alignment"] = res
        save()

# --------------------------------------------------------------------------------------------------
# 4. Block-size sweep (explicit configurations, no autotuning)
# --------------------------------------------------------------------------------------------------
SWEEP = [(128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (256, 128, 64, 3, 8), (128, 128, 64, 3, 4), (128, 128, 64, 4, 4),
         (128, 128, 64, 4, 8), (128, 128, 128, 3, 8), (64, 256, 64, 4, 4), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4),
         (64, 64, 64, 4, 4)]


def sweep(dtype_name: str, size: int, configs: list) -> list[dict]:
    dtype = DT[dtype_name]
    a, b = inputs(size, size, size, dtype)
    pad = k.needs_padding(a, b)
    if pad:  # the solution's padded path, timed whole: pad a and b, multiply, crop c
        sp = k._round_up(size, k.ALIGN)

        def run(cfg):
            def f():
                ap, bp = k._padded_copy(a, size, sp), k._padded_copy(b, sp, sp)
                cp = torch.empty((size, sp), dtype=dtype, device=dev)
                raw(ap, bp, cp, *cfg)
                return k._padded_copy(cp, size, size)
            return f
    else:
        c = torch.empty((size, size), dtype=dtype, device=dev)

        def run(cfg):
            return lambda: raw(a, b, c, *cfg)
    out = []
    ref = torch.matmul(a, b).float()
    fns = {"cuBLAS": lambda: torch.matmul(a, b)}
    for cfg in configs:
        if left() < 8:
            break
        try:
            f = run(cfg)
            result = f()
            torch.cuda.synchronize()
            got = result if pad else c
            ok = torch.allclose(got.float(), ref, atol=2e-2 * ref.abs().mean().item(), rtol=2e-2)
            fns["x".join(map(str, cfg[:3])) + f" s{cfg[3]} w{cfg[4]}"] = f
            if not ok:
                say(f"  WRONG result for {cfg} at {size} {dtype_name}")
        except Exception as e:  # noqa: BLE001  (out of shared memory and the like)
            say(f"  {cfg} failed: {type(e).__name__}: {str(e)[:120]}")
    ms = ms_of(fns)
    for name, t in ms.items():
        out.append({"dtype": dtype_name, "size": size, "config": name, "padded": pad, "ms": t, "tflops": tflops(size, size, size, t)})
    return out


if section("block-size sweep", 40):
    with guard("block-size sweep"):
        res = []
        for dtype_name, size, configs in [("float16", 4096, SWEEP), ("float16", 1793, SWEEP), ("float16", 8192, SWEEP[:6]),
                                          ("float16", 1792, SWEEP[:6] + SWEEP[8:9]), ("bfloat16", 4096, SWEEP[:6]), ("bfloat16", 1793, SWEEP[:6])]:
            if left() < 15:
                say(f"[sweep stopped before {dtype_name} {size}]")
                break
            r = sweep(dtype_name, size, configs)
            res += r
            best = max((x for x in r if x["config"] != "cuBLAS"), key=lambda x: x["tflops"])
            cub = next(x for x in r if x["config"] == "cuBLAS")
            say(f"sweep {dtype_name} {size}^3{' (padded)' if best['padded'] else ''}: cuBLAS {cub['tflops']:.0f} TFLOP/s; best {best['config']} "
                f"{best['tflops']:.0f} ({best['tflops'] / cub['tflops']:.2f}x); " + ", ".join(f"{x['config']}:{x['tflops']:.0f}" for x in r if x["config"] != "cuBLAS"))
            R["sweep"] = res
            save()

# --------------------------------------------------------------------------------------------------
# 5. Wave quantization: fixed 128x256 tiles, N = K = 4096, M = 128 t (16 t tiles on `sms` SMs)
# --------------------------------------------------------------------------------------------------
if section("waves", 12):
    with guard("waves"):
        res = []
        n = kk = 4096
        b = inputs(128, kk, n, torch.float16)[1]
        for t in range(1, 25):
            m = 128 * t
            a = torch.randn(m, kk, device=dev, dtype=torch.float16)
            c = torch.empty((m, n), dtype=torch.float16, device=dev)
            ms = ms_of({"tiles 128x256": lambda: raw(a, b, c, 128, 256, 64, 3, 8), "cuBLAS": lambda: torch.matmul(a, b)})
            tiles = t * (n // 256)
            res.append({"M": m, "N": n, "K": kk, "tiles": tiles, "waves": tiles / sms, "ms": ms["tiles 128x256"],
                        "tflops": tflops(m, n, kk, ms["tiles 128x256"]), "cublas_ms": ms["cuBLAS"], "cublas_tflops": tflops(m, n, kk, ms["cuBLAS"])})
        R["waves"] = res
        say("waves (M: tiles, us, TFLOP/s): " + "; ".join(f"{r['M']}: {r['tiles']}, {r['ms'] * 1e3:.0f}, {r['tflops']:.0f}" for r in res))
        save()

# --------------------------------------------------------------------------------------------------
# 6. Grouped launch order and 7. the notebook's progression of versions
# --------------------------------------------------------------------------------------------------


@triton.jit
def naive_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_K: tl.constexpr):
    """One output element per program: a row of a dotted with a column of b, BLOCK_K at a time."""
    pid = tl.program_id(0)
    i = pid // N
    j = pid % N
    acc = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + i * K + offs, mask=offs < K, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs * N + j, mask=offs < K, other=0.0).to(tl.float32)
        acc += a * b
    tl.store(c_ptr + i * N + j, tl.sum(acc).to(c_ptr.dtype.element_ty))


if section("grouping and progression", 20):
    with guard("grouping and progression"):
        res = []
        for s in (4096, 8192):
            a, b = inputs(s, s, s, torch.float16)
            c = torch.empty((s, s), dtype=torch.float16, device=dev)
            ms = ms_of({"GROUP_M=1 (row-major)": lambda: raw(a, b, c, 128, 256, 64, 3, 8, group=1),
                        "GROUP_M=8": lambda: raw(a, b, c, 128, 256, 64, 3, 8, group=8)})
            res += [{"size": s, "order": o, "ms": t, "tflops": tflops(s, s, s, t)} for o, t in ms.items()]
            say(f"grouping {s}^3: " + ", ".join(f"{o} {tflops(s, s, s, t):.0f}" for o, t in ms.items()) + " TFLOP/s")
        R["grouping"] = res
        save()
        prog = []
        s = 4096
        a, b = inputs(s, s, s, torch.float16)
        c = torch.empty((s, s), dtype=torch.float16, device=dev)
        versions = {
            "v1 32x32x32 tiles, 4 warps, no pipelining, row-major": lambda: raw(a, b, c, 32, 32, 32, 1, 4, group=1),
            "v2 128x128x64 tiles, 8 warps, no pipelining": lambda: raw(a, b, c, 128, 128, 64, 1, 8, group=1),
            "v3 + 3-stage software pipeline": lambda: raw(a, b, c, 128, 128, 64, 3, 8, group=1),
            "v4 128x256x64 tiles + grouped order": lambda: raw(a, b, c, 128, 256, 64, 3, 8, group=8),
            "v5 autotuned (the solution)": lambda: k.matmul(a, b),
            "cuBLAS": lambda: torch.matmul(a, b),
        }
        ms = ms_of(versions)
        prog += [{"size": s, "version": v, "ms": t, "tflops": tflops(s, s, s, t)} for v, t in ms.items()]
        s0 = 2048  # the naive kernel is too slow for 4096 in a short run
        a0, b0 = inputs(s0, s0, s0, torch.float16)
        c0 = torch.empty((s0, s0), dtype=torch.float16, device=dev)
        naive_kernel[(s0 * s0,)](a0, b0, c0, s0, s0, s0, BLOCK_K=128)
        torch.cuda.synchronize()
        naive_ok = torch.allclose(c0.float(), torch.matmul(a0, b0).float(), atol=0.1, rtol=2e-2)
        ms0 = ms_of({"v0 one element per program": lambda: naive_kernel[(s0 * s0,)](a0, b0, c0, s0, s0, s0, BLOCK_K=128),
                     "v1 at 2048": lambda: raw(a0, b0, c0, 32, 32, 32, 1, 4, group=1),
                     "cuBLAS at 2048": lambda: torch.matmul(a0, b0)}, reps=5)
        prog += [{"size": s0, "version": v, "ms": t, "tflops": tflops(s0, s0, s0, t)} for v, t in ms0.items()]
        R["progression"] = prog
        say(f"progression (fp16; naive correct: {naive_ok}): " + "; ".join(f"{r['version']} @{r['size']}: {r['tflops']:.1f}" for r in prog))
        save()

# --------------------------------------------------------------------------------------------------
# 8. float32: tf32x3 against cuBLAS float32 (ieee) and cuBLAS tf32
# --------------------------------------------------------------------------------------------------
if section("float32", 10):
    with guard("float32"):
        s = 4096
        a, b = inputs(s, s, s, torch.float32)

        def cublas_tf32():
            torch.backends.cuda.matmul.allow_tf32 = True
            out = torch.matmul(a, b)
            torch.backends.cuda.matmul.allow_tf32 = False
            return out

        ms = ms_of({"solution (tf32x3)": lambda: k.matmul(a, b), "cuBLAS fp32": lambda: torch.matmul(a, b), "cuBLAS tf32": cublas_tf32})
        R["float32"] = [{"size": s, "impl": n, "ms": t, "tflops": tflops(s, s, s, t)} for n, t in ms.items()]
        say("float32 4096^3: " + ", ".join(f"{n} {tflops(s, s, s, t):.0f}" for n, t in ms.items()) + " TFLOP/s")
        save()

# --------------------------------------------------------------------------------------------------
# 9. Tensor descriptors (TMA): the same tiles, loads through the copy engine
# --------------------------------------------------------------------------------------------------


@triton.jit
def tma_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, kk * BLOCK_K])  # out-of-bounds rows and columns read as zero
        b = b_desc.load([kk * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


if section("tensor descriptors", 10):
    with guard("tensor descriptors"):
        try:
            from triton.tools.tensor_descriptor import TensorDescriptor

            res = []
            for s in (4096, 8192):
                a, b = inputs(s, s, s, torch.float16)
                c = torch.empty((s, s), dtype=torch.float16, device=dev)
                fns = {}
                for (bm, bn, bk, st, w) in [(128, 256, 64, 3, 8), (128, 256, 64, 4, 8)]:
                    da = TensorDescriptor.from_tensor(a, [bm, bk])
                    db = TensorDescriptor.from_tensor(b, [bk, bn])
                    dc = TensorDescriptor.from_tensor(c, [bm, bn])
                    grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
                    fns[f"TMA {bm}x{bn}x{bk} s{st}"] = (lambda da=da, db=db, dc=dc, grid=grid, bm=bm, bn=bn, bk=bk, st=st, w=w:
                                                        tma_kernel[grid](da, db, dc, s, s, s, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_stages=st, num_warps=w))
                fns["pointers 128x256x64 s3"] = lambda: raw(a, b, c, 128, 256, 64, 3, 8)
                fns["cuBLAS"] = lambda: torch.matmul(a, b)
                first = next(iter(fns.values()))
                first()
                torch.cuda.synchronize()
                tma_ok = torch.allclose(c.float(), torch.matmul(a, b).float(), atol=0.1, rtol=2e-2)
                ms = ms_of(fns)
                res += [{"size": s, "impl": n, "ms": t, "tflops": tflops(s, s, s, t), "tma_correct": tma_ok} for n, t in ms.items()]
                say(f"TMA {s}^3 (correct: {tma_ok}): " + ", ".join(f"{n} {tflops(s, s, s, t):.0f}" for n, t in ms.items()))
            R["tma"] = res
        except Exception as e:  # noqa: BLE001
            say(f"TMA variant failed: {type(e).__name__}: {str(e)[:200]}")
        save()

say(f"done in {time.monotonic() - T0:.0f} s")
save()
print("\n==== summary ====")
print("\n".join(LINES))
sys.exit(0)
