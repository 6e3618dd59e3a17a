"""Flash attention backward with its streamed tiles moved by Hopper's TMA: does what the forward and the tiling bonus
gained carry over? (issue 20's training step, whose compiled course block is held back by this backward: 0.67-0.69x
cuDNN's).

The solution's backward (`solutions/flash_attention/kernels.py`, `attention_backward`) streams tiles with pointer
loads: the dK/dV kernel walks the queries of its heads, loading a (BLOCK_M, D) tile of Q and of dO per step; the dQ
kernel walks the keys, loading a (BLOCK_N, D) tile of K and of V per step. Here the same two kernels take those
streamed tiles through tensor descriptors made on the host over Q, dO, K and V viewed as (rows, D) matrices (as
the solution's forward does for K and V); everything else (tiles, warps, stages, the grid, the grouped-query split,
the delta and partial-sum kernels) is the solution's. A tile that runs past a head's last query or key reads the
next head's rows, which the logsumexp (+inf: P = 0) or the key mask already removes, as in the forward.

    python results/provenance/flash_bwd_tma_probe.py --dry     # on the CPU (interpreter): every variant checked
    python results/provenance/flash_bwd_tma_probe.py OUT       # on a GPU: checked, then timed beside SDPA

Timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of 20,
bf16, d = 128. Every timed variant's gradients are first compared with float32 autograd through SDPA's math path.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

if "--dry" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

from course.launch import cdiv  # noqa: E402
from solutions.flash_attention import kernels as fk  # noqa: E402

LOG2E = 1.4426950408889634


@triton.jit
def _dkdv_inner_tma(dk, dv, k, v, q_desc, do_desc, row0, lse_head_ptr, delta_head_ptr, lo, hi, offs_n, seqlen_q,
                    qk_scale, BLOCK_M: tl.constexpr, MASK_Q: tl.constexpr, MASK_CAUSAL: tl.constexpr,
                    DOT_PRECISION: tl.constexpr):
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q = q_desc.load([row0 + start_m, 0])  # (BLOCK_M, D); rows past seqlen_q: the next head's, P = 0 there
        do = do_desc.load([row0 + start_m, 0])
        if MASK_Q:
            q_mask = offs_m < seqlen_q
            lse = tl.load(lse_head_ptr + offs_m, mask=q_mask, other=float("inf"))
            delta = tl.load(delta_head_ptr + offs_m, mask=q_mask, other=0.0)
        else:
            lse = tl.load(lse_head_ptr + offs_m)
            delta = tl.load(delta_head_ptr + offs_m)
        s_t = tl.dot(k, tl.trans(q), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)
        p_t = tl.math.exp2(s_t * qk_scale - (lse * 1.4426950408889634)[None, :])
        if MASK_CAUSAL:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=DOT_PRECISION)
        dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk, input_precision=DOT_PRECISION)
    return dk, dv


@triton.jit
def _dkdv_kernel_tma(q_desc, k_ptr, v_ptr, do_desc, lse_ptr, delta_ptr, dk_ptr, dv_ptr, seqlen_q, seqlen_k, group,
                     split, qk_scale, sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, DOT_PRECISION: tl.constexpr):
    qk_scale = tl.cast(qk_scale, tl.float32)
    sm_scale = tl.cast(sm_scale, tl.float32)
    pid_n = tl.program_id(0)
    pid = tl.program_id(1)
    pid_bkv = pid // split
    per_program = group // split
    first = (pid % split) * per_program
    start_n = pid_n * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_mask = offs_n < seqlen_k
    rows = offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    kv_offs = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM + rows
    k = tl.load(k_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
    v = tl.load(v_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    full = seqlen_q - seqlen_q % BLOCK_M
    for g in range(first, first + per_program):
        bh = pid_bkv * group + g
        row0 = bh * seqlen_q
        lse_head = lse_ptr + bh.to(tl.int64) * seqlen_q
        delta_head = delta_ptr + bh.to(tl.int64) * seqlen_q
        if CAUSAL:
            dk, dv = _dkdv_inner_tma(dk, dv, k, v, q_desc, do_desc, row0, lse_head, delta_head, start_n,
                                     tl.minimum(start_n + BLOCK_N, seqlen_q), offs_n, seqlen_q, qk_scale, BLOCK_M,
                                     True, True, DOT_PRECISION)  # fmt: skip
            lo = start_n + BLOCK_N
        else:
            lo = 0
        dk, dv = _dkdv_inner_tma(dk, dv, k, v, q_desc, do_desc, row0, lse_head, delta_head, lo, full, offs_n,
                                 seqlen_q, qk_scale, BLOCK_M, False, False, DOT_PRECISION)  # fmt: skip
        dk, dv = _dkdv_inner_tma(dk, dv, k, v, q_desc, do_desc, row0, lse_head, delta_head, tl.maximum(lo, full),
                                 seqlen_q, offs_n, seqlen_q, qk_scale, BLOCK_M, True, False, DOT_PRECISION)  # fmt: skip
    out_offs = pid.to(tl.int64) * seqlen_k * HEAD_DIM + rows
    tl.store(dk_ptr + out_offs, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=key_mask[:, None])
    tl.store(dv_ptr + out_offs, dv.to(dv_ptr.dtype.element_ty), mask=key_mask[:, None])


@triton.jit
def _dq_inner_tma(dq, q, do, lse2, delta, k_desc, v_desc, row0, lo, hi, offs_m, seqlen_k, qk_scale,
                  BLOCK_N: tl.constexpr, MASK_KEYS: tl.constexpr, MASK_CAUSAL: tl.constexpr, DOT_PRECISION: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = k_desc.load([row0 + start_n, 0])  # (BLOCK_N, D); keys past seqlen_k: the next head's, masked below
        v = v_desc.load([row0 + start_n, 0])
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)
        p = tl.math.exp2(s * qk_scale - lse2[:, None])
        if MASK_KEYS or MASK_CAUSAL:
            keep = offs_n[None, :] < seqlen_k
            if MASK_CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=DOT_PRECISION)
    return dq


@triton.jit
def _dq_kernel_tma(q_ptr, k_desc, v_desc, do_ptr, lse_ptr, delta_ptr, dq_ptr, seqlen_q, seqlen_k, n_heads_q, group,
                   qk_scale, sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr, DOT_PRECISION: tl.constexpr):
    qk_scale = tl.cast(qk_scale, tl.float32)
    sm_scale = tl.cast(sm_scale, tl.float32)
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    n_heads_kv = n_heads_q // group
    pid_bkv = (pid_bh // n_heads_q) * n_heads_kv + (pid_bh % n_heads_q) // group
    q_head = pid_bh.to(tl.int64) * seqlen_q * HEAD_DIM
    row0 = pid_bkv * seqlen_k
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
    if CAUSAL:
        dq = _dq_inner_tma(dq, q, do, lse2, delta, k_desc, v_desc, row0, 0, start_m, offs_m, seqlen_k, qk_scale,
                           BLOCK_N, False, False, DOT_PRECISION)  # fmt: skip
        dq = _dq_inner_tma(dq, q, do, lse2, delta, k_desc, v_desc, row0, start_m, tl.minimum(start_m + BLOCK_M, seqlen_k),
                           offs_m, seqlen_k, qk_scale, BLOCK_N, True, True, DOT_PRECISION)  # fmt: skip
    else:
        full = seqlen_k - seqlen_k % BLOCK_N
        dq = _dq_inner_tma(dq, q, do, lse2, delta, k_desc, v_desc, row0, 0, full, offs_m, seqlen_k, qk_scale,
                           BLOCK_N, False, False, DOT_PRECISION)  # fmt: skip
        dq = _dq_inner_tma(dq, q, do, lse2, delta, k_desc, v_desc, row0, full, seqlen_k, offs_m, seqlen_k, qk_scale,
                           BLOCK_N, True, False, DOT_PRECISION)  # fmt: skip
    tl.store(dq_ptr + q_head + offs, (dq * sm_scale).to(dq_ptr.dtype.element_ty), mask=row_mask[:, None])


def _rows(t: torch.Tensor, block_rows: int) -> TensorDescriptor:
    """A descriptor over a contiguous (..., S, D) tensor viewed as (rows, D), in (block_rows, D) tiles."""
    d = t.shape[-1]
    return TensorDescriptor(t, shape=[t.numel() // d, d], strides=[d, 1], block_shape=[block_rows, d])


def backward_tma(q, k, v, o, lse, do, causal: bool, scale: float, tma_dkdv: bool = True, tma_dq: bool = True,
                 extra_stages: int = 0):  # fmt: skip
    """The solution's attention_backward, its streamed tiles through descriptors where asked."""
    batch, n_heads_q, seqlen_q, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    device = fk.device_of(q)
    cfg = fk.backward_config(device, q.dtype)
    cfg = replace(cfg, dkdv_stages=cfg.dkdv_stages + extra_stages, dq_stages=cfg.dq_stages + extra_stages)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    delta = torch.empty_like(lse)
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    n_rows = batch * n_heads_q * seqlen_q
    fk.launch(fk._attn_bwd_preprocess_kernel, (cdiv(n_rows, cfg.preprocess_rows),),
              o, do, delta, n_rows, HEAD_DIM=head_dim, BLOCK_R=cfg.preprocess_rows)
    key_blocks = cdiv(seqlen_k, cfg.dkdv_block_n)
    split = fk.dkdv_split(group, key_blocks * batch * n_heads_kv, causal, device.sms, cfg.dkdv_programs_per_sm)
    if split == 1:
        dk_out, dv_out = dk, dv
    else:
        dk_out = torch.empty((batch * n_heads_kv * split, seqlen_k, head_dim), device=q.device, dtype=torch.float32)
        dv_out = torch.empty_like(dk_out)
    meta = dict(HEAD_DIM=head_dim, BLOCK_M=cfg.dkdv_block_m, BLOCK_N=cfg.dkdv_block_n, CAUSAL=causal,
                DOT_PRECISION=precision, num_warps=cfg.dkdv_warps, num_stages=cfg.dkdv_stages)  # fmt: skip
    if tma_dkdv:
        _dkdv_kernel_tma[(key_blocks, batch * n_heads_kv * split)](
            _rows(q, cfg.dkdv_block_m), k, v, _rows(do, cfg.dkdv_block_m), lse, delta, dk_out, dv_out, seqlen_q,
            seqlen_k, group, split, scale * LOG2E, scale, **meta)  # fmt: skip
    else:
        fk._attn_bwd_dkdv_kernel[(key_blocks, batch * n_heads_kv * split)](
            q, k, v, do, lse, delta, dk_out, dv_out, seqlen_q, seqlen_k, group, split, scale * LOG2E, scale, **meta)
    if split > 1:
        n_per_head = seqlen_k * head_dim
        fk.launch(fk._attn_bwd_sum_parts_kernel, (cdiv(n_per_head, fk.SUM_PARTS_BLOCK), batch * n_heads_kv),
                  dk_out, dv_out, dk, dv, n_per_head, split, BLOCK=fk.SUM_PARTS_BLOCK)
    meta = dict(HEAD_DIM=head_dim, BLOCK_M=cfg.dq_block_m, BLOCK_N=cfg.dq_block_n, CAUSAL=causal,
                DOT_PRECISION=precision, num_warps=cfg.dq_warps, num_stages=cfg.dq_stages)  # fmt: skip
    grid = (cdiv(seqlen_q, cfg.dq_block_m), batch * n_heads_q)
    if tma_dq:
        _dq_kernel_tma[grid](q, _rows(k, cfg.dq_block_n), _rows(v, cfg.dq_block_n), do, lse, delta, dq, seqlen_q,
                             seqlen_k, n_heads_q, group, scale * LOG2E, scale, **meta)  # fmt: skip
    else:
        fk._attn_bwd_dq_kernel[grid](q, k, v, do, lse, delta, dq, seqlen_q, seqlen_k, n_heads_q, group, scale * LOG2E,
                                     scale, **meta)  # fmt: skip
    return dq, dk, dv


