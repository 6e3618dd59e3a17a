"""Issue 22, W4A16 at M = 1: a GEMV whose threads each own whole rows. A probe, not course code.

The solution's GEMV spreads one row's step (64 bytes of codes) over four threads, so every step ends in warp
shuffles (the row sums) and moves x through shared memory into the broadcast's layout (lecture 09, section 7:
about 440 PTX instructions a step for 64 weights a thread). Here the words are addressed as a
(CHUNKS, BLOCK_N, 4) tensor: the last axis is one 16-byte load, the rows go across the threads, and the chunks
(16 bytes further along the same row) repeat in each thread. So a thread holds whole row segments, the sums
over a step stay in its registers, and each weight costs an AND and an FMA to decode (`_field_exact`) and an FMA
with x. A step is one group of 128 codes (CHUNKS = 4), so the group's scale multiplies the row's step sum once.
x comes in per step as (CHUNKS, 4, 8) (16-byte loads, the same addresses for every thread), split into its eight
nibble planes in registers.

    python results/provenance/w4a16_thread_rows_probe.py OUT          # on a GPU: OUT/w4a16_thread_rows_probe.json
    python results/provenance/w4a16_thread_rows_probe.py OUT --ahead  # words one or two steps ahead: ..._ahead.json
    python results/provenance/w4a16_thread_rows_probe.py --sass       # on the CPU: sm_90 compilations, SASS per weight
    TRITON_INTERPRET=1 python results/provenance/w4a16_thread_rows_probe.py --dry   # checks it on the CPU
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from course.launch import cdiv  # noqa: E402
from course.loader import load_kernels  # noqa: E402

qm = load_kernels("quant_matmul", "solutions")
_field_exact, _finish_tile, MAGIC = qm._field_exact, qm._finish_tile, qm.MAGIC


@triton.jit
def _x_planes(x_ptrs, DTYPE: tl.constexpr = tl.float32):
    """The step's activations (CHUNKS, 4, 8), code k = 32c + 8j + i at [c, j, i] -> eight (CHUNKS, 1, 4) planes, in
    DTYPE."""
    xs = tl.load(x_ptrs).to(DTYPE)
    t = tl.reshape(xs, (xs.shape[0], 1, 4, 2, 2, 2))  # i = 4a + 2b + c on the last three axes
    c0, c1 = tl.split(t)
    c0b0, c0b1 = tl.split(c0)
    c1b0, c1b1 = tl.split(c1)
    p0, p4 = tl.split(c0b0)
    p2, p6 = tl.split(c0b1)
    p1, p5 = tl.split(c1b0)
    p3, p7 = tl.split(c1b1)
    return p0, p1, p2, p3, p4, p5, p6, p7


@triton.jit
def _gemv_thread_rows(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn,
                      stride_ym, k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT: tl.constexpr,
                      X_PERM: tl.constexpr = False, AHEAD: tl.constexpr = 1):
    """X_PERM: x comes permuted within each 32 codes, x_perm[32c + 4i + j] = x[32c + 8j + i], so that plane i of a
    chunk is four contiguous values, loaded as (CHUNKS, 1, 4) in the words' own layout. AHEAD: steps of words
    requested before they are used (1 or 2)."""
    CHUNKS: tl.constexpr = GROUP_SIZE // 32  # 16-byte loads per row per step (a step is one group)
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
              + tl.arange(0, 8)[None, None, :])  # (C, 4, 8)
    s_rows = s_ptr + rows * stride_sn
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    # k_per_split is a whole number of groups (>= 32 codes): every step starts on a 16-byte boundary of its row
    words = tl.load(w_tile + tl.multiple_of(k_start // 8, 4))
    if AHEAD == 2:
        second = tl.load(w_tile + tl.multiple_of(tl.where(k_start + GROUP_SIZE < k_end, k_start + GROUP_SIZE, k_start) // 8, 4))
    for k0 in range(k_start, k_end, GROUP_SIZE):
        ahead = k0 + AHEAD * GROUP_SIZE
        following = tl.load(w_tile + tl.multiple_of(tl.where(ahead < k_end, ahead, k_start) // 8, 4))
        if X_PERM:
            xp = x_ptr + m * stride_xm + tl.multiple_of(k0, 32) + (32 * offs_c)[:, None, None] + offs_j[None, None, :]  # (C, 1, 4)
            x0 = tl.load(xp).to(tl.float32)
            x1 = tl.load(xp + 4).to(tl.float32)
            x2 = tl.load(xp + 8).to(tl.float32)
            x3 = tl.load(xp + 12).to(tl.float32)
            x4 = tl.load(xp + 16).to(tl.float32)
            x5 = tl.load(xp + 20).to(tl.float32)
            x6 = tl.load(xp + 24).to(tl.float32)
            x7 = tl.load(xp + 28).to(tl.float32)
        else:
            x0, x1, x2, x3, x4, x5, x6, x7 = _x_planes(x_tile + k0)
        lo = words | MAGIC
        hi = (words >> 12) | MAGIC
        t = _field_exact(lo, 0x0000F, 8.0, 0) * x0
        t += _field_exact(lo, 0x000F0, 8.0, 4) * x1
        t += _field_exact(lo, 0x00F00, 8.0, 8) * x2
        t += _field_exact(lo, 0x0F000, 8.0, 12) * x3
        t += _field_exact(lo, 0xF0000, 8.0, 16) * x4
        t += _field_exact(hi, 0x00F00, 8.0, 8) * x5
        t += _field_exact(hi, 0x0F000, 8.0, 12) * x6
        t += _field_exact(hi, 0xF0000, 8.0, 16) * x7
        acc += tl.sum(tl.sum(t, axis=2), axis=0) * tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        if AHEAD == 2:
            words = second
            second = following
        else:
            words = following
    tile_id = m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + m * stride_ym + offs_n, part_ptr + m * N + offs_n, n_mask, lock_ptr + tile_id, M * N, SPLIT)


def permute_x(x: torch.Tensor, f32: bool = False) -> torch.Tensor:
    """x_perm[.., 32c + 4i + j] = x[.., 32c + 8j + i] (K a multiple of 32), in float32 if asked."""
    m, k = x.shape
    return x.view(m, k // 32, 4, 8).transpose(2, 3).to(torch.float32 if f32 else x.dtype).contiguous().view(m, k)


def launcher(block_n: int, warps: int, pps: int, x: torch.Tensor, words: torch.Tensor, scales: torch.Tensor,
             sms: int, x_perm: bool = False, permute_in_call: bool = False, f32: bool = False, ahead: int = 1):  # noqa: ANN201
    (m, k), n = x.shape, words.shape[0]
    tiles = cdiv(n, block_n) * m
    steps = cdiv(k, 128)
    want = max(1, min(steps, cdiv(pps * sms, tiles)))
    per = cdiv(steps, want)
    splits, k_split = cdiv(steps, per), per * 128

    xp = permute_x(x, f32) if x_perm else x

    def call() -> torch.Tensor:
        xin = permute_x(x, f32) if permute_in_call else xp
        y = x.new_empty((m, n))
        part, locks = qm._split_buffers(splits, tiles, x, m, n)
        _gemv_thread_rows[(cdiv(n, block_n), splits, m)](
            xin, words, scales, y, part, locks, m, n, k, xin.stride(0), words.stride(0), scales.stride(0), n, k_split,
            GROUP_SIZE=128, BLOCK_N=block_n, SPLIT=splits > 1, X_PERM=x_perm, AHEAD=ahead, num_warps=warps, num_stages=1)
        return y
    return call


def sass(extra: tuple = ()) -> None:
    """sm_90 compilations of the probe and of the solution's GEMV: SASS instructions per weight in the main loop
    (nvdisasm, shipped with Triton), at 1x4096x14336. `extra`: more (label, kernel, x dtype, settings, weights a
    thread a step, weights tensor) to count the same way (w4a16_gemv16_probe.py's)."""
    import collections
    import os
    import subprocess
    import tempfile

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from autograder.portability import _bind

    nvdisasm = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    k, n = 4096, 14336
    w = torch.empty(n, k // 8, dtype=torch.int32, device="meta")
    s = torch.empty(n, k // 128, dtype=torch.float16, device="meta")
    y = torch.empty(1, n, dtype=torch.float16, device="meta")
    part = torch.empty(8, 1, n, dtype=torch.float32, device="meta")
    locks = torch.empty(1024, dtype=torch.int32, device="meta")

    def loop(label: str, jit, x_dtype: torch.dtype, kw: dict, weights_per_thread_step: int, words=w, extra_args=()) -> None:  # noqa: ANN001
        x = torch.empty(1, k, dtype=x_dtype, device="meta")
        args = (x, words, s, y, part, locks, 1, n, k, k, words.shape[1], k // 128, n, 1024, *extra_args)
        _, (sig, ce, attrs, opts) = _bind(jit, args, kw, 90)
        r = triton.compile(ASTSource(jit, sig, ce, attrs), target=GPUTarget("cuda", 90, 32), options=opts.__dict__)
        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
            f.write(r.asm["cubin"])
        text = subprocess.run([str(nvdisasm), "-c", "-g", f.name], capture_output=True, text=True, check=True).stdout
        os.unlink(f.name)
        lines = text.splitlines()
        ins = [(int(m.group(1), 16), m.group(2)) for m in (re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", x) for x in lines) if m]
        label_at = {}
        for i, line in enumerate(lines):
            m = re.match(r"\s*(\.L_x_\d+):", line)
            if m:
                nxt = next((re.search(r"/\*([0-9a-f]{4,})\*/", x) for x in lines[i + 1:] if re.search(r"/\*([0-9a-f]{4,})\*/", x)), None)
                if nxt is not None:  # a label after the last instruction has none
                    label_at[m.group(1)] = int(nxt.group(1), 16)
        body: list[str] = []
        for addr, txt in ins:  # the longest backward branch: the main loop
            m = re.search(r"BRA\s+`\((\.L_x_\d+)\)", txt)
            if m and label_at.get(m.group(1), addr + 1) < addr:
                cand = [t for a, t in ins if label_at[m.group(1)] <= a <= addr]
                body = cand if len(cand) > len(body) else body
        ops = collections.Counter(t.split()[1] if t.startswith("@") else t.split()[0] for t in body)
        print(f"{label}: {len(body)} SASS instructions in the loop for {weights_per_thread_step} weights a thread = "
              f"{len(body) / weights_per_thread_step:.2f} a weight; {ops.most_common(8)}")

    loop("solution, 32 rows, 2 warps, 128 codes a step", qm._w4a16_gemv_kernel, torch.float16,
         dict(GROUP_SIZE=128, BLOCK_N=32, BLOCK_W=16, EVEN_K=True, SPLIT=True, num_warps=2, num_stages=3), 32 * 128 // 64)
    loop("thread rows, x as given (fp16), 128 rows, 4 warps", _gemv_thread_rows, torch.float16,
         dict(GROUP_SIZE=128, BLOCK_N=128, SPLIT=True, X_PERM=False, num_warps=4, num_stages=1), 128)
    loop("thread rows, x permuted in float32, 256 rows, 4 warps", _gemv_thread_rows, torch.float32,
         dict(GROUP_SIZE=128, BLOCK_N=256, SPLIT=True, X_PERM=True, num_warps=4, num_stages=1), 256)
    for entry in extra:
        loop(*entry)


def main() -> None:
    if "--sass" in sys.argv:
        sass()
        return
    dry = "--dry" in sys.argv
    ahead_sweep = "--ahead" in sys.argv  # the second run: words requested one or two steps ahead, two ways of giving x
    dev = torch.device("cpu" if dry else "cuda")
    sms = 4 if dry else torch.cuda.get_device_properties(dev).multi_processor_count
    shapes = ((256, 96), (512, 40)) if dry else ((4096, 14336), (14336, 4096), (4096, 4096))
    dtypes = (torch.float32,) if dry else (torch.float16, torch.bfloat16)
    if ahead_sweep and not dry:
        shapes, dtypes = shapes[:2], dtypes[:1]
    grid = [(32, 1, 4), (64, 2, 2)] if dry else list(itertools.product((32, 64, 128, 256), (1, 2, 4), (4, 8, 16)))
    rows = []
    for dtype in dtypes:
        for k, n in shapes:
            torch.manual_seed(0)
            x = torch.randn(1, k, dtype=dtype, device=dev)
            w_packed = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
            words = w_packed.view(torch.int32)
            scales = (torch.rand(n, k // 128, device=dev) * 0.01 + 0.001).to(dtype)
            codes = torch.stack([(w_packed >> 4 * h) & 15 for h in (0, 1)], -1).reshape(n, k).double() - 8
            ref = x.double() @ (codes * scales.double().repeat_interleave(128, 1)).T
            fns = {}
            if not dry:
                fns["solution (public call)"] = lambda: qm.w4a16_matmul(x, w_packed, scales, 128)
            ways = ((False, False, False), (True, False, False), (True, True, False), (True, False, True), (True, True, True))
            aheads = (1,)
            if ahead_sweep:
                ways, aheads = ((False, False, False), (True, False, True)), (1, 2)
            for (block_n, warps, pps), (perm, in_call, f32), ahead in itertools.product(grid, ways, aheads):
                if block_n < 32 * warps:
                    continue
                f = launcher(block_n, warps, pps, x, words, scales, sms, perm, in_call, f32, ahead)
                got = f()
                err = float((got.double() - ref).abs().max() / ref.abs().mean())
                assert err < (1e-5 if dry else 2e-2), (block_n, warps, pps, perm, err)
                kind = "thread rows" + (" f32" if f32 else "") + (" x_perm, permuted in the call" if in_call else
                                                                   " x_perm, kernel alone" if perm else "")
                kind += f" ahead {ahead}" if ahead_sweep else ""
                fns[f"{kind} n{block_n} w{warps} p{pps}"] = f
            if dry:
                print(f"1x{k}x{n}: {len(fns)} settings correct")
                continue
            from autograder.timing import median, time_interleaved
            times = time_interleaved({label: (lambda i, f=f: f()) for label, f in fns.items()}, 1, 20, dev)
            best = {}
            for label, t in times.items():
                us = median(t) * 1e3
                rows.append({"dtype": str(dtype)[6:], "shape": f"1x{k}x{n}", "variant": label, "us": us})
                kind = label.split(" n")[0]
                if kind not in best or us < best[kind][1]:
                    best[kind] = (label, us)
            for kind, (label, us) in best.items():
                print(f"{str(dtype)[6:]} 1x{k}x{n} best {kind:22s} {us:7.2f} us  ({label})", flush=True)
    if not dry:
        from course.results import run_meta
        out = Path(sys.argv[1])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"w4a16_thread_rows_probe{'_ahead' if ahead_sweep else ''}.json").write_text(json.dumps({"meta": run_meta("w4a16_thread_rows_probe"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
