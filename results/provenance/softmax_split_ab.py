"""Issue 22, softmax over rows longer than one tile: the solution (each row split into chunks of 8192 columns, one
program each, the row's programs exchanging their (max, sum) and each writing its own chunk) against the kernel it
replaced (one program per row, two walks over it: an online max-and-sum, then the writes; tiles of 4096 with 16 warps
on the H200, 8192 with 16 on the H100, as configs.json had them), torch.softmax and a copy of the same bytes, in one
process. Medians of triton.testing.do_bench (L2 flushed). JSON to argv[1], a markdown table to argv[2].
`python results/provenance/softmax_split_ab.py OUT.json OUT.md`
"""
import json
import sys
import time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

sys.path.insert(0, ".")
import solutions.fusion.kernels as K  # noqa: E402

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def walked_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    """The looped path of the solution before 2026-11-28 (BLOCK_M = 1): one program per row, two walks."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    m = tl.full([BLOCK_N], -float("inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        c = start + cols
        x = tl.load(x_row + c, mask=c < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_sub = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp2((m - m_sub) * LOG2E) + tl.exp2((x - m_sub) * LOG2E)
        m = m_new
    row_max = tl.max(m, axis=0)
    inv_sum = 1.0 / tl.sum(s * tl.exp2((m - row_max) * LOG2E), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        c = start + cols
        x = tl.load(x_row + c, mask=c < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(y_row + c, (tl.exp2((x - row_max) * LOG2E) * inv_sum).to(y_ptr.dtype.element_ty), mask=c < n_cols)


BEFORE_TILE = {"NVIDIA H200": 4096, "NVIDIA H100 80GB HBM3": 8192}


def walked(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    walked_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                 BLOCK_N=BEFORE_TILE.get(torch.cuda.get_device_name(), 4096), num_warps=16)
    return y


SHAPES = [(1024, 128256, torch.bfloat16), (4096, 128256, torch.bfloat16), (256, 128256, torch.bfloat16),
          (1024, 65536, torch.bfloat16), (2048, 40000, torch.bfloat16), (2048, 50257, torch.bfloat16),
          (1024, 128256, torch.float16), (1024, 128256, torch.float32), (4, 1500007, torch.bfloat16),
          (64, 1500007, torch.float32)]


def main() -> None:
    def us(fn):
        return do_bench(fn, warmup=25, rep=300, return_mode="median") * 1e3

    rows = []
    for M, N, dt in SHAPES:
        torch.manual_seed(0)
        x = (torch.randn(M, N, device="cuda") * 4).to(dt)
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), -1)
        errs = {"solution": (K.softmax(x).double() - ref).abs().max().item(),
                "before": (walked(x).double() - ref).abs().max().item()}
        t = {"copy": us(lambda: y.copy_(x)), "solution": us(lambda: K.softmax(x)), "before": us(lambda: walked(x)),
             "torch.softmax": us(lambda: torch.softmax(x, -1))}
        _, tile, warps, _ = K.softmax_config(K.device_of(x), M, N)
        chunks = triton.cdiv(N, tile)
        for k, v in t.items():
            rows.append({"shape": [M, N], "dtype": str(dt)[6:], "what": k, "us": round(v, 2),
                         "pct_copy": round(100 * t["copy"] / v, 1), "max_abs_err": errs.get(k),
                         "chunks": chunks if k == "solution" else None,
                         "waits": K.chunks_may_wait(K.device_of(x), chunks) if k == "solution" else None})
        print(M, N, dt, {k: round(v, 1) for k, v in t.items()}, errs, flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/softmax_split_ab.py OUT.json OUT.md"}
    json.dump({"meta": meta, "rows": rows}, open(sys.argv[1], "w"), indent=1)
    by: dict = {}
    for r in rows:
        by.setdefault((tuple(r["shape"]), r["dtype"]), {})[r["what"]] = r
    lines = [f"# Softmax rows longer than a tile, split over programs: {meta['gpu']}", "",
             f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}; `{meta['command']}`. "
             "Median of triton.testing.do_bench (L2 flushed); % of copy = copy time / kernel time for the same bytes. "
             "`before`: the kernel the split replaced (one program per row, two walks over it).", "",
             "| shape | dtype | copy us | solution us | % of copy | before: % of copy | solution / before | "
             "torch.softmax % of copy | chunks | programs wait |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for (shape, dt), d in by.items():
        s, b = d["solution"], d["before"]
        lines.append(f"| {shape[0]}x{shape[1]} | {dt} | {d['copy']['us']:.1f} | {s['us']:.1f} | {s['pct_copy']:.1f}% | "
                     f"{b['pct_copy']:.1f}% | {b['us'] / s['us']:.2f}x | {d['torch.softmax']['pct_copy']:.1f}% | "
                     f"{s['chunks']} | {'yes' if s['waits'] else 'no'} |")
    open(sys.argv[2], "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
