"""Issue 22, softmax over vocabulary rows: does a persistent grid (few rows in flight, so the second pass re-reads
from L2) beat the solution? bf16, 1024x128256 and 4096x32000; do_bench (L2 flushed between reps), % of copy."""
import sys, json, os
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch, triton, triton.language as tl
from triton.testing import do_bench
from solutions.fusion import kernels as fk

@triton.jit
def softmax_persistent(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    for row in range(pid, n_rows, nprog):
        x_row = x_ptr + row.to(tl.int64) * stride
        y_row = y_ptr + row.to(tl.int64) * stride
        m = tl.full([BLOCK_N], -float("inf"), dtype=tl.float32)
        s = tl.zeros([BLOCK_N], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            x = tl.load(x_row + c, mask=c < n_cols, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            m_sub = tl.where(m_new == -float("inf"), 0.0, m_new)
            s = s * tl.exp(m - m_sub) + tl.exp(x - m_sub)
            m = m_new
        row_max = tl.max(m, 0)
        inv = 1.0 / tl.sum(s * tl.exp(m - row_max), 0)
        for start in range(0, n_cols, BLOCK_N):
            c = start + cols
            x = tl.load(x_row + c, mask=c < n_cols, other=-float("inf")).to(tl.float32)
            tl.store(y_row + c, (tl.exp(x - row_max) * inv).to(y_ptr.dtype.element_ty), mask=c < n_cols)

dev = torch.device("cuda")
sms = torch.cuda.get_device_properties(dev).multi_processor_count
rows = []
for m, n in ((1024, 128256), (4096, 32000)):
    x = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
    ref = torch.softmax(x.float(), -1)
    nbytes = 2 * x.numel() * 2
    buf = torch.empty_like(x)
    copy_us = do_bench(lambda: buf.copy_(x), rep=200) * 1e3
    sol_us = do_bench(lambda: fk.softmax(x), rep=200) * 1e3
    err = (fk.softmax(x).float() - ref).abs().max().item()
    rows.append({"shape": [m, n], "impl": "solution", "us": sol_us, "pct_copy": 100 * copy_us / sol_us, "err": err})
    for mult in (1, 2, 4):
        for block_n in (2048, 4096, 8192):
            for warps in (4, 8, 16):
                y = torch.empty_like(x)
                grid = (min(m, mult * sms),)
                f = lambda: softmax_persistent[grid](x, y, m, n, n, BLOCK_N=block_n, num_warps=warps)
                try:
                    f(); torch.cuda.synchronize()
                    err = (y.float() - ref).abs().max().item()
                    us = do_bench(f, rep=200) * 1e3
                except Exception as e:
                    print("fail", mult, block_n, warps, str(e)[:100]); continue
                rows.append({"shape": [m, n], "impl": f"persistent {mult}/SM tile {block_n} {warps}w", "us": us, "pct_copy": 100 * copy_us / us, "err": err})
    print(f"{m}x{n}: copy {copy_us:.1f} us ({nbytes / copy_us / 1e3:.0f} GB/s)")
    for r in sorted([r for r in rows if r["shape"] == [m, n]], key=lambda r: r["us"])[:8]:
        print(f"   {r['impl']:38s} {r['us']:8.1f} us  {r['pct_copy']:5.1f}% of copy  max err {r['err']:.1e}")
    print(f"   solution: {[r for r in rows if r['shape'] == [m, n] and r['impl'] == 'solution'][0]['us']:.1f} us")
out = os.environ.get("OUT", "/tmp")
json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__, "rows": rows},
          open(f"{out}/softmax_l2.json", "w"), indent=1)
