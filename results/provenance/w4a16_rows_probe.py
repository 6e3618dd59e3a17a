"""Probe (issue 20/22): a W4A16 GEMV that decodes each weight once for BLOCK_M activation rows (a static loop over
the rows, each reusing the decoded tile), against the solution's paths (the GEMV per row for M = 1, the dot kernel
above), at the decode block's shapes and M = 2 .. 16. Run from the repo root on a GPU:

    python results/provenance/w4a16_rows_probe.py OUT"""
import itertools, json, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch, triton, triton.language as tl
from autograder.timing import interleaved_ms
from course.loader import load_kernels
from course.launch import cdiv
from course.results import run_meta

qm = load_kernels("quant_matmul", "solutions")
_decode_nibbles, _nibble_unscale, _load_words, _finish_tile = qm._decode_nibbles, qm._nibble_unscale, qm._load_words, qm._finish_tile


@triton.jit
def rows_gemv(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
              k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_W: tl.constexpr, SPLIT: tl.constexpr):
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    unscale = _nibble_unscale(BLOCK_W)
    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    cols = tl.arange(0, BLOCK_M)[None, :]
    words = _load_words(w_rows, k_start, k_end, BLOCK_W, True)
    for k0 in range(k_start, k_end, BLOCK_K):
        following = _load_words(w_rows, tl.where(k0 + BLOCK_K < k_end, k0 + BLOCK_K, k_start), k_end, BLOCK_W, True)
        k = k0 + tl.arange(0, BLOCK_K)
        w = _decode_nibbles(words)  # (BLOCK_N, BLOCK_K)
        s = tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)  # one group per step
        for r in tl.static_range(BLOCK_M):
            row = tl.minimum(pid_m * BLOCK_M + r, M - 1).to(tl.int64)
            x = tl.load(x_ptr + row * stride_xm + k).to(tl.float32)
            dot = tl.sum(w * (x[None, :] * unscale), axis=1) * s  # (BLOCK_N,)
            acc += tl.where(cols == r, dot[:, None], 0.0)
        words = following
    mask = (offs_n < N)[:, None] & (offs_m < M)[None, :]
    tile_id = pid_m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None], part_ptr + offs_m[None, :] * N + offs_n[:, None],
                 mask, lock_ptr + tile_id, M * N, SPLIT)


def run_rows(x, words, scales, cfg, sms, locks):
    (m, k), n = x.shape, words.shape[0]
    bn, bm, bk, warps, per_sm, stages = cfg
    tiles = cdiv(n, bn) * cdiv(m, bm)
    k_steps = cdiv(k, bk)
    want = max(1, min(k_steps, cdiv(per_sm * sms, tiles)))
    steps = cdiv(k_steps, want)
    splits = cdiv(k_steps, steps)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    part = torch.empty((splits, m, n), dtype=torch.float32, device=x.device) if splits > 1 else y
    rows_gemv[(cdiv(n, bn), splits, cdiv(m, bm))](x, words, scales, y, part, locks, m, n, k, x.stride(0), words.stride(0),
        scales.stride(0), n, steps * bk, GROUP_SIZE=128, BLOCK_N=bn, BLOCK_M=bm, BLOCK_W=bk // 8, SPLIT=splits > 1,
        num_warps=warps, num_stages=stages)
    return y


out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
dev = torch.device("cuda"); sms = torch.cuda.get_device_properties(0).multi_processor_count
locks = torch.zeros(1 << 16, dtype=torch.int32, device=dev)
rows = []
shapes = [(4096, 14336), (4096, 6144), (4096, 28672), (14336, 4096), (4096, 4096)]
cands = [(bn, bm, bk, w, ps, st) for bn, bk, w, ps in itertools.product((16, 32, 64), (64, 128), (2, 4), (4, 8)) for bm in (2, 4, 8) for st in (3,)]
for m in (2, 4, 8, 16):
    for k, n in shapes:
        g = torch.Generator(device="cpu").manual_seed(m * 7 + n)
        x = torch.randn(m, k, generator=g).to(dev, torch.bfloat16)
        wp = torch.randint(0, 256, (n, k // 2), generator=g, dtype=torch.uint8).to(dev)
        sc = (torch.rand(n, k // 128, generator=g) * 0.02).to(dev, torch.bfloat16)
        words = wp.view(torch.int32)
        ref = qm.w4a16_matmul(x, wp, sc, 128).float()
        fns = {"solution": lambda: qm.w4a16_matmul(x, wp, sc, 128)}
        for cfg in cands:
            if cfg[1] > 2 * m:
                continue
            try:
                got = run_rows(x, words, sc, cfg, sms, locks).float()
            except Exception as e:  # out of resources
                continue
            err = ((got - ref).abs().max() / ref.abs().max()).item()
            if err > 1e-2:
                print("WRONG", m, k, n, cfg, err, flush=True); continue
            fns[str(cfg)] = lambda cfg=cfg: run_rows(x, words, sc, cfg, sms, locks)
        ms = interleaved_ms(fns, 20, dev)
        best = min((v, c) for c, v in ms.items() if c != "solution")
        row = {"M": m, "K": k, "N": n, "solution_us": ms["solution"] * 1e3, "best_us": best[0] * 1e3, "best_cfg": best[1],
               "all": {c: v * 1e3 for c, v in ms.items()}}
        rows.append(row)
        print(f"M={m:2d} K={k:5d} N={n:5d} solution {row['solution_us']:6.1f} us  rows-GEMV best {row['best_us']:6.1f} us {best[1]}  "
              f"({row['solution_us'] / row['best_us']:.2f}x)", flush=True)
(out / "w4a16_rows_probe.json").write_text(json.dumps({"meta": run_meta("w4a16_rows_probe"), "rows": rows}, indent=1))