VARIANTS = {  # name: (tma_dkdv, tma_dq, extra_stages)
    "pointers (the solution's kernels, this launcher)": (False, False, 0),
    "TMA dK/dV": (True, False, 0),
    "TMA dQ": (False, True, 0),
    "TMA both": (True, True, 0),
    "TMA both, one more stage": (True, True, 1),
}


def _inputs(b: int, hq: int, hkv: int, s: int, d: int, dtype: torch.dtype, device: str, seed: int = 0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return tuple(torch.randn(shape, generator=g).to(device=device, dtype=dtype)
                 for shape in ((b, hq, s, d), (b, hkv, s, d), (b, hkv, s, d), (b, hq, s, d)))  # fmt: skip


def _reference(q, k, v, do, causal: bool):
    qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    o = torch.nn.functional.scaled_dot_product_attention(qf, kf.repeat_interleave(group, 1),
                                                         vf.repeat_interleave(group, 1), is_causal=causal)  # fmt: skip
    o.backward(do.float())
    return qf.grad, kf.grad, vf.grad


def _errors(got, want) -> list[float]:
    return [float((a.float() - b).abs().max() / b.abs().max()) for a, b in zip(got, want)]


def dry() -> None:
    for b, hq, hkv, s, causal in ((1, 4, 2, 70, False), (1, 4, 2, 70, True), (2, 2, 1, 45, True)):
        q, k, v, do = _inputs(b, hq, hkv, s, 32, torch.float32, "cpu")
        scale = 32**-0.5
        o, lse = fk.attention_forward(q, k, v, causal, scale, True)
        want = _reference(q, k, v, do, causal)
        base = _errors(fk.attention_backward(q, k, v, o, lse, do, causal, scale), want)
        for name, (a, bq, extra) in VARIANTS.items():
            errs = _errors(backward_tma(q, k, v, o, lse, do, causal, scale, a, bq, extra), want)
            assert max(errs) < 1e-4, (name, errs)
        print(f"{b}x{hq}/{hkv}x{s} causal={causal}: every variant within 1e-4 (the solution {max(base):.1e})")
    print("dry run: every variant correct")


def gpu(out: Path) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: PLC0415

    from autograder.timing import median, time_interleaved  # noqa: PLC0415

    dev = torch.device("cuda")
    shapes = [(4, 32, 32, 4096, False), (4, 32, 32, 4096, True), (1, 32, 8, 2048, True), (4, 32, 8, 2048, True)]
    rows = []
    for b, hq, hkv, s, causal in shapes:
        d = 128
        q, k, v, do = _inputs(b, hq, hkv, s, d, torch.bfloat16, "cuda")
        scale = d**-0.5
        o, lse = fk.attention_forward(q, k, v, causal, scale, True)
        want = _reference(q, k, v, do, causal)
        errs = {"solution": _errors(fk.attention_backward(q, k, v, o, lse, do, causal, scale), want)}
        fns = {"solution": lambda i: fk.attention_backward(q, k, v, o, lse, do, causal, scale)}
        for name, (a, bq, extra) in VARIANTS.items():
            try:
                got = backward_tma(q, k, v, o, lse, do, causal, scale, a, bq, extra)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a variant that does not compile or fit is reported
                errs[name] = str(e).splitlines()[0][:200]
                continue
            errs[name] = _errors(got, want)
            if max(errs[name]) > 1.5 * max(errs["solution"]) + 1e-3:
                continue
            fns[name] = lambda i, a=a, bq=bq, extra=extra: backward_tma(q, k, v, o, lse, do, causal, scale, a, bq, extra)
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            res = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, enable_gqa=hq != hkv)
        fns["SDPA cuDNN"] = lambda i: torch.autograd.grad(res, (qg, kg, vg), do, retain_graph=True)
        times = time_interleaved(fns, 1, 20, dev)
        flops = 2.5 * 4 * b * hq * s * s * d * (0.5 if causal else 1.0)
        for name, ts in times.items():
            t = median(ts)
            rows.append({"shape": f"{b}x{hq}/{hkv}x{s}x{d}", "causal": causal, "impl": name, "us": t * 1e3,
                         "tflops": flops / (t * 1e-3) / 1e12, "errors": errs.get(name)})  # fmt: skip
        for name, e in errs.items():
            if isinstance(e, str) or name not in times:
                rows.append({"shape": f"{b}x{hq}/{hkv}x{s}x{d}", "causal": causal, "impl": name, "not timed": e})
        print(f"{b}x{hq}/{hkv}x{s} causal={causal}: " + ", ".join(f"{n} {median(t) * 1e3:.0f} us" for n, t in times.items()),
              flush=True)  # fmt: skip
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/flash_bwd_tma_probe.py OUT"}  # fmt: skip
    (out / "flash_bwd_tma_probe.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["| shape | causal | impl | us | TFLOP/s | vs cuDNN | vs solution |", "|---|---|---|---:|---:|---:|---:|"]
    for key in dict.fromkeys((r["shape"], r["causal"]) for r in rows):
        group_rows = [r for r in rows if (r["shape"], r["causal"]) == key and "us" in r]
        cudnn = next(r["us"] for r in group_rows if r["impl"] == "SDPA cuDNN")
        sol = next(r["us"] for r in group_rows if r["impl"] == "solution")
        for r in group_rows:
            lines.append(f"| {key[0]} | {key[1]} | {r['impl']} | {r['us']:.1f} | {r['tflops']:.0f} | "
                         f"{cudnn / r['us']:.2f}x | {sol / r['us']:.2f}x |")  # fmt: skip
    (out / "flash_bwd_tma_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if "--dry" in sys.argv:
        dry()
    else:
        gpu(Path(sys.argv[1]))
