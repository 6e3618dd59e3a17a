"""Issue 22, W4A16 at M = 1: a GEMV that decodes and multiplies in float16, two weights an instruction. A probe,
not course code.

Lecture 09, section 7 ends on what the GEMV needs: fewer instructions a weight without fewer warps. Its float32
decode (2^23 + v, a subtract) and FMA cost about five SASS instructions a weight in the solution, and the variants
that cut them took registers and lost warps. Half-precision arithmetic halves both: two float16 values share a
32-bit register, and the compiler turns two float16 FMAs on such a pair into one HFMA2 (checked on this compiler:
`--sass` counts them). The decode is module 08's: 0x6400 | c is the float16 1024 + c, so with the words read as
int16, ((w >> 4i) & 0xF) | 0x6400, bitcast, minus 1032, is q - 8 exactly, for nibble i of each 16-bit element.

The layout is that of results/provenance/w4a16_thread_rows_probe.py: a thread owns whole row segments, a step is one
group of 128 codes (four 16-byte loads a row), the group's scale multiplies the row's step sum once, in float32.
Per 16-bit element, the four nibbles' products are added in float16 (one FMA each, x scaled by 2^-4, exactly, so
that four products of |q - 8| <= 8 cannot overflow below |x| = 32752), then converted to float32 and summed. The
error this adds was checked first (one float16 rounding per product and per partial sum of four): at
1x4096x14336 about 0.7u rms and 3.6u x mean|y| at the largest output, with u = 2^-11, against the course's
float16 atol of 10u x mean|y| (the same as rounding each scaled weight to float16, which the tolerance allows).
float16 activations only (bfloat16's eight bits would not hold the products; its kernel stays the solution's).

    python results/provenance/w4a16_gemv16_probe.py OUT       # on a GPU: OUT/w4a16_gemv16_probe.json, a table last
    python results/provenance/w4a16_gemv16_probe.py --sass    # on the CPU: sm_90 compilations, SASS per weight
    TRITON_INTERPRET=1 python results/provenance/w4a16_gemv16_probe.py --dry   # the kernel checked on the CPU
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from course.launch import cdiv  # noqa: E402
from course.loader import load_kernels  # noqa: E402

qm = load_kernels("quant_matmul", "solutions")
_spec = importlib.util.spec_from_file_location("w4a16_thread_rows_probe", Path(__file__).with_name("w4a16_thread_rows_probe.py"))
rows_probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rows_probe)  # its x planes (_x_planes) and its SASS counter
_x_planes = rows_probe._x_planes
_finish_tile = qm._finish_tile
MAGIC16 = 0x54005400  # the float16 64 in each half of a word
@triton.jit
def _halves(w):
    """A 32-bit word's two 16-bit halves as float16 (low, high), by truncating casts and bitcasts: the compiler
    keeps them where they are, in one register (--sass)."""
    lo = w.to(tl.int16).to(tl.float16, bitcast=True)  # the cast to int16 keeps the low 16 bits
    hi = (w >> 16).to(tl.int16).to(tl.float16, bitcast=True)
    return lo, hi


@triton.jit
def _codes16(w, i: tl.constexpr, magic):
    """Nibbles i and i + 4 (i in 0..3) of each word as float16 (q - 8) / 16, exactly: (low half, high half).
    0x5400 | c is the float16 64 + c / 16 (exponent 2^6, mantissa steps of 1/16), so one shift and one AND-OR on
    the word make two of them, and one packed subtract of 64.5 takes off the offset."""
    lo, hi = _halves(((w >> (4 * i)) & 0x000F000F) | magic)
    return lo - 64.5, hi - 64.5


@triton.jit
def _gemv16(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
            k_per_split, magic, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT: tl.constexpr):
    """magic: 0x54005400, an argument so that it sits in a register and the AND and the OR make one instruction.
    w_ptr: the packed codes as int32 words, (N, K // 8); word j of a row holds codes 8j .. 8j + 7 (nibble t at
    bits 4t). Program (i, p, m): y[m, i*BLOCK_N ...] over its K slice (whole groups)."""
    CHUNKS: tl.constexpr = GROUP_SIZE // 32  # 16-byte loads per row per step
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    m = tl.program_id(2).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)
    offs_c = tl.arange(0, CHUNKS)
    offs_j = tl.arange(0, 4)
    w_tile = w_ptr + rows[None, :, None] * stride_wn + (4 * offs_c)[:, None, None] + offs_j[None, None, :]  # (C, BN, 4)
    x_tile = (x_ptr + m * stride_xm + (32 * offs_c)[:, None, None] + (8 * offs_j)[None, :, None]
              + tl.arange(0, 8)[None, None, :])  # (C, 4, 8): code 32c + 8j + t
    s_rows = s_ptr + rows * stride_sn
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    words = tl.load(w_tile + tl.multiple_of(k_start // 8, 4))
    for k0 in range(k_start, k_end, GROUP_SIZE):
        following = tl.load(w_tile + tl.multiple_of(tl.where(k0 + GROUP_SIZE < k_end, k0 + GROUP_SIZE, k_start) // 8, 4))
        x0, x1, x2, x3, x4, x5, x6, x7 = _x_planes(x_tile + k0, tl.float16)  # plane t: codes 8j + t
        # Each word's nibbles i and i + 4 are one register's two halves: kept side by side (join) so that the
        # compiler's packed instructions take them as they are; x's codes i and i + 4 are paired to match.
        t = tl.join(*_codes16(words, 0, magic)) * tl.join(x0, x4)
        t += tl.join(*_codes16(words, 1, magic)) * tl.join(x1, x5)
        t += tl.join(*_codes16(words, 2, magic)) * tl.join(x2, x6)
        t += tl.join(*_codes16(words, 3, magic)) * tl.join(x3, x7)
        step = tl.sum(tl.sum(tl.sum(t.to(tl.float32), axis=3), axis=2), axis=0)  # (BLOCK_N,)
        acc += step * tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        words = following
    acc = acc * 16.0  # the codes came as (q - 8) / 16
    tile_id = m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + m * stride_ym + offs_n, part_ptr + m * N + offs_n, n_mask, lock_ptr + tile_id, M * N, SPLIT)


def launcher(block_n: int, warps: int, pps: int, x: torch.Tensor, words: torch.Tensor, scales: torch.Tensor, sms: int):  # noqa: ANN201
    (m, k), n = x.shape, words.shape[0]
    tiles = cdiv(n, block_n) * m
    steps = cdiv(k, 128)
    want = max(1, min(steps, cdiv(pps * sms, tiles)))
    per = cdiv(steps, want)
    splits, k_split = cdiv(steps, per), per * 128

    def call() -> torch.Tensor:
        y = x.new_empty((m, n))
        part, locks = qm._split_buffers(splits, tiles, x, m, n)
        _gemv16[(cdiv(n, block_n), splits, m)](
            x, words, scales, y, part, locks, m, n, k, x.stride(0), words.stride(0), scales.stride(0), n, k_split, MAGIC16,
            GROUP_SIZE=128, BLOCK_N=block_n, SPLIT=splits > 1, num_warps=warps, num_stages=1)
        return y
    return call


def sass() -> None:
    """SASS instructions per weight in the main loop at 1x4096x14336, the solution's GEMV and the thread-rows probe's
    beside this one (the thread-rows probe's counter, given this kernel's int16 view of the weights)."""
    w32 = torch.empty(14336, 4096 // 8, dtype=torch.int32, device="meta")
    rows_probe.sass(extra=tuple((f"float16 GEMV, {bn} rows, {wp} warps", _gemv16, torch.float16,
                                 dict(GROUP_SIZE=128, BLOCK_N=bn, SPLIT=True, num_warps=wp, num_stages=1), bn // (32 * wp) * 128, w32, (MAGIC16,))
                                for bn, wp in ((128, 4), (256, 4), (64, 2), (128, 2))))


def main() -> None:
    if "--sass" in sys.argv:
        sass()
        return
    dry = "--dry" in sys.argv
    dev = torch.device("cpu" if dry else "cuda")
    sms = 4 if dry else torch.cuda.get_device_properties(dev).multi_processor_count
    shapes = ((256, 96), (512, 40)) if dry else ((4096, 14336), (14336, 4096), (4096, 4096))
    grid = [(32, 1, 4), (64, 2, 2)] if dry else list(itertools.product((64, 128, 256), (1, 2, 4), (4, 8, 16)))
    rows = []
    for k, n in shapes:
        torch.manual_seed(0)
        x = torch.randn(1, k, dtype=torch.float16, device=dev)
        w_packed = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
        scales = (torch.rand(n, k // 128, device=dev) * 0.01 + 0.001).to(torch.float16)
        codes = torch.stack([(w_packed >> 4 * h) & 15 for h in (0, 1)], -1).reshape(n, k).double() - 8
        ref = x.double() @ (codes * scales.double().repeat_interleave(128, 1)).T
        fns = {"solution (public call)": lambda: qm.w4a16_matmul(x, w_packed, scales, 128)}
        errors = {}
        for block_n, warps, pps in grid:
            if block_n < 32 * warps:
                continue
            f = launcher(block_n, warps, pps, x, w_packed.view(torch.int32), scales, sms)
            label = f"float16 GEMV n{block_n} w{warps} p{pps}"
            fns[label] = f
        for label, f in fns.items():
            err = float((f().double() - ref).abs().max() / ref.abs().mean())
            errors[label] = err
            assert err < 10 * 2.0**-11 + 2e-3, (label, err)  # the course's float16 atol (10u mean|y|) and some rtol
        if dry:
            print(f"1x{k}x{n}: {len(fns)} kernels within tolerance, largest error {max(errors.values()):.2e} x mean|y|")
            continue
        from autograder.timing import median, time_interleaved
        times = time_interleaved({label: (lambda i, f=f: f()) for label, f in fns.items()}, 1, 20, dev)
        best = None
        for label, t in times.items():
            us = median(t) * 1e3
            rows.append({"shape": f"1x{k}x{n}", "variant": label, "us": us, "error_over_mean_abs_y": errors[label]})
            if label.startswith("float16") and (best is None or us < best[1]):
                best = (label, us)
        sol = median(times["solution (public call)"]) * 1e3
        print(f"1x{k}x{n} float16: solution {sol:.2f} us; best float16 GEMV {best[1]:.2f} us ({best[0]}), "
              f"{sol / best[1]:.2f}x", flush=True)
    if not dry:
        from course.results import run_meta
        out = Path(sys.argv[1])
        out.mkdir(parents=True, exist_ok=True)
        (out / "w4a16_gemv16_probe.json").write_text(json.dumps({"meta": run_meta("w4a16_gemv16_probe"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
