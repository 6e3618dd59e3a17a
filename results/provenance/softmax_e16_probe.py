"""Issue 22, softmax over long bfloat16 rows: hold each chunk's exponentials as bfloat16 pairs across the wait.

The solution's split rows (1024 x 128256 bf16: 87.5-88% of copy on the H100, against 96.8% for float32 with the same
chunks and warps) hold e = exp(x - m_c) as float32 between the count and the store: 4 bytes of registers for each
2-byte element read. The float32 rows run with as many programs, each twice the bytes, so the cost is per program
(the count, the wait), not per byte. Held as bfloat16 pairs in 32-bit words (the output is bfloat16 anyway: the
extra rounding costs at most one unit of the output's 2^-8, against a tolerance of 4), a chunk of 16384 takes the
registers one of 8192 takes now: half the programs for the same bytes, or twice as many at once on an SM.

Variants e16 TILE/WARPS against the solution and a copy of the same bytes, three interleaved rounds of do_bench
medians (L2 flushed), the middle one shown; each output's largest error as a fraction of the grader's tolerance.
`python results/provenance/softmax_e16_probe.py OUT.json OUT.md` (GPU). `--check` runs the kernel on the CPU
interpreter with one chunk a row (no wait), checking the packing.
"""
import json
import os
import sys
import time

if "--check" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, ".")
from autograder.specs.fusion import SOFTMAX_TOLERANCES  # noqa: E402

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _halves(w):
    lo = (w << 16).to(tl.float32, bitcast=True)
    hi = (w & -65536).to(tl.float32, bitcast=True)
    return lo, hi


@triton.jit
def _word_of(lo, hi):
    lo_bits = lo.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi_bits = hi.to(tl.int16, bitcast=True).to(tl.int32) << 16
    return hi_bits | lo_bits


