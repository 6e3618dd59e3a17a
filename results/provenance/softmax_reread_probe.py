"""Issue 22, softmax over vocabulary-length rows: chunks re-read from the cache instead of held in registers.

The solution's split rows (waiting form) hold each 8192-column chunk in registers as float32 exponentials from the
load to the store: 165 registers a thread at 4 warps, three programs per SM, and while a program waits for its row
nothing of it is in flight. This probe's kernel holds nothing across the wait. It walks its chunk in sub-tiles of
SUB columns with a running (max, sum) (Triton's pipeliner may keep STAGES sub-tiles in flight, in shared memory
rather than registers), publishes the pair, waits for its row, and walks the chunk again to write it: the second
read finds the chunk in L1 or L2, read moments before. Two exponentials per element instead of one, in exchange
for a few dozen registers a thread and many more programs per SM.

A sweep at 1024 x 128256 bf16 picks the best settings; then three interleaved rounds of the solution, the best
three variants and a copy of the same bytes, per shape. triton.testing.do_bench medians (L2 flushed).
`python results/provenance/softmax_reread_probe.py OUT.json OUT.md` (`--small`: a CPU interpreter check of the
arithmetic, in the form where the last program of a row writes it).
"""
import json
import sys
import time

import torch
import triton
import triton.language as tl

sys.path.insert(0, ".")
import solutions.fusion.kernels as K  # noqa: E402

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def reread_kernel(x_ptr, y_ptr, part_ptr, count_ptr, n_rows, n_cols, stride_x, stride_y,
                  CHUNK: tl.constexpr, SUB: tl.constexpr, CHUNKS: tl.constexpr, STAGES: tl.constexpr,
                  KEEP: tl.constexpr, WAIT: tl.constexpr):
    n_chunks = tl.cdiv(n_cols, CHUNK)
    if WAIT:
        pid = tl.atomic_add(count_ptr + n_rows, 1, sem="relaxed")
    else:
        pid = tl.program_id(0)
    row = pid // n_chunks
    start = (pid - row * n_chunks) * CHUNK
    end = tl.minimum(n_cols - start, CHUNK)
    x_row = x_ptr + row.to(tl.int64) * stride_x + start
    y_row = y_ptr + row.to(tl.int64) * stride_y + start
    cols = tl.arange(0, SUB)
    m = -float("inf")
    s = 0.0
    for off in tl.range(0, end, SUB, num_stages=STAGES):
        c = off + cols
        if KEEP:  # ask L2 to keep the chunk for the second walk
            x = tl.load(x_row + c, mask=c < end, other=-float("inf"), eviction_policy="evict_last").to(tl.float32)
        else:
            x = tl.load(x_row + c, mask=c < end, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        m_sub = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp2((m - m_sub) * LOG2E) + tl.sum(tl.exp2((x - m_sub) * LOG2E), axis=0)
        m = m_new
    tl.store(part_ptr + pid.to(tl.int64) * 2, m)
    tl.store(part_ptr + pid.to(tl.int64) * 2 + 1, s)
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + row, 1, sem="acq_rel") + 1
    if WAIT:
        while arrived < n_chunks:
            arrived = tl.atomic_add(count_ptr + row, 0, sem="acquire")
    if arrived == n_chunks:
        k = tl.arange(0, CHUNKS)
        parts = part_ptr + (row.to(tl.int64) * n_chunks + k) * 2
        m_k = tl.load(parts, mask=k < n_chunks, other=-float("inf"), volatile=True)
        s_k = tl.load(parts + 1, mask=k < n_chunks, other=0.0, volatile=True)
        row_max = tl.max(m_k, axis=0)
        inv_sum = 1.0 / tl.sum(s_k * tl.exp2((m_k - row_max) * LOG2E), axis=0)
        if WAIT:
            for off in tl.range(0, end, SUB, num_stages=STAGES):
                c = off + cols
                x = tl.load(x_row + c, mask=c < end, other=-float("inf"), eviction_policy="evict_first")
                y = tl.exp2((x.to(tl.float32) - row_max) * LOG2E) * inv_sum
                tl.store(y_row + c, y.to(y_ptr.dtype.element_ty), mask=c < end)
        else:  # the interpreter: the last program of the row writes all of it
            x_all = x_ptr + row.to(tl.int64) * stride_x
            y_all = y_ptr + row.to(tl.int64) * stride_y
            for off in range(0, n_cols, SUB):
                c = off + cols
                x = tl.load(x_all + c, mask=c < n_cols, other=-float("inf"))
                y = tl.exp2((x.to(tl.float32) - row_max) * LOG2E) * inv_sum
                tl.store(y_all + c, y.to(y_ptr.dtype.element_ty), mask=c < n_cols)


def reread(x: torch.Tensor, chunk: int, sub: int, warps: int, stages: int, keep: bool, wait: bool = True) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    n_chunks = triton.cdiv(n_cols, chunk)
    part = torch.empty((n_rows, n_chunks, 2), dtype=torch.float32, device=x.device)
    count = torch.zeros((n_rows + 1,), dtype=torch.int32, device=x.device)
    reread_kernel[(n_rows * n_chunks,)](x, y, part, count, n_rows, n_cols, x.stride(0), y.stride(0),
                                        CHUNK=chunk, SUB=sub, CHUNKS=triton.next_power_of_2(n_chunks), STAGES=stages,
                                        KEEP=keep, WAIT=wait, num_warps=warps)
    return y


