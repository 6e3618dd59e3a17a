"""Sweep the RMSNorm solution's launch settings on a GPU; prints the best per shape (used to pick _fwd_config)."""

from __future__ import annotations

import itertools

import torch
import triton

from autograder import timing
from course.loader import load_kernels

k = load_kernels("rmsnorm", "solutions")
dev = torch.device("cuda")
copy = timing.copy_bandwidth_gbps(dev)
print(f"copy {copy:.0f} GB/s")

# Host cost of one call, queued back to back on a tiny input: the wrapper's layers one by one.
xs = torch.randn(4, 256, device=dev, dtype=torch.bfloat16)
ws = torch.randn(256, device=dev, dtype=torch.bfloat16)
ys = torch.empty_like(xs)
layers = {
    "kernel launch": lambda: k._rmsnorm_fwd_kernel[(1,)](xs, ws, ys, xs, 4, 256, 256, 256, 1e-6, BLOCK_M=4, BLOCK_N=256,
                                                         SINGLE_TILE=True, STORE_RSTD=False, num_warps=4),
    "rmsnorm_forward": lambda: k.rmsnorm_forward(xs, ws, 1e-6, False),
    "RMSNormFunction.apply": lambda: k.RMSNormFunction.apply(xs, ws, 1e-6),
    "rmsnorm (checks + apply)": lambda: k.rmsnorm(xs, ws, 1e-6),
    "torch.empty_like": lambda: torch.empty_like(xs),
    "F.rms_norm": lambda: torch.nn.functional.rms_norm(xs, (256,), ws, 1e-6),
}
for name, fn in layers.items():
    print(f"host {name:28s} {timing.host_overhead_us(fn):7.1f} us/call")

for (m, n) in [(32, 4096), (1024, 4096), (4096, 4096), (16384, 4096), (4096, 8192), (16384, 8192), (8192, 14336), (65536, 512), (16384, 1024)]:
    x = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, device=dev, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    block_n = min(triton.next_power_of_2(n), k.MAX_FUSED_COLS)
    res = []
    bms = [1, 2, 4, 8, 16] if block_n <= 2048 else [1, 2, 4] if block_n <= 4096 else [1, 2] if block_n <= 8192 else [1]
    for bm, nw in itertools.product(bms, [2, 4, 8, 16, 32]):
        if bm * block_n // (nw * 32) < 1:
            continue
        def run(i, bm=bm, nw=nw):
            k._rmsnorm_fwd_kernel[(triton.cdiv(m, bm),)](x, w, y, x, m, n, n, n, 1e-6, BLOCK_M=bm, BLOCK_N=block_n,
                                                          SINGLE_TILE=block_n >= n, STORE_RSTD=False, num_warps=nw)
        try:
            t = timing.median(timing.time_interleaved({"k": run}, 1, 20, dev, warmup_ms=20)["k"])
        except Exception as e:  # noqa: BLE001
            print("fail", bm, nw, e)
            continue
        res.append((t, bm, nw))
    res.sort()
    cur = k._fwd_config(m, n)
    gb = lambda t: (2 * m * n + n) * 2 / (t * 1e-3) / 1e9
    print(f"fwd {m}x{n}: best BLOCK_M={res[0][1]} warps={res[0][2]} {res[0][0]*1e3:.1f}us {gb(res[0][0]):.0f} GB/s "
          f"({100*gb(res[0][0])/copy:.0f}%); current {cur} -> " +
          ", ".join(f"bm{bm}/w{nw}:{gb(t):.0f}" for t, bm, nw in sorted(res, key=lambda r: (r[1], r[2]))))

# Backward: programs per SM and warps.
sms = torch.cuda.get_device_properties(0).multi_processor_count
for (m, n) in [(4096, 4096), (16384, 4096), (4096, 8192), (16384, 8192)]:
    x = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, device=dev, dtype=torch.bfloat16)
    dy = torch.randn_like(x)
    rstd = torch.rand(m, device=dev) + 0.5
    dx = torch.empty_like(x)
    block_n = min(triton.next_power_of_2(n), k.MAX_FUSED_COLS)
    res = []
    for per_sm, nw in itertools.product([1, 2, 4, 8], [4, 8, 16]):
        P = min(m, per_sm * sms)
        part = torch.empty(P, n, device=dev, dtype=torch.float32)
        dw = torch.empty_like(w)
        def run(i, P=P, nw=nw, part=part, dw=dw):
            k._rmsnorm_bwd_dx_kernel[(P,)](x, w, rstd, dy, dx, part, m, n, n, n, n, BLOCK_N=block_n, SINGLE_TILE=True, num_warps=nw)
            k._rmsnorm_bwd_dw_kernel[(triton.cdiv(n, 128),)](part, dw, P, n, BLOCK_P=32, BLOCK_N=128, num_warps=4)
        t = timing.median(timing.time_interleaved({"k": run}, 1, 20, dev, warmup_ms=20)["k"])
        res.append((t, per_sm, nw))
    res.sort()
    gb = lambda t: (3 * m * n + 2 * n) * 2 / (t * 1e-3) / 1e9
    print(f"bwd {m}x{n}: best per_sm={res[0][1]} warps={res[0][2]} {res[0][0]*1e3:.1f}us {gb(res[0][0]):.0f} GB/s ({100*gb(res[0][0])/copy:.0f}%) | " +
          ", ".join(f"p{p}/w{nw}:{gb(t):.0f}" for t, p, nw in sorted(res, key=lambda r: (r[1], r[2]))))
