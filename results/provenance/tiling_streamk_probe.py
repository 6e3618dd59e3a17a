"""What stream-K scheduling would give module 04's matmul at the wave-quantized sizes: a measured probe.

Lecture 04, section 6, ends on stream-K (Osama et al., 2023) as the way to fill the last wave. Here it is, in
Triton, beside the solution and cuBLAS. One persistent launch of P programs (P = SMs x programs per SM) shares
the product's tile-iterations (tiles x K steps) out evenly: program t takes a contiguous run of them, which
crosses tile boundaries. A tile whose iterations two or more programs share is finished by the program that
does its last K step: the others leave their float32 partial tile in a workspace slot of their own and raise a
flag; the finisher waits for the flags, adds the partials and rounds once. Work is handed out by a ticket taken
as each program starts (an atomic counter), not by program_id, so that a program only ever waits for programs
that started before it: no deadlock, whatever the GPU runs beside it (and the interpreter, which runs the
programs one after another in order, never waits at all).

"hybrid" launches the rows of all but the last whole wave with the solution's kernel and its first tile, then
stream-K over the rest (one wave plus the remainder), as the paper's "data-parallel + one-tile stream-K".

    python results/provenance/tiling_streamk_probe.py                        # on a GPU: $OUT/tiling_streamk_probe.json
    TRITON_INTERPRET=1 python results/provenance/tiling_streamk_probe.py --dry   # the same code on tiny shapes
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from course.device import device_of  # noqa: E402
from solutions.tiling import kernels as tk  # noqa: E402


@triton.jit
def _streamk_kernel(a_ptr, b_ptr, c_ptr, ws_ptr, flag_ptr, ticket_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                    MODE: tl.constexpr = 0):
    """MODE 0: stream-K. Diagnostics (--diag): 1, the same runs without handing partials over (wrong sums, timed
    only); 2, whole tiles, each program a contiguous run of them; 3, whole tiles, program p taking p, p + P, ...;
    5, partials stored but neither flagged nor waited for; 6, flags raised and waited for, partials stored but not
    added (5 and 6 are wrong sums, timed only).

    Program with ticket t: tile-iterations [t * per + min(t, extra), ...) of the whole product, where the
    iterations of tile i are i * steps ... (i + 1) * steps - 1 (steps = cdiv(K, BLOCK_K))."""
    n_progs = tl.num_programs(0)
    pid = tl.atomic_add(ticket_ptr, 1, sem="relaxed")
    if pid == n_progs - 1:  # the last ticket: every program has one, so the counter can go back to zero
        tl.atomic_xchg(ticket_ptr, 0, sem="relaxed")
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    steps = tl.cdiv(K, BLOCK_K)
    total = num_pid_m * num_pid_n * steps
    per = total // n_progs
    extra = total % n_progs
    start_it = pid * per + tl.minimum(pid, extra)
    it_end = start_it + per + (pid < extra).to(tl.int32)
    if MODE == 2:
        per_prog = tl.cdiv(num_pid_m * num_pid_n, n_progs) * steps
        start_it = tl.minimum(pid * per_prog, total)
        it_end = tl.minimum(start_it + per_prog, total)
    stride_tiles = 0
    if MODE == 3:
        start_it = 0
        it_end = tl.cdiv(num_pid_m * num_pid_n - pid, n_progs)  # tiles pid, pid + P, ...
    offs_k = tl.arange(0, BLOCK_K)
    offs_bm = tl.arange(0, BLOCK_M)
    offs_bn = tl.arange(0, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    # The run's tiles are walked from its end back to its start: the partial of the tile it begins (which a later
    # program finishes) is stored first, so that no program waits long for it, and the tile it only ends, whose
    # partials come from earlier programs, is finished last, when those partials are long there.
    while it_end > start_it:
        tile = (it_end - 1) // steps
        seg_lo = tl.maximum(start_it, tile * steps)
        k_lo = seg_lo - tile * steps
        k_hi = it_end - tile * steps
        if MODE == 3:
            tile = pid + (it_end - 1) * n_progs
            seg_lo = it_end - 1
            k_lo = 0
            k_hi = steps
        first_m = (tile // in_group) * GROUP_M
        group_m = tl.minimum(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (tile % in_group) % group_m
        pid_n = (tile % in_group) // group_m
        offs_m = pid_m * BLOCK_M + offs_bm
        offs_n = pid_n * BLOCK_N + offs_bn
        ks = k_lo * BLOCK_K + offs_k
        a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + ks[None, :]
        b_ptrs = b_ptr + ks.to(tl.int64)[:, None] * stride_bk + offs_n[None, :]
        mask_m = offs_m[:, None] < M
        mask_n = offs_n[None, :] < N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_lo, k_hi):
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=mask_m & (offs_k[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & mask_n, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K * stride_bk
        slot = ws_ptr + offs_bm[:, None] * BLOCK_N + offs_bn[None, :]
        if MODE == 1:  # no hand-over
            if k_hi == steps:
                c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * stride_cm + offs_n[None, :]
                tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m & mask_n)
        elif k_hi < steps:  # the tile goes on in the next program(s): hand the partial over
            tl.store(slot + pid.to(tl.int64) * BLOCK_M * BLOCK_N, acc)
            if MODE != 5:
                tl.atomic_xchg(flag_ptr + pid, 1, sem="release")
        else:
            if (k_lo > 0) & (MODE != 5):  # programs before this one did the tile's first steps: add their partials
                start = tile * steps
                boundary = extra * (per + 1)
                first = tl.where(start < boundary, start // (per + 1), extra + (start - boundary) // tl.maximum(per, 1))
                # every flag first, then the partials: a load in the loop that waits could be pipelined ahead of its wait
                for p in range(first, pid):
                    ready = tl.atomic_cas(flag_ptr + p, 1, 0, sem="acquire")
                    while ready != 1:
                        ready = tl.atomic_cas(flag_ptr + p, 1, 0, sem="acquire")
                if MODE != 6:
                    for p in range(first, pid):
                        acc += tl.load(slot + p * (BLOCK_M * BLOCK_N), cache_modifier=".cg")  # p < P: no overflow
            c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * stride_cm + offs_n[None, :]
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m & mask_n)
        it_end = seg_lo


@triton.jit
def _streamk_flat_kernel(a_ptr, b_ptr, c_ptr, ws_ptr, flag_ptr, ticket_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """The same share of the work as _streamk_kernel, walked as one flat loop over the run's tile-iterations (the
    last first), with each tile's end of run (a partial handed over, or the tile finished) inside the loop, so
    that the pipeline of loads runs on across tiles."""
    n_progs = tl.num_programs(0)
    pid = tl.atomic_add(ticket_ptr, 1, sem="relaxed")
    if pid == n_progs - 1:
        tl.atomic_xchg(ticket_ptr, 0, sem="relaxed")
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    steps = tl.cdiv(K, BLOCK_K)
    total = num_pid_m * num_pid_n * steps
    per = total // n_progs
    extra = total % n_progs
    start_it = pid * per + tl.minimum(pid, extra)
    it_end = start_it + per + (pid < extra).to(tl.int32)
    boundary = extra * (per + 1)
    offs_k = tl.arange(0, BLOCK_K)
    offs_bm = tl.arange(0, BLOCK_M)
    offs_bn = tl.arange(0, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    slot = ws_ptr + offs_bm[:, None] * BLOCK_N + offs_bn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, it_end - start_it):
        it = it_end - 1 - i
        tile = it // steps
        k = it - tile * steps
        first_m = (tile // in_group) * GROUP_M
        group_m = tl.minimum(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (tile % in_group) % group_m
        pid_n = (tile % in_group) // group_m
        offs_m = pid_m * BLOCK_M + offs_bm
        offs_n = pid_n * BLOCK_N + offs_bn
        ks = k * BLOCK_K + offs_k
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + ks[None, :],
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptr + ks.to(tl.int64)[:, None] * stride_bk + offs_n[None, :],
                    mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        if (k == 0) | (it == start_it):  # this run's part of the tile is done
            if (tile + 1) * steps > it_end:  # a later program does the tile's last steps: hand the partial over
                tl.store(slot + pid.to(tl.int64) * BLOCK_M * BLOCK_N, acc)
                tl.atomic_xchg(flag_ptr + pid, 1, sem="release")
            else:
                if k > 0:  # earlier programs did the tile's first steps
                    start = tile * steps
                    first = tl.where(start < boundary, start // (per + 1), extra + (start - boundary) // tl.maximum(per, 1))
                    for p in range(first, pid):
                        ready = tl.atomic_cas(flag_ptr + p, 1, 0, sem="acquire")
                        while ready != 1:
                            ready = tl.atomic_cas(flag_ptr + p, 1, 0, sem="acquire")
                    for p in range(first, pid):
                        acc += tl.load(slot + p * (BLOCK_M * BLOCK_N), cache_modifier=".cg")
                c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * stride_cm + offs_n[None, :]
                tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)


def streamk(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, ws: torch.Tensor, flags: torch.Tensor,
            ticket: torch.Tensor, cfg: dict, programs: int, mode: int = 0) -> None:
    """c = a @ b by `programs` stream-K programs (at most the product's tile-iterations)."""
    m, k = a.shape
    n = b.shape[1]
    total = triton.cdiv(m, cfg["block_m"]) * triton.cdiv(n, cfg["block_n"]) * triton.cdiv(k, cfg["block_k"])
    kernel, extra = (_streamk_flat_kernel, {}) if mode == 4 else (_streamk_kernel, {"MODE": mode})
    kernel[(min(programs, total),)](
        a, b, c, ws, flags, ticket, m, n, k, a.stride(0), b.stride(0), c.stride(0),
        BLOCK_M=cfg["block_m"], BLOCK_N=cfg["block_n"], BLOCK_K=cfg["block_k"], GROUP_M=cfg["group_m"],
        **extra, num_stages=cfg["num_stages"], num_warps=cfg["num_warps"])  # fmt: skip


def tile(bm: int, bn: int, bk: int, stages: int, warps: int) -> dict:
    return {"block_m": bm, "block_n": bn, "block_k": bk, "group_m": 8, "num_stages": stages, "num_warps": warps}


def main() -> None:
    dry = "--dry" in sys.argv
    diag = "--diag" in sys.argv
    dev = "cpu" if dry else "cuda"
    dtypes = [torch.float32] if dry else [torch.bfloat16, torch.float16]
    device = device_of(torch.empty(1, device=dev))
    sms = 5 if dry else device.sms
    # (name, tile, programs per SM)
    if dry:
        tiles = [("32x32", tile(32, 32, 16, 1, 4), 1), ("16x32", tile(16, 32, 16, 1, 4), 2)]
        shapes = [(96, 64, 96), (70, 48, 90), (33, 80, 17)]
    else:
        big = tk.matmul_config(device, torch.bfloat16)[0]
        # programs per SM as shared memory and registers allow (sm_90 compilations: 255 registers a thread here)
        tiles = [("128x256", big, 1), ("128x256 s4", tile(128, 256, 64, 4, 8), 1), ("128x128 w4", tile(128, 128, 64, 3, 4), 2),
                 ("128x128 w8", tile(128, 128, 64, 4, 8), 1)]
        shapes = [(n, n, n) for n in (1024, 1536, 2048, 2304, 3072, 4096, 5120, 6144, 8192)] + [(1536, 4096, 1536), (4096, 4096, 14336)]
        if diag:
            # the flat kernel keeps a partial's layout change in shared memory beside the stages: 3 stages of 128x256 do not fit
            tiles = [("128x256 s2", tile(128, 256, 64, 2, 8), 1), ("128x256 k32", tile(128, 256, 32, 4, 8), 1), tiles[3]]
            shapes, dtypes = [(1024, 1024, 1024), (1536, 1536, 1536), (3072, 3072, 3072), (8192, 8192, 8192)], dtypes[:1]
    rows_out = []
    for dtype in dtypes:
        for m, k, n in shapes:
            g = torch.Generator(device=dev).manual_seed(m + n + k)
            a = torch.randn(m, k, device=dev, dtype=dtype, generator=g)
            b = torch.randn(k, n, device=dev, dtype=dtype, generator=g)
            c = torch.empty(m, n, device=dev, dtype=dtype)
            ws = torch.empty(4 * sms * 128 * 256, device=dev, dtype=torch.float32)
            flags = torch.zeros(4 * sms, device=dev, dtype=torch.int32)
            ticket = torch.zeros(1, device=dev, dtype=torch.int32)
            ref = a.double() @ b.double()
            scale = ref.abs().mean().item()

            def bench(fn, check: bool = True) -> float:
                if not check:
                    return float("nan") if dry else triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3
                c.fill_(float("nan"))
                fn()
                fn()  # twice: the counters must have come back to zero for the second call to be right
                err = ((c.double() - ref).abs().max() / scale).item()
                if diag and not dry and err >= 3e-2:
                    flags.zero_()
                    ticket.zero_()
                    return float("inf")  # wrong: listed as inf
                assert err < (1e-5 if dry else 3e-2), err
                assert int(ticket.item()) == 0 and int(flags.abs().sum().item()) == 0
                return float("nan") if dry else triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3

            t_sol = bench(lambda: tk._launch(a, b, c))
            t_cublas = float("nan") if dry else triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=25, rep=100,
                                                                        return_mode="median") * 1e3  # fmt: skip
            variants = {}
            for name, cfg, per_sm in tiles:
                progs = sms * per_sm
                variants[f"stream-K {name} x{progs}"] = bench(lambda cfg=cfg, progs=progs: streamk(a, b, c, ws, flags, ticket, cfg, progs))
                if diag:
                    for mode, label in ((1, "no hand-over (timing only)"), (2, "whole tiles, runs"), (3, "whole tiles, strided"),
                                        (4, "stream-K flat"), (5, "partials stored only (timing only)"),
                                        (6, "partials stored, flags waited for, not added (timing only)")):
                        variants[f"{label} {name} x{progs}"] = bench(
                            lambda cfg=cfg, progs=progs, mode=mode: streamk(a, b, c, ws, flags, ticket, cfg, progs, mode),
                            check=mode not in (1, 5, 6))
                    continue
                # hybrid: all but the last whole wave of this tile data-parallel (the solution's kernel, same tile), then stream-K
                ct = triton.cdiv(n, cfg["block_n"])
                waves = triton.cdiv(m, cfg["block_m"]) * ct // progs
                rows = max(0, (waves - 1) * progs) // ct * cfg["block_m"]
                if rows:
                    def run(cfg=cfg, progs=progs, rows=rows) -> None:
                        tk._launch_tile(a[:rows], b, c[:rows], cfg)
                        streamk(a[rows:], b, c[rows:], ws, flags, ticket, cfg, progs)

                    variants[f"hybrid {name} x{progs}: {rows} rows DP"] = bench(run)
            best = min(variants, key=variants.get) if not dry else next(iter(variants))
            rows_out.append({"dtype": str(dtype).split(".")[-1], "shape": [m, k, n], "solution_us": t_sol, "cublas_us": t_cublas,
                             "variants": {v: (None if t == float("inf") else t) for v, t in variants.items()}})  # null: wrong sums
            print(f"{str(dtype)[6:]} {m}x{k}x{n}: cuBLAS {t_cublas:.1f} solution {t_sol:.1f} ({t_cublas / t_sol:.2f}x) "
                  f"best {variants[best]:.1f} ({t_cublas / variants[best]:.2f}x; {best})", flush=True)  # fmt: skip
    out = Path(os.environ.get("OUT", "."))
    info = {"gpu": "interpreter" if dry else torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__, "date": time.strftime("%Y-%m-%d")}  # fmt: skip
    if not dry:
        (out / f"tiling_streamk_probe{'_diag' if diag else ''}.json").write_text(json.dumps({**info, "rows": rows_out}, indent=1))
    else:
        print("dry run: every variant correct, counters back at zero")


if __name__ == "__main__":
    main()