@triton.jit
def softmax_e16_kernel(x_ptr, y_ptr, part_ptr, count_ptr, n_rows, n_cols, stride_x, stride_y,
                       BLOCK_N: tl.constexpr, CHUNKS: tl.constexpr, WAIT: tl.constexpr):
    # bfloat16 x and y, n_cols and both strides even, rows 4-byte aligned: read and written as 32-bit words.
    n_chunks = tl.cdiv(n_cols, BLOCK_N)
    if WAIT:
        pid = tl.atomic_add(count_ptr + n_rows, 1, sem="relaxed")
    else:
        pid = tl.program_id(0)
    row = pid // n_chunks
    words = (pid - row * n_chunks) * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)
    mask = words < n_cols // 2
    x_row = x_ptr.to(tl.pointer_type(tl.int32)) + row.to(tl.int64) * (stride_x // 2)
    y_row = y_ptr.to(tl.pointer_type(tl.int32)) + row.to(tl.int64) * (stride_y // 2)
    neg_inf = tl.full([BLOCK_N // 2], float("-inf"), tl.float32).to(tl.bfloat16)
    w = tl.load(x_row + words, mask=mask, other=_word_of(neg_inf, neg_inf))
    lo, hi = _halves(w)
    m_c = tl.max(tl.maximum(lo, hi), axis=0)
    m_sub = tl.where(m_c == -float("inf"), 0.0, m_c)
    e_lo = tl.exp2((lo - m_sub) * LOG2E)
    e_hi = tl.exp2((hi - m_sub) * LOG2E)
    s_c = tl.sum(e_lo + e_hi, axis=0)
    held = _word_of(e_lo.to(tl.bfloat16), e_hi.to(tl.bfloat16))  # what crosses the wait: 2 bytes an element
    tl.store(part_ptr + pid.to(tl.int64) * 2, m_c)
    tl.store(part_ptr + pid.to(tl.int64) * 2 + 1, s_c)
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + row, 1, sem="acq_rel") + 1
    if WAIT:
        while arrived < n_chunks:
            arrived = tl.atomic_add(count_ptr + row, 0, sem="acquire")
    k = tl.arange(0, CHUNKS)
    parts = part_ptr + (row.to(tl.int64) * n_chunks + k) * 2
    m_k = tl.load(parts, mask=k < n_chunks, other=-float("inf"), volatile=True)
    s_k = tl.load(parts + 1, mask=k < n_chunks, other=0.0, volatile=True)
    row_max = tl.max(m_k, axis=0)
    factor = tl.exp2((m_c - row_max) * LOG2E) / tl.sum(s_k * tl.exp2((m_k - row_max) * LOG2E), axis=0)
    e_lo, e_hi = _halves(held)
    tl.store(y_row + words, _word_of((e_lo * factor).to(tl.bfloat16), (e_hi * factor).to(tl.bfloat16)), mask=mask)


def softmax_e16(x: torch.Tensor, tile: int, warps: int, wait: bool = True) -> torch.Tensor:
    n_rows, n_cols = x.shape
    assert x.dtype == torch.bfloat16 and n_cols % 2 == 0 and x.stride(0) % 2 == 0
    y = torch.empty_like(x)
    n_chunks = triton.cdiv(n_cols, tile)
    part = torch.empty((n_rows, n_chunks, 2), dtype=torch.float32, device=x.device)
    count = torch.zeros((n_rows + 1,), dtype=torch.int32, device=x.device)
    softmax_e16_kernel[(n_rows * n_chunks,)](x, y, part, count, n_rows, n_cols, x.stride(0), y.stride(0),
                                             BLOCK_N=tile, CHUNKS=triton.next_power_of_2(n_chunks), WAIT=wait,
                                             num_warps=warps)
    return y


def tolerance_used(out: torch.Tensor, ref: torch.Tensor) -> float:
    """The largest |out - ref| over what the grader allows there (atol * mean|ref| + rtol * |ref|)."""
    tol = SOFTMAX_TOLERANCES["bfloat16"]
    allowed = tol.atol * ref.abs().mean(dim=-1, keepdim=True) + tol.rtol * ref.abs()
    return ((out.double() - ref).abs() / allowed).max().item()


def check() -> None:
    torch.manual_seed(0)
    for n_rows, n_cols in [(3, 64), (2, 250), (4, 1000)]:
        x = (torch.randn(n_rows, n_cols) * 4).to(torch.bfloat16)
        x[0, : n_cols // 2] = float("-inf")
        ref = torch.softmax(x.double(), -1)
        y = softmax_e16(x, triton.next_power_of_2(n_cols), 4, wait=False)
        used = tolerance_used(y, ref)
        print(f"({n_rows}, {n_cols}): {used:.2f} of the tolerance")
        assert used <= 1.0


SHAPES = [(1024, 128256), (4096, 128256), (256, 128256), (1024, 65536), (2048, 40000)]
VARIANTS = [(8192, 4), (16384, 4), (16384, 8), (32768, 8), (32768, 16), (8192, 2)]


def main() -> None:
    from triton.testing import do_bench

    import solutions.fusion.kernels as K

    def us(fn) -> float:
        return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3

    rows = []
    for M, N in SHAPES:
        torch.manual_seed(0)
        x = (torch.randn(M, N, device="cuda") * 4).to(torch.bfloat16)
        x[0, : N // 2] = float("-inf")  # whole chunks of -inf in one row
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), -1)
        fns = {"solution": lambda: K.softmax(x)}
        for tile, warps in VARIANTS:
            fns[f"e16 {tile}/{warps}"] = (lambda t=tile, w=warps: softmax_e16(x, t, w))
        used = {k: tolerance_used(f(), ref) for k, f in fns.items()}
        del ref
        rounds = []
        for _ in range(3):
            r = {"copy": us(lambda: y.copy_(x))}
            r.update({k: us(f) for k, f in fns.items()})
            rounds.append(r)
        t = sorted(rounds, key=lambda r: r["copy"] / r["solution"])[1]
        for k, v in t.items():
            rows.append({"shape": [M, N], "what": k, "us": round(v, 2), "pct_copy": round(100 * t["copy"] / v, 1),
                         "tolerance_used": None if k == "copy" else round(used[k], 3),
                         "rounds_us": [round(r[k], 2) for r in rounds]})
        print(M, N, {k: f"{100 * t['copy'] / v:.1f}%" for k, v in t.items()},
              {k: round(u, 2) for k, u in used.items()}, flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/softmax_e16_probe.py OUT.json OUT.md"}
    json.dump({"meta": meta, "rows": rows}, open(sys.argv[1], "w"), indent=1)
    names = list(dict.fromkeys(r["what"] for r in rows if r["what"] != "copy"))
    lines = [f"# Softmax split rows, exponentials held as bfloat16 pairs: {meta['gpu']}", "",
             f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}; `{meta['command']}`. "
             "% of a copy of the same bytes; three interleaved rounds of do_bench medians (L2 flushed), the middle "
             "by the solution's ratio; in brackets the largest error as a fraction of the grader's bf16 tolerance.",
             "", "| shape | copy us | " + " | ".join(names) + " |", "|---|---:|" + "---:|" * len(names)]
    for M, N in SHAPES:
        d = {r["what"]: r for r in rows if r["shape"] == [M, N]}
        cells = [f"{d[n]['pct_copy']:.1f}% ({d[n]['tolerance_used']:.2f})" for n in names]
        lines.append(f"| {M}x{N} bf16 | {d['copy']['us']:.1f} | " + " | ".join(cells) + " |")
    open(sys.argv[2], "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    check() if "--check" in sys.argv else main()