def small_check() -> None:
    torch.manual_seed(0)
    for n_cols in (40000, 36865):
        x = (torch.randn(3, n_cols) * 4).to(torch.bfloat16)
        x[0, : n_cols // 2] = float("-inf")
        ref = torch.softmax(x.double(), -1)
        y = reread(x, 8192, 1024, 4, 1, False, wait=False)
        err = (y.double() - ref).abs().max().item()
        print(n_cols, "max abs err", err)
        assert err < 4e-3, err


VARIANTS = [(c, s, w, st, keep) for c in (8192, 16384, 32768) for s in (1024, 2048, 4096) for w in (2, 4, 8)
            for st in (1, 3) for keep in (True,) if s * 2 <= c * 2 and (s // (32 * w)) >= 4]
VARIANTS += [(8192, 2048, 4, 1, False), (16384, 2048, 4, 1, False), (16384, 4096, 8, 1, False)]
SHAPES = [(1024, 128256, torch.bfloat16), (4096, 128256, torch.bfloat16), (1024, 65536, torch.bfloat16),
          (1024, 128256, torch.float16), (1024, 128256, torch.float32)]


def main() -> None:
    from triton.testing import do_bench

    def us(fn, rep=300):
        return do_bench(fn, warmup=25, rep=rep, return_mode="median") * 1e3

    t0 = time.time()
    torch.manual_seed(0)
    M, N = 1024, 128256
    x = (torch.randn(M, N, device="cuda") * 4).to(torch.bfloat16)
    x[0, : N // 2] = float("-inf")
    ref = torch.softmax(x.double(), -1)
    y = torch.empty_like(x)
    copy = us(lambda: y.copy_(x), 100)
    sol = us(lambda: K.softmax(x), 100)
    sweep = []
    for v in VARIANTS:
        try:
            err = (reread(x, *v).double() - ref).abs().max().item()
            t = us(lambda: reread(x, *v), 100)
        except Exception as e:  # noqa: BLE001 - a variant that does not compile is recorded, not fatal
            sweep.append({"variant": v, "error": str(e)[:200]})
            continue
        sweep.append({"variant": v, "us": round(t, 2), "pct_copy": round(100 * copy / t, 1), "max_abs_err": err})
        print("sweep", v, round(t, 1), f"{100 * copy / t:.1f}%", f"{err:.1e}", flush=True)
    ok = [r for r in sweep if "us" in r and r["max_abs_err"] < 4e-3]
    best = [tuple(r["variant"]) for r in sorted(ok, key=lambda r: r["us"])[:3]]
    print(f"copy {copy:.1f} solution {sol:.1f} ({100 * copy / sol:.1f}%) best {best}; sweep {time.time() - t0:.0f} s")
    del x, ref, y
    rows = []
    for M, N, dt in SHAPES:
        torch.manual_seed(0)
        x = (torch.randn(M, N, device="cuda") * 4).to(dt)
        x[0, : N // 2] = float("-inf")
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), -1)
        fns = {"copy": lambda: y.copy_(x), "solution": lambda: K.softmax(x)}
        for v in best:
            fns["reread " + "/".join(map(str, v))] = (lambda v=v: reread(x, *v))
        errs = {k: (f().double() - ref).abs().max().item() for k, f in fns.items() if k != "copy"}
        rounds = [{k: us(f) for k, f in fns.items()} for _ in range(3)]
        for k in fns:
            ts = sorted(r[k] for r in rounds)
            rows.append({"shape": [M, N], "dtype": str(dt)[6:], "what": k, "us": round(ts[1], 2), "rounds": ts,
                         "pct_copy": round(100 * sorted(r["copy"] for r in rounds)[1] / ts[1], 1),
                         "max_abs_err": errs.get(k)})
        print(M, N, dt, {r["what"]: r["pct_copy"] for r in rows[-len(fns):]}, flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/softmax_reread_probe.py OUT.json OUT.md"}
    json.dump({"meta": meta, "sweep": sweep, "rows": rows}, open(sys.argv[1], "w"), indent=1)
    names = list(dict.fromkeys(r["what"] for r in rows if r["what"] != "copy"))
    lines = [f"# Softmax split rows: chunks re-read instead of held: {meta['gpu']}", "",
             f"{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}; `{meta['command']}`. "
             "Per shape, three interleaved rounds of triton.testing.do_bench medians (L2 flushed), the middle shown, "
             "as % of a copy of the same bytes in the same rounds. reread CHUNK/SUB/warps/stages/keep.", "",
             "| shape | dtype | " + " | ".join(names) + " |", "|---|---|" + "---:|" * len(names)]
    by: dict = {}
    for r in rows:
        by.setdefault((tuple(r["shape"]), r["dtype"]), {})[r["what"]] = r
    for (shape, dt), d in by.items():
        lines.append(f"| {shape[0]}x{shape[1]} | {dt} | " + " | ".join(f"{d[n]['pct_copy']:.1f}%" for n in names) + " |")
    open(sys.argv[2], "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if "--small" in sys.argv:
        small_check()
    else:
        main()
