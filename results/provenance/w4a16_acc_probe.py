"""Issue 22, W4A16 at M = 1: what the GEMV's loop body costs. The solution's PTX for one step (BLOCK_N = 32,
128 codes, 2 warps) holds 32 warp shuffles and 6 barriers: tl.sum over the step's codes crosses threads and
warps on every step. Variants, everything else as the solution's kernel:

- "acc2": a (BLOCK_N, BLOCK_K) float32 accumulator, each weight times its scale added in place (one FMA), and
  one sum across threads after the loop;
- "acc2 fma": the same, with the decode and the product with x in one FMA: for v = 2**23 + q * 2**b (the word's
  bits under the magic exponent) and x' = x * 2**-b, fma(v, x', -2**23 * x') = q * x rounded once; the zero
  point comes off per group and row as 8 * s * sum(x), sum(x) shared by all rows;
- "fma": that decode with the solution's per-step sum;
- not timed: X2D, x loaded as a (1, BLOCK_K) tile rather than a vector then broadcast (the solution's PTX moves
  x through shared memory, stmatrix, ldmatrix and two barriers, on every step): compiled for sm_90, its loop
  holds 16 to 19 barriers a step instead of 2.

Timed with the solution's kernel under a small sweep of settings (channels per program, warps, programs per
SM), the grader's timing (flush, spin, events; medians of 20), on the three Llama-3-8B shapes, fp16; every
output checked against a float64 product of the dequantized weights.

    python results/provenance/w4a16_acc_probe.py OUT"""
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
_planes_to_k = qm._planes_to_k



MAGIC = tl.constexpr(0x4B000000)
TWO_23 = tl.constexpr(8388608.0)


@triton.jit
def _raw(word_magic, mask: tl.constexpr):
    """2**23 + v * 2**b as float32, exactly, for the field v = word & mask (bits b..)."""
    return (word_magic & (MAGIC | mask)).to(tl.float32, bitcast=True)


@triton.jit
def _raw_nibbles(words):
    lo = words | MAGIC
    hi = (words >> 12) | MAGIC
    return _planes_to_k(_raw(lo, 0x0000F), _raw(lo, 0x000F0), _raw(lo, 0x00F00), _raw(lo, 0x0F000), _raw(lo, 0xF0000),
                           _raw(hi, 0x00F00), _raw(hi, 0x0F000), _raw(hi, 0xF0000))


@triton.jit
def _gemv_variant(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
                  k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_W: tl.constexpr,
                  EVEN_K: tl.constexpr, SPLIT: tl.constexpr, ACC2: tl.constexpr, FMA: tl.constexpr,
                  X2D: tl.constexpr):
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    tl.static_assert(GROUP_SIZE == BLOCK_K)
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
    acc2 = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    zeros = tl.zeros([BLOCK_N], dtype=tl.float32)  # sum over groups of s * sum(x): the zero point's share
    words = _load_words(w_rows, k_start, k_end, BLOCK_W, EVEN_K)
    for k0 in range(k_start, k_end, BLOCK_K):
        following = _load_words(w_rows, tl.where(k0 + BLOCK_K < k_end, k0 + BLOCK_K, k_start), k_end, BLOCK_W, EVEN_K)
        k = k0 + tl.arange(0, BLOCK_K)
        s = tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
        if X2D:  # x loaded as a (1, BLOCK_K) tile, in the layout of the weights' tile
            x2 = tl.load(x_row + k[None, :]).to(tl.float32)
        else:
            x2 = tl.load(x_row + k).to(tl.float32)[None, :]
        xs = x2 * unscale
        if FMA:
            t = _raw_nibbles(words) * xs + (-TWO_23 * xs)  # one FMA: q * x
            zeros += s * tl.sum(tl.sum(x2, axis=1), axis=0)
        else:
            t = _decode_nibbles(words) * xs  # (q - 8) * x
        if ACC2:
            acc2 += t * s[:, None]
        else:
            acc += tl.sum(t, axis=1) * s
        words = following
    if ACC2:
        acc = tl.sum(acc2, axis=1)
    if FMA:
        acc = acc - 8.0 * zeros
    tile_id = m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + m * stride_ym + offs_n, part_ptr + m * N + offs_n, n_mask, lock_ptr + tile_id, M * N, SPLIT)


KERNELS = {"solution": (qm._w4a16_gemv_kernel, {}),
           "acc2": (_gemv_variant, {"ACC2": True, "FMA": False, "X2D": False}),
           "acc2 fma": (_gemv_variant, {"ACC2": True, "FMA": True, "X2D": False}),
           "fma": (_gemv_variant, {"ACC2": False, "FMA": True, "X2D": False})}


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
    q = torch.stack((w_packed & 15, w_packed >> 4), dim=-1).reshape(n, k).double() - 8
    exact = x.double() @ (q * scales.double().repeat_interleave(128, dim=1)).T  # float64 product of the dequantized weights
    fns = {"public call": lambda i: qm.w4a16_matmul(x, w_packed, scales, 128)}
    errors = {}
    for name, block_n, warps, pps in itertools.product(KERNELS, (16, 32, 64), (1, 2, 4), (4, 8, 16)):
        f = launcher(name, block_n, warps, pps, x, words, scales)
        try:
            got = f()
            torch.cuda.synchronize()
            err = float((got.double() - exact).abs().max() / exact.abs().mean())
            errors[f"{name} n{block_n} w{warps} p{pps}"] = round(err, 6)
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
    ref_err = float((ref.double() - exact).abs().max() / exact.abs().mean())
    for kind, (label, us) in best.items():
        print(f"1x{k}x{n} best {kind:12s} {us:7.2f} us  ({label})", flush=True)
    worst = {}
    for lab, e in errors.items():
        worst[lab.split(" n")[0]] = max(worst.get(lab.split(" n")[0], 0.0), e)
    print(f"1x{k}x{n} largest error / mean|y|: public call {ref_err:.2e}, variants {worst}", flush=True)
    rows.append({"shape": f"1x{k}x{n}", "errors": errors, "public_call_error": ref_err})
(out / "w4a16_acc_probe.json").write_text(json.dumps({"meta": run_meta("w4a16_acc_probe"), "rows": rows}, indent=1))
