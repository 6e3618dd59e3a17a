"""W4A16 with few rows (the planes dot kernel): how its eight products a step are issued. The solution chains them
through one accumulator, and Triton waits for each warpgroup MMA before the next (`wgmma.wait_group 0` after every
plane, `--ptx`). Variants: CHAINS independent accumulators (plane i into chain i % CHAINS), summed at the end of the
step, so that a product need not wait for the one before it.

    python results/provenance/w4a16_chains_probe.py --dry    # on the CPU (interpreter, float32): every variant checked
    python results/provenance/w4a16_chains_probe.py --ptx    # on the CPU: sm_90 compilations, the wgmma/wait trace
    python results/provenance/w4a16_chains_probe.py OUT      # on a GPU: checked against float64, then timed

The kernel is the solution's `_w4a16_dot_kernel` planes path for steps within one group (GROUP_SIZE a multiple of
BLOCK_K), with the solution's helpers; the launch settings are the H200 table's for 2-32 rows."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

if "--dry" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"
elif "--ptx" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path.cwd()))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from course.loader import load_kernels  # noqa: E402

qm = load_kernels("quant_matmul", "solutions")
_k_to_planes, _field_exact, _load_words, _finish_tile = qm._k_to_planes, qm._field_exact, qm._load_words, qm._finish_tile
MAGIC = qm.MAGIC


@triton.jit
def _chains_kernel(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
                   k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_W: tl.constexpr, CHAINS: tl.constexpr, CODES_FIRST: tl.constexpr, SPLIT: tl.constexpr):
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_cols = x_ptr + tl.minimum(offs_m, M - 1).to(tl.int64)[None, :] * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    DT: tl.constexpr = x_ptr.dtype.element_ty
    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        words = _load_words(w_rows, k0, k_end, BLOCK_W, True)  # (BLOCK_N, BLOCK_W)
        k = k0 + tl.arange(0, BLOCK_K)
        xt = tl.load(x_cols + k[:, None])  # (BLOCK_K, BLOCK_M)
        x0, x1, x2, x3, x4, x5, x6, x7 = _k_to_planes(xt.to(DT))
        lo = words | MAGIC
        hi = (words >> 12) | MAGIC
        c0 = _field_exact(lo, 0xF, 8.0, 0).to(DT)
        if CODES_FIRST:  # every plane decoded before the first product
            c1 = _field_exact(lo, 0xF0, 8.0, 4).to(DT)
            c2 = _field_exact(lo, 0xF00, 8.0, 8).to(DT)
            c3 = _field_exact(lo, 0xF000, 8.0, 12).to(DT)
            c4 = _field_exact(lo, 0xF0000, 8.0, 16).to(DT)
            c5 = _field_exact(hi, 0xF00, 8.0, 8).to(DT)
            c6 = _field_exact(hi, 0xF000, 8.0, 12).to(DT)
            c7 = _field_exact(hi, 0xF0000, 8.0, 16).to(DT)
        zero = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
        a = tl.dot(c0, x0, zero)
        if CHAINS == 1:
            if not CODES_FIRST:
                c1 = _field_exact(lo, 0xF0, 8.0, 4).to(DT)
            a = tl.dot(c1, x1, a)
        else:
            if not CODES_FIRST:
                c1 = _field_exact(lo, 0xF0, 8.0, 4).to(DT)
            b = tl.dot(c1, x1, zero)
        if not CODES_FIRST:
            c2 = _field_exact(lo, 0xF00, 8.0, 8).to(DT)
        a = tl.dot(c2, x2, a)
        if not CODES_FIRST:
            c3 = _field_exact(lo, 0xF000, 8.0, 12).to(DT)
        if CHAINS == 1:
            a = tl.dot(c3, x3, a)
        else:
            b = tl.dot(c3, x3, b)
        if not CODES_FIRST:
            c4 = _field_exact(lo, 0xF0000, 8.0, 16).to(DT)
        a = tl.dot(c4, x4, a)
        if not CODES_FIRST:
            c5 = _field_exact(hi, 0xF00, 8.0, 8).to(DT)
        if CHAINS == 1:
            a = tl.dot(c5, x5, a)
        else:
            b = tl.dot(c5, x5, b)
        if not CODES_FIRST:
            c6 = _field_exact(hi, 0xF000, 8.0, 12).to(DT)
        a = tl.dot(c6, x6, a)
        if not CODES_FIRST:
            c7 = _field_exact(hi, 0xF0000, 8.0, 16).to(DT)
        if CHAINS == 1:
            a = tl.dot(c7, x7, a)
            step = a
        else:
            b = tl.dot(c7, x7, b)
            step = a + b
        s = tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        acc += step * s[:, None]
    mn_mask = (offs_n < N)[:, None] & (offs_m < M)[None, :]
    tile_id = pid_m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None],
                 part_ptr + offs_m[None, :] * N + offs_n[:, None], mn_mask, lock_ptr + tile_id, M * N, SPLIT)


@triton.jit
def _loop_kernel(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
                 k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_W: tl.constexpr, CHAINS: tl.constexpr, CODES_FIRST: tl.constexpr, SPLIT: tl.constexpr):
    """The eight planes as a loop (tl.range) with the step's sum carried through it, so that Triton's pipelining
    of loop-carried products may let plane i's product run while plane i + 1 is decoded; x's plane i is loaded
    from memory (rows 8j + i) and each code shifted into place."""
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_cols = x_ptr + tl.minimum(offs_m, M - 1).to(tl.int64)[None, :] * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    DT: tl.constexpr = x_ptr.dtype.element_ty
    j8 = 8 * tl.arange(0, BLOCK_W)
    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        words = _load_words(w_rows, k0, k_end, BLOCK_W, True)  # (BLOCK_N, BLOCK_W)
        step = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
        for i in tl.range(0, 8, num_stages=CHAINS):
            xi = tl.load(x_cols + (k0 + j8 + i)[:, None]).to(DT)  # (BLOCK_W, BLOCK_M): x[8j + i]
            codes = ((((words >> (4 * i)) & 0xF) | MAGIC).to(tl.float32, bitcast=True) - 8388616.0).to(DT)
            step = tl.dot(codes, xi, step)
        s = tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        acc += step * s[:, None]
    mn_mask = (offs_n < N)[:, None] & (offs_m < M)[None, :]
    tile_id = pid_m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None],
                 part_ptr + offs_m[None, :] * N + offs_n[:, None], mn_mask, lock_ptr + tile_id, M * N, SPLIT)


def launch(x: torch.Tensor, words: torch.Tensor, scales: torch.Tensor, chains: int, codes_first: bool,
           block_n: int = 128, block_w: int = 16, warps: int = 4, stages: int = 3, pps: int = 2,
           meta: bool = False) -> torch.Tensor:
    """y = x @ W.T for groups of 128, K a multiple of 8 * block_w; split-K to about pps programs per SM."""
    (m, k), n = x.shape, words.shape[0]
    block_m = max(16, triton.next_power_of_2(m))
    tiles = triton.cdiv(n, block_n) * triton.cdiv(m, block_m)
    sms = 132 if x.device.type != "cpu" or meta else 4
    steps = k // (8 * block_w)
    splits = max(1, min(steps, (pps * sms) // tiles))
    k_per_split = triton.cdiv(steps, splits) * 8 * block_w
    splits = triton.cdiv(k, k_per_split)
    y = x.new_empty((m, n))
    part = torch.empty((splits, m, n), dtype=torch.float32, device=x.device)
    locks = torch.zeros(tiles, dtype=torch.int32, device=x.device)
    grid = (triton.cdiv(n, block_n), splits, triton.cdiv(m, block_m))
    args = (x, words, scales, y, part, locks, m, n, k, x.stride(0), words.stride(0), scales.stride(0), y.stride(0),
            k_per_split)
    kw = dict(GROUP_SIZE=128, BLOCK_N=block_n, BLOCK_M=block_m, BLOCK_W=block_w, CHAINS=abs(chains),
              CODES_FIRST=codes_first, SPLIT=splits > 1, num_warps=warps, num_stages=stages)
    kernel = _loop_kernel if chains < 0 else _chains_kernel
    if meta:
        return kernel, args, kw
    kernel[grid](*args, **kw)
    return y


# (chains, codes first); a negative count: the planes as a loop of that many stages (_loop_kernel)
VARIANTS = {"one chain (solution)": (1, False), "one chain, codes first": (1, True), "two chains": (2, False),
            "two chains, codes first": (2, True), "plane loop": (-1, False), "plane loop, 2 stages": (-2, False)}


def inputs(m: int, k: int, n: int, dtype: torch.dtype, device: str) -> tuple:
    g = torch.Generator(device="cpu").manual_seed(m * 7 + n)
    x = torch.randn(m, k, generator=g).to(dtype).to(device)
    w_packed = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, generator=g).to(device)
    scales = (torch.rand(n, k // 128, generator=g) * 0.01 + 0.001).to(dtype).to(device)
    q = torch.stack((w_packed & 15, w_packed >> 4), dim=-1).reshape(n, k).double() - 8
    exact = x.double() @ (q * scales.double().repeat_interleave(128, dim=1)).T
    return x, w_packed.view(torch.int32), scales, exact


def dry() -> None:
    for m, k, n in [(3, 256, 40), (16, 512, 96)]:
        x, words, scales, exact = inputs(m, k, n, torch.float32, "cpu")
        for label, (chains, first) in VARIANTS.items():
            got = launch(x, words, scales, chains, first, block_n=32, block_w=16, warps=4, stages=1)
            err = (got.double() - exact).abs().max().item() / exact.abs().mean().item()
            print(f"dry {m}x{k}x{n} {label}: relative error {err:.1e}")
            assert err < 1e-4, err
    print("dry: all correct")


def ptx() -> None:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from autograder.portability import _bind, _resource_usage

    x = torch.empty(16, 4096, dtype=torch.float16, device="meta")
    words = torch.empty(14336, 512, dtype=torch.int32, device="meta")
    scales = torch.empty(14336, 32, dtype=torch.float16, device="meta")
    for label, (chains, first) in VARIANTS.items():
        kernel, args, kw = launch(x, words, scales, chains, first, meta=True)
        _, (sig, ce, attrs, opts) = _bind(kernel, args, kw, 90)
        c = triton.compile(ASTSource(kernel, sig, ce, attrs), target=GPUTarget("cuda", 90, 32),
                           options=opts.__dict__)
        regs, spill = _resource_usage(c.asm["cubin"])
        ev = re.findall(r"(wgmma\.mma_async|wgmma\.wait_group\.sync\.aligned\s+\d+)", c.asm["ptx"])
        trace = "".join("M" if e.startswith("wgmma.mma") else "W" + e.split()[-1] for e in ev)
        trace = re.sub(r"M+", lambda g: f"M{len(g.group(0))}", trace)
        print(f"{label}: {regs} registers, {spill} B spilled\n    {trace}")


def gpu(out: Path) -> None:
    from autograder.timing import median, time_interleaved
    from course.results import run_meta

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for m, k, n in [(4, 4096, 14336), (16, 4096, 14336), (16, 14336, 4096), (16, 4096, 4096), (32, 4096, 14336)]:
        for dtype in (torch.float16,):
            x, words, scales, exact = inputs(m, k, n, dtype, "cuda")
            size = exact.abs().mean().item()
            fns = {"solution": lambda i: qm.w4a16_matmul(x, words.view(torch.uint8), scales, 128)}
            for label, (chains, first) in VARIANTS.items():
                fns[label] = lambda i, c=chains, f=first: launch(x, words, scales, c, f)
            errors, good = {}, {}
            for label, fn in fns.items():
                got = fn(0)
                torch.cuda.synchronize()
                errors[label] = (got.double() - exact).abs().max().item() / size
                if errors[label] < 0.05:
                    good[label] = fn
                else:
                    print("wrong", m, k, n, label, errors[label], flush=True)
            times = time_interleaved(good, 1, 20, torch.device("cuda"))
            us = {lab: median(t) * 1e3 for lab, t in times.items()}
            rows.append({"M": m, "K": k, "N": n, "dtype": str(dtype), "us": us, "errors": errors})
            print(f"{m}x{k}x{n}: " + ", ".join(f"{lab} {t:.1f}" for lab, t in us.items()), flush=True)
            (out / "w4a16_chains_probe.json").write_text(json.dumps({"meta": run_meta("w4a16_chains_probe"),
                                                                     "rows": rows}, indent=1))


if __name__ == "__main__":
    if "--dry" in sys.argv:
        dry()
    elif "--ptx" in sys.argv:
        ptx()
    else:
        gpu(Path(sys.argv[1]))
