"""Issues 22 and 09/08's misses: does the grader's L2 flush (a 256+ MiB buffer zeroed before every timed call)
slow the timed call down by leaving the L2 full of dirty lines, which must be written back to memory while
the call reads? Each workload is timed as autograder/timing.py times it (flush, device-side spin, events
around the call, synchronize), with two flushes in turn, call by call:

- "zero": the grader's flush, buffer.zero_() (the L2 ends full of dirty lines of that buffer);
- "zero+read": the same, then a read of a second buffer as large (its lines replace the dirty ones, whose
  write-back happens before the call; the L2 ends full of clean lines, and the call's data are still cold).

Workloads: a Triton kernel that only reads (int32 words summed per program) at 8 MB to 1 GiB; the W4A16
solution at M = 1 on the three Llama-3-8B shapes (fp16); cuBLAS fp16 at M = 1 (x @ W.T); the decode attention
solution (8 x 32 query and 8 KV heads, D = 128, bf16) at 4096 and 16384 keys; a device copy of 1 GiB.
Medians of 30 calls per flush; the copy bandwidth is the 1 GiB copy's under each flush.

    python results/provenance/flush_dirty.py OUT"""
import json, statistics, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
import triton
import triton.language as tl
from autograder.timing import HEAD_START_US, _sleep_cycles_per_us, flush_buffer
from course.loader import load_kernels
from course.results import run_meta

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
dev = torch.device("cuda")
meta = run_meta("flush_dirty")


@triton.jit
def _read_kernel(src, dst, n_words, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    words = tl.load(src + offs, mask=offs < n_words, other=0)
    tl.store(dst + tl.program_id(0), tl.sum(words, axis=0))


def read_fn(n_bytes: int):
    src = torch.randint(-1000, 1000, (n_bytes // 4,), dtype=torch.int32, device=dev)
    block = 8192
    dst = torch.empty(triton.cdiv(src.numel(), block), dtype=torch.int32, device=dev)
    return lambda: _read_kernel[(dst.numel(),)](src, dst, src.numel(), BLOCK=block, num_warps=8)


flush = flush_buffer(dev)
cleaner = torch.empty_like(flush)
cleaner.fill_(1)
sink = torch.empty((), dtype=torch.int64, device=dev)
spin = _sleep_cycles_per_us(dev) * HEAD_START_US


def timed(fn, mode: str) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush.zero_()
    if mode == "zero+read":
        torch.sum(cleaner, dim=0, dtype=torch.int64, out=sink)
    torch.cuda._sleep(spin)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3  # us


def measure(fn, reps: int = 30) -> dict:
    for _ in range(5):
        fn()
    got = {"zero": [], "zero+read": []}
    for r in range(reps):
        for mode in (("zero", "zero+read") if r % 2 == 0 else ("zero+read", "zero")):
            got[mode].append(timed(fn, mode))
    return {m: statistics.median(v) for m, v in got.items()}


rows = []
copy_src = torch.empty(1 << 29, dtype=torch.bfloat16, device=dev).normal_()
copy_dst = torch.empty_like(copy_src)
copy = measure(lambda: copy_dst.copy_(copy_src), reps=20)
copy_bw = {m: 2 * copy_src.numel() * 2 / (t * 1e-6) / 1e12 for m, t in copy.items()}  # TB/s, read + write
rows.append({"workload": "copy 1 GiB", "bytes": 2 * copy_src.numel() * 2, **{f"us {m}": t for m, t in copy.items()}})
print("copy bandwidth TB/s", copy_bw, flush=True)
del copy_src, copy_dst

for mb in (8, 16, 30, 64, 134, 256, 512, 1024):
    t = measure(read_fn(mb << 20))
    rows.append({"workload": f"read {mb} MiB", "bytes": mb << 20, **{f"us {m}": v for m, v in t.items()}})

qm = load_kernels("quant_matmul", "solutions")
for k, n in ((4096, 14336), (14336, 4096), (4096, 4096)):
    x = torch.randn(1, k, dtype=torch.float16, device=dev)
    w_packed = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
    scales = (torch.rand(n, k // 128, device=dev) * 0.01).to(torch.float16)
    w16 = torch.randn(n, k, dtype=torch.float16, device=dev)
    nbytes = w_packed.numel() + scales.numel() * 2 + x.numel() * 2 + n * 2
    t = measure(lambda: qm.w4a16_matmul(x, w_packed, scales, 128))
    rows.append({"workload": f"W4A16 1x{k}x{n}", "bytes": nbytes, **{f"us {m}": v for m, v in t.items()}})
    t = measure(lambda: x @ w16.T)
    rows.append({"workload": f"cuBLAS fp16 1x{k}x{n}", "bytes": w16.numel() * 2, **{f"us {m}": v for m, v in t.items()}})
    del w16

fa = load_kernels("flash_attention", "solutions")
for keys in (4096, 16384):
    q = torch.randn(8, 32, 1, 128, dtype=torch.bfloat16, device=dev)
    kk = torch.randn(8, 8, keys, 128, dtype=torch.bfloat16, device=dev)
    vv = torch.randn_like(kk)
    t = measure(lambda: fa.flash_attention(q, kk, vv, causal=False))
    rows.append({"workload": f"decode 8x32/8x{keys}", "bytes": 2 * kk.numel() * 2, **{f"us {m}": v for m, v in t.items()}})
    t = measure(lambda: torch.nn.functional.scaled_dot_product_attention(q, kk, vv, enable_gqa=True))
    rows.append({"workload": f"SDPA decode 8x32/8x{keys}", "bytes": 2 * kk.numel() * 2, **{f"us {m}": v for m, v in t.items()}})

for r in rows:
    for m in ("zero", "zero+read"):
        r[f"pct of copy {m}"] = 100 * r["bytes"] / (r[f"us {m}"] * 1e-6) / 1e12 / copy_bw[m] if not r["workload"].startswith("copy") else 100.0
    print(f"{r['workload']:28s} zero {r['us zero']:9.1f} us ({r['pct of copy zero']:5.1f}%)   zero+read {r['us zero+read']:9.1f} us ({r['pct of copy zero+read']:5.1f}%)", flush=True)
(out / "flush_dirty.json").write_text(json.dumps({"meta": meta, "copy_TBps": copy_bw, "rows": rows}, indent=1))
