"""Issue 22, W4A16 at M = 1: is the GEMV short of loads in flight? The solution's GEMV requests the next step's
words before this step's math (one step ahead). Two variants of it, everything else the same:

- "ahead2": two steps ahead (three steps' words live in registers);
- "tl.range": no prefetch by hand, the loop a tl.range with num_stages, left to Triton's pipeliner.

Each timed with the solution's kernel under a small sweep of settings (channels per program, warps, programs per
SM), the grader's timing (flush, spin, events; medians of 20), on the three Llama-3-8B shapes, fp16; every
output checked against the solution's.

    python results/provenance/w4a16_prefetch_probe.py OUT"""
import itertools, json, statistics, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
import triton
import triton.language as tl
from autograder.timing import median, time_interleaved
from course.device import device_of
from course.launch import cdiv
from course.loader import load_kernels
from course.results import run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
qm = load_kernels("quant_matmul", "solutions")
_decode_nibbles, _nibble_unscale, _load_words, _finish_tile = qm._decode_nibbles, qm._nibble_unscale, qm._load_words, qm._finish_tile


@triton.jit
def _gemv_ahead2(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
                 k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr,
                 EVEN_K: tl.constexpr, SPLIT: tl.constexpr):
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    m = tl.program_id(2).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_row = x_ptr + m * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    unscale = _nibble_unscale(BLOCK_W)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    words = _load_words(w_rows, k_start, k_end, BLOCK_W, EVEN_K)
    second = _load_words(w_rows, tl.where(k_start + BLOCK_K < k_end, k_start + BLOCK_K, k_start), k_end, BLOCK_W, EVEN_K)
    for k0 in range(k_start, k_end, BLOCK_K):
        third = _load_words(w_rows, tl.where(k0 + 2 * BLOCK_K < k_end, k0 + 2 * BLOCK_K, k_start), k_end, BLOCK_W, EVEN_K)
        k = k0 + tl.arange(0, BLOCK_K)
        if EVEN_K:
            x = tl.load(x_row + k)
        else:
            x = tl.load(x_row + k, mask=k < k_end, other=0.0)
        xw = _decode_nibbles(words) * (x.to(tl.float32)[None, :] * unscale)
        if GROUP_SIZE % BLOCK_K == 0:
            acc += tl.sum(xw, axis=1) * tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        else:
            s = tl.load(s_rows[:, None] + (k // GROUP_SIZE)[None, :], mask=(k < k_end)[None, :], other=0.0)
            acc += tl.sum(xw * s.to(tl.float32), axis=1)
        words = second
        second = third
    tile_id = m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + m * stride_ym + offs_n, part_ptr + m * N + offs_n, n_mask, lock_ptr + tile_id, M * N, SPLIT)


@triton.jit
def _gemv_tlrange(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
                  k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr,
                  EVEN_K: tl.constexpr, SPLIT: tl.constexpr, STAGES: tl.constexpr):
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    m = tl.program_id(2).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_row = x_ptr + m * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    unscale = _nibble_unscale(BLOCK_W)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in tl.range(k_start, k_end, BLOCK_K, num_stages=STAGES):
        words = _load_words(w_rows, k0, k_end, BLOCK_W, EVEN_K)
        k = k0 + tl.arange(0, BLOCK_K)
        if EVEN_K:
            x = tl.load(x_row + k)
        else:
            x = tl.load(x_row + k, mask=k < k_end, other=0.0)
        xw = _decode_nibbles(words) * (x.to(tl.float32)[None, :] * unscale)
        if GROUP_SIZE % BLOCK_K == 0:
            acc += tl.sum(xw, axis=1) * tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        else:
            s = tl.load(s_rows[:, None] + (k // GROUP_SIZE)[None, :], mask=(k < k_end)[None, :], other=0.0)
            acc += tl.sum(xw * s.to(tl.float32), axis=1)
    tile_id = m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + m * stride_ym + offs_n, part_ptr + m * N + offs_n, n_mask, lock_ptr + tile_id, M * N, SPLIT)


KERNELS = {"solution": (qm._w4a16_gemv_kernel, {}), "ahead2": (_gemv_ahead2, {}),
           "tl.range 3": (_gemv_tlrange, {"STAGES": 3}), "tl.range 4": (_gemv_tlrange, {"STAGES": 4})}


def launcher(name, block_n, warps, pps, x, words, scales, block_k=128):
    kernel, extra = KERNELS[name]
    (m, k), n = x.shape, words.shape[0]
    tiles = cdiv(n, block_n) * m
    splits, k_split = qm._split_k(tiles, k, block_k, pps, device_of(x))

    def call():
        y = x.new_empty((m, n))
        part, locks = qm._split_buffers(splits, tiles, x, m, n)
        kernel[(cdiv(n, block_n), splits, m)](x, words, scales, y, part, locks, m, n, k, x.stride(0), words.stride(0),
                                              scales.stride(0), n, k_split, GROUP_SIZE=128, BLOCK_N=block_n,
                                              BLOCK_W=block_k // 8, EVEN_K=k % block_k == 0, SPLIT=splits > 1,
                                              num_warps=warps, num_stages=3, **extra)
        return y
    return call


dev = torch.device("cuda")
rows = []
for k, n in ((4096, 14336), (14336, 4096), (4096, 4096)):
    torch.manual_seed(0)
    x = torch.randn(1, k, dtype=torch.float16, device=dev)
    w_packed = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
    words = w_packed.view(torch.int32)
    scales = (torch.rand(n, k // 128, device=dev) * 0.01 + 0.001).to(torch.float16)
    ref = qm.w4a16_matmul(x, w_packed, scales, 128)
    fns = {"public call": lambda i: qm.w4a16_matmul(x, w_packed, scales, 128)}
    for name, block_n, warps, pps in itertools.product(KERNELS, (32, 64), (2, 4), (4, 8, 16)):
        f = launcher(name, block_n, warps, pps, x, words, scales)
        try:
            got = f()
            torch.cuda.synchronize()
            err = float((got.float() - ref.float()).abs().max() / ref.float().abs().mean())
            if err > 1e-2:
                print("wrong", name, block_n, warps, pps, err, flush=True)
                continue
        except Exception as e:  # noqa: BLE001
            print("failed", name, block_n, warps, pps, repr(e)[:200], flush=True)
            continue
        fns[f"{name} n{block_n} w{warps} p{pps}"] = lambda i, f=f: f()
    times = time_interleaved(fns, 1, 20, dev)
    best = {}
    for label, t in times.items():
        us = median(t) * 1e3
        rows.append({"shape": f"1x{k}x{n}", "variant": label, "us": us})
        kind = label.split(" n")[0]
        if kind not in best or us < best[kind][1]:
            best[kind] = (label, us)
    for kind, (label, us) in best.items():
        print(f"1x{k}x{n} best {kind:12s} {us:7.2f} us  ({label})", flush=True)
(out / "w4a16_prefetch_probe.json").write_text(json.dumps({"meta": run_meta("w4a16_prefetch_probe"), "rows": rows}, indent=1))
