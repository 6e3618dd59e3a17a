"""Issue 22, W4A16 at M = 1: does the GEMV's way of walking the weights cap it? A probe, not course code.

Kernels that only read the W4 weights (the same 29.4 MB of int32 words as at 1x4096x14336 and 1x14336x4096) and
fold them into one int32 per row, with the GEMV's access pattern: a program per (BLOCK_N rows, slice of K), the
slices from the same split rule (about P programs per SM), BLOCK_W words of each row per step, the next step's
words requested before this step's are used. Swept over BLOCK_W (16 bytes to 1 KB of a row per step), BLOCK_N,
warps and P, beside a flat read of the same bytes in 16 KB blocks. Timed as the grader times (flushed L2,
medians of 20, interleaved).

    python results/provenance/w4a16_read_pattern_probe.py OUT          # on a GPU: OUT/w4a16_read_pattern_probe.json
    TRITON_INTERPRET=1 python results/provenance/w4a16_read_pattern_probe.py --dry
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from course.launch import cdiv  # noqa: E402


@triton.jit
def _read_rows(w_ptr, out_ptr, N, K8, w_per_split, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr):
    """Program (i, p): rows i * BLOCK_N .. of w (N, K8) int32, words [p * w_per_split, ...), BLOCK_W a step."""
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    rows = tl.minimum(pid_n * BLOCK_N + tl.arange(0, BLOCK_N), N - 1).to(tl.int64)
    w_rows = w_ptr + rows[:, None] * K8
    start = pid_k * w_per_split
    end = tl.minimum(start + w_per_split, K8)
    offs = tl.arange(0, BLOCK_W)
    acc = tl.zeros([BLOCK_N, BLOCK_W], dtype=tl.int32)
    words = tl.load(w_rows + tl.multiple_of(start, 4) + offs[None, :])
    for w0 in range(start, end, BLOCK_W):
        nxt = tl.where(w0 + BLOCK_W < end, w0 + BLOCK_W, start)
        following = tl.load(w_rows + tl.multiple_of(nxt, 4) + offs[None, :])
        acc ^= words
        words = following
    tl.store(out_ptr + pid_k * N + rows, tl.xor_sum(acc, axis=1))


@triton.jit
def _read_flat(w_ptr, out_ptr, total, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(w_ptr + offs, mask=offs < total, other=0)
    tl.store(out_ptr + tl.program_id(0), tl.xor_sum(v, axis=0))


def main() -> None:
    dry = "--dry" in sys.argv
    dev = torch.device("cpu" if dry else "cuda")
    sms = 4 if dry else torch.cuda.get_device_properties(dev).multi_processor_count
    shapes = ((256, 24),) if dry else ((4096, 14336), (14336, 4096))
    widths = (4, 16) if dry else (4, 16, 32, 64, 128, 256)
    blocks = (8,) if dry else (16, 32, 64, 128)
    warps_all = (1,) if dry else (2, 4, 8)
    pps_all = (2,) if dry else (2, 4, 8, 16)
    rows = []
    for k, n in shapes:
        k8 = k // 8
        w = torch.randint(-2**31, 2**31 - 1, (n, k8), dtype=torch.int32, device=dev)
        ref = torch.zeros(n, dtype=torch.int64, device=dev)
        for j in range(k8):  # xor over each row, for the check
            ref ^= w[:, j].to(torch.int64) & 0xFFFFFFFF
        fns = {}
        out_flat = torch.empty(cdiv(n * k8, 4096), dtype=torch.int32, device=dev)
        fns["flat 16 KB blocks"] = lambda: _read_flat[(cdiv(n * k8, 4096),)](w, out_flat, n * k8, BLOCK=4096, num_warps=8)
        for bw, bn, warps, pps in itertools.product(widths, blocks, warps_all, pps_all):
            if bw * bn > 8192 or bw * bn < 32 * warps:
                continue
            tiles = cdiv(n, bn)
            steps = cdiv(k8, bw)
            want = max(1, min(steps, cdiv(pps * sms, tiles)))
            per = cdiv(steps, want)
            splits = cdiv(steps, per)
            out = torch.empty(splits, n, dtype=torch.int32, device=dev)

            def f(bw=bw, bn=bn, warps=warps, per=per, splits=splits, out=out) -> None:
                _read_rows[(cdiv(n, bn), splits)](w, out, n, k8, per * bw, BLOCK_N=bn, BLOCK_W=bw, num_warps=warps)

            f()
            got = torch.zeros(n, dtype=torch.int64, device=dev)
            for p in range(splits):
                got ^= out[p].to(torch.int64) & 0xFFFFFFFF
            assert torch.equal(got, ref), (bw, bn, warps, pps)
            fns[f"rows: {4 * bw} B a row a step, n{bn} w{warps} p{pps} ({splits} splits)"] = f
        if dry:
            print(f"{n}x{k8} words: {len(fns) - 1} settings correct")
            continue
        from autograder.timing import median, time_interleaved
        times = time_interleaved({label: (lambda i, f=f: f()) for label, f in fns.items()}, 1, 20, dev)
        by_width: dict[str, tuple[str, float]] = {}
        for label, t in times.items():
            us = median(t) * 1e3
            rows.append({"shape": f"1x{k}x{n}", "variant": label, "us": us, "gbps": w.numel() * 4 / us / 1e3})
            kind = label.split(",")[0]
            if kind not in by_width or us < by_width[kind][1]:
                by_width[kind] = (label, us)
        for kind, (label, us) in by_width.items():
            print(f"1x{k}x{n} {kind:28s} best {us:6.2f} us {w.numel() * 4 / us / 1e3:6.0f} GB/s  ({label})", flush=True)
    if not dry:
        from course.results import run_meta
        out_dir = Path(sys.argv[1])
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "w4a16_read_pattern_probe.json").write_text(json.dumps({"meta": run_meta("w4a16_read_pattern_probe"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
