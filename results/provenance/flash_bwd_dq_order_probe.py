"""The causal dQ kernel of module 08's backward with its query blocks launched longest first (as the forward
launches them), against the solution's kernel, which launches them in order: program i of a causal dQ grid walks
i + 1 key blocks, so in order the last wave holds the longest programs.

    python results/provenance/flash_bwd_dq_order_probe.py --dry    # on the CPU (interpreter): checked
    python results/provenance/flash_bwd_dq_order_probe.py OUT      # on a GPU: checked, then timed

Timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of 30,
bf16, d = 128, the dQ kernel alone on the inputs the backward gives it (delta from the preprocess kernel)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

if "--dry" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path.cwd()))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from autograder.portability import _load_solution  # noqa: E402

LOG2E = 1.4426950408889634
_dq_inner = None  # the solution's _attn_bwd_dq_inner, bound by main()


@triton.jit
def _dq_longest_first_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, seqlen_q, seqlen_k, n_heads_q,
                             group, qk_scale, sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """The solution's _attn_bwd_dq_kernel (causal part), program i taking query block n - 1 - i."""
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    pid_bh = tl.program_id(1)
    n_heads_kv = n_heads_q // group
    pid_bkv = (pid_bh // n_heads_q) * n_heads_kv + (pid_bh % n_heads_q) // group
    q_head = pid_bh.to(tl.int64) * seqlen_q * HEAD_DIM
    kv_head = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_mask = offs_m < seqlen_q
    offs = offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(q_ptr + q_head + offs, mask=row_mask[:, None], other=0.0)
    do = tl.load(do_ptr + q_head + offs, mask=row_mask[:, None], other=0.0)
    row = pid_bh.to(tl.int64) * seqlen_q + offs_m
    lse2 = tl.load(lse_ptr + row, mask=row_mask, other=float("inf")) * 1.4426950408889634
    delta = tl.load(delta_ptr + row, mask=row_mask, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    dq = _dq_inner(dq, q, do, lse2, delta, k_ptr + kv_head, v_ptr + kv_head, 0, start_m, offs_m, seqlen_k, qk_scale,
                   BLOCK_N, HEAD_DIM, False, False, DOT_PRECISION)
    dq = _dq_inner(dq, q, do, lse2, delta, k_ptr + kv_head, v_ptr + kv_head, start_m,
                   tl.minimum(start_m + BLOCK_M, seqlen_k), offs_m, seqlen_k, qk_scale, BLOCK_N, HEAD_DIM, True, True,
                   DOT_PRECISION)
    tl.store(dq_ptr + q_head + offs, (dq * sm_scale).to(dq_ptr.dtype.element_ty), mask=row_mask[:, None])


def _launch(sol, kernel, q, k, v, do, lse, delta, scale: float) -> torch.Tensor:
    b, hq, s, d = q.shape
    cfg = sol.backward_config(sol.device_of(q), q.dtype)
    dq = torch.empty_like(q)
    kernel[(triton.cdiv(s, cfg.dq_block_m), b * hq)](
        q, k, v, do, lse, delta, dq, s, k.shape[2], hq, hq // k.shape[1], scale * LOG2E, scale, HEAD_DIM=d,
        BLOCK_M=cfg.dq_block_m, BLOCK_N=cfg.dq_block_n, CAUSAL=True,
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32", num_warps=cfg.dq_warps, num_stages=cfg.dq_stages)
    return dq


def main(out: Path | None) -> None:
    sol = _load_solution("flash_attention")
    globals()["_dq_inner"] = sol._attn_bwd_dq_inner
    gpu = out is not None
    dev, dtype = ("cuda", torch.bfloat16) if gpu else ("cpu", torch.float32)
    shapes = ([(1, 32, 8, 1024), (1, 32, 8, 2048), (2, 32, 8, 2048), (4, 32, 8, 2048), (1, 32, 8, 4096),
               (4, 32, 32, 4096)] if gpu else [(1, 4, 2, 77), (2, 2, 1, 130)])
    rows = []
    for b, hq, hkv, s in shapes:
        d = 128 if gpu else 32
        scale = d ** -0.5
        g = torch.Generator(device="cpu").manual_seed(0)
        q, k, v, do = (torch.randn(shape, generator=g).to(dev, dtype)
                       for shape in ((b, hq, s, d), (b, hkv, s, d), (b, hkv, s, d), (b, hq, s, d)))
        o, lse = sol.attention_forward(q, k, v, True, scale, True)
        delta = (o.float() * do.float()).sum(-1)  # (B, Hq, S)
        fns = {"in order (solution)": lambda i: _launch(sol, sol._attn_bwd_dq_kernel, q, k, v, do, lse, delta, scale),
               "longest first": lambda i: _launch(sol, _dq_longest_first_kernel, q, k, v, do, lse, delta, scale)}
        a, c = (fn(0) for fn in fns.values())
        same = bool(torch.equal(a, c))
        if not gpu:
            print((b, hq, hkv, s), "identical dQ:", same)
            continue
        from autograder.timing import median, time_interleaved  # noqa: PLC0415
        times = {n: median(t) * 1e3 for n, t in time_interleaved(fns, 1, 30, torch.device("cuda")).items()}
        rows.append({"shape": f"{b}x{hq}/{hkv}x{s}x{d}", "causal": True, "us": times, "identical": same})
        print(rows[-1], flush=True)
    if gpu:
        meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                "date": __import__("datetime").date.today().isoformat()}
        (out / "flash_bwd_dq_order_probe.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        print("| shape, causal | in order | longest first | speed-up | identical dQ |\n|---|---:|---:|---:|---|")
        for r in rows:
            t = r["us"]
            print(f"| {r['shape']} | {t['in order (solution)']:.1f} | {t['longest first']:.1f} | "
                  f"{t['in order (solution)'] / t['longest first']:.2f}x | {r['identical']} |")


if __name__ == "__main__":
    if "--dry" in sys.argv:
        main(None)
    else:
        target = Path(sys.argv[1])
        target.mkdir(parents=True, exist_ok=True)
        main(target)
