"""Flash attention forward against cuDNN (issue 22): the solution's tile settings swept per sequence length, and a
forward whose program carries its 128 queries as two independent 64-row halves (two chains of dot, softmax, dot
per key block, sharing each K and V tile), so that one half's softmax has the other half's products to overlap.

    python results/provenance/flash_fwd_probe.py --dry    # on the CPU (interpreter): the halves kernel checked
    python results/provenance/flash_fwd_probe.py --ptx    # on the CPU: sm_90 compilations, wgmma waits, registers
    python results/provenance/flash_fwd_probe.py OUT      # on a GPU: every variant checked, then timed beside SDPA
    python results/provenance/flash_fwd_probe.py OUT --lengths   # the two entries' tiles over lengths and batches

Timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of 20,
bf16, d = 128, 4 x 32 heads. Every timed variant's output is first compared with SDPA's (math backend, float32)."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

if "--dry" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"
elif "--ptx" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path.cwd()))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

LOG2E = 1.4426950408889634


@triton.jit
def _half_step(acc, l_i, m_i, q, kT, v, offs_m, offs_n, seqlen_k, qk_scale, MASK_KEYS: tl.constexpr,
               MASK_CAUSAL: tl.constexpr):
    s = tl.dot(q, kT)
    if MASK_KEYS or MASK_CAUSAL:
        keep = offs_n[None, :] < seqlen_k
        if MASK_CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
    else:
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, l_i, m_new


@triton.jit
def _halves_inner(acc0, l0, m0, acc1, l1, m1, q0, q1, k_head_ptr, v_head_ptr, k_desc, v_desc, kv_row0, lo, hi,
                  offs_m0, offs_m1, seqlen_k, qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                  MASK_KEYS: tl.constexpr, MASK_CAUSAL: tl.constexpr, USE_TMA: tl.constexpr):
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + offs_n0
        if USE_TMA:
            k = k_desc.load([kv_row0 + start_n, 0])
            v = v_desc.load([kv_row0 + start_n, 0])
        else:
            kv_offs = offs_n[:, None] * HEAD_DIM + offs_d[None, :]
            k = tl.load(k_head_ptr + kv_offs, mask=offs_n[:, None] < seqlen_k, other=0.0)
            v = tl.load(v_head_ptr + kv_offs, mask=offs_n[:, None] < seqlen_k, other=0.0)
        kT = tl.trans(k)
        acc0, l0, m0 = _half_step(acc0, l0, m0, q0, kT, v, offs_m0, offs_n, seqlen_k, qk_scale, MASK_KEYS, MASK_CAUSAL)
        acc1, l1, m1 = _half_step(acc1, l1, m1, q1, kT, v, offs_m1, offs_n, seqlen_k, qk_scale, MASK_KEYS, MASK_CAUSAL)
    return acc0, l0, m0, acc1, l1, m1


@triton.jit
def _halves_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, k_desc, v_desc, seqlen_q, seqlen_k, n_heads_q, group, qk_scale,
                       HEAD_DIM: tl.constexpr, HALF: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                       USE_TMA: tl.constexpr):
    """Program (i, b * Hq + h): queries i*2*HALF .. of head h, as two halves of HALF rows."""
    BLOCK_M: tl.constexpr = 2 * HALF
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m
    pid_bh = tl.program_id(1)
    n_heads_kv = n_heads_q // group
    pid_bkv = (pid_bh // n_heads_q) * n_heads_kv + (pid_bh % n_heads_q) // group
    q_head = pid_bh.to(tl.int64) * seqlen_q * HEAD_DIM
    kv_head = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM
    kv_row0 = pid_bkv * seqlen_k
    offs_d = tl.arange(0, HEAD_DIM)
    offs_m0 = pid_m * BLOCK_M + tl.arange(0, HALF)
    offs_m1 = offs_m0 + HALF
    q0 = tl.load(q_ptr + q_head + offs_m0[:, None] * HEAD_DIM + offs_d[None, :], mask=(offs_m0 < seqlen_q)[:, None], other=0.0)
    q1 = tl.load(q_ptr + q_head + offs_m1[:, None] * HEAD_DIM + offs_d[None, :], mask=(offs_m1 < seqlen_q)[:, None], other=0.0)
    m0 = tl.full([HALF], float("-inf"), dtype=tl.float32)
    m1 = tl.full([HALF], float("-inf"), dtype=tl.float32)
    l0 = tl.zeros([HALF], dtype=tl.float32)
    l1 = tl.zeros([HALF], dtype=tl.float32)
    acc0 = tl.zeros([HALF, HEAD_DIM], dtype=tl.float32)
    acc1 = tl.zeros([HALF, HEAD_DIM], dtype=tl.float32)
    kp = k_ptr + kv_head
    vp = v_ptr + kv_head
    if CAUSAL:
        diag = pid_m * BLOCK_M
        acc0, l0, m0, acc1, l1, m1 = _halves_inner(acc0, l0, m0, acc1, l1, m1, q0, q1, kp, vp, k_desc, v_desc, kv_row0,
                                                   0, diag, offs_m0, offs_m1, seqlen_k, qk_scale, BLOCK_N, HEAD_DIM,
                                                   False, False, USE_TMA)
        acc0, l0, m0, acc1, l1, m1 = _halves_inner(acc0, l0, m0, acc1, l1, m1, q0, q1, kp, vp, k_desc, v_desc, kv_row0,
                                                   diag, tl.minimum(diag + BLOCK_M, seqlen_k), offs_m0, offs_m1,
                                                   seqlen_k, qk_scale, BLOCK_N, HEAD_DIM, True, True, USE_TMA)
    else:
        full = seqlen_k - seqlen_k % BLOCK_N
        acc0, l0, m0, acc1, l1, m1 = _halves_inner(acc0, l0, m0, acc1, l1, m1, q0, q1, kp, vp, k_desc, v_desc, kv_row0,
                                                   0, full, offs_m0, offs_m1, seqlen_k, qk_scale, BLOCK_N, HEAD_DIM,
                                                   False, False, USE_TMA)
        acc0, l0, m0, acc1, l1, m1 = _halves_inner(acc0, l0, m0, acc1, l1, m1, q0, q1, kp, vp, k_desc, v_desc, kv_row0,
                                                   full, seqlen_k, offs_m0, offs_m1, seqlen_k, qk_scale, BLOCK_N,
                                                   HEAD_DIM, True, False, USE_TMA)
    o_ty = o_ptr.dtype.element_ty
    tl.store(o_ptr + q_head + offs_m0[:, None] * HEAD_DIM + offs_d[None, :], (acc0 / l0[:, None]).to(o_ty),
             mask=(offs_m0 < seqlen_q)[:, None])
    tl.store(o_ptr + q_head + offs_m1[:, None] * HEAD_DIM + offs_d[None, :], (acc1 / l1[:, None]).to(o_ty),
             mask=(offs_m1 < seqlen_q)[:, None])


def halves_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, half: int, block_n: int,
                   warps: int, stages: int, tma: bool) -> torch.Tensor:
    """(B, Hq, S, D) q against (B, Hkv, S, D) k and v, contiguous."""
    batch, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    o = torch.empty_like(q)
    if tma:
        from triton.tools.tensor_descriptor import TensorDescriptor
        k_desc = TensorDescriptor(k, shape=[k.numel() // d, d], strides=[d, 1], block_shape=[block_n, d])
        v_desc = TensorDescriptor(v, shape=[v.numel() // d, d], strides=[d, 1], block_shape=[block_n, d])
    else:
        k_desc, v_desc = k, v
    grid = (triton.cdiv(sq, 2 * half), batch * hq)
    _halves_fwd_kernel[grid](q, k, v, o, k_desc, v_desc, sq, sk, hq, hq // hkv, d ** -0.5 * LOG2E, HEAD_DIM=d,
                             HALF=half, BLOCK_N=block_n, CAUSAL=causal, USE_TMA=tma, num_warps=warps,
                             num_stages=stages)
    return o


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(group, dim=1) for t in (k, v))
    return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)


def dry() -> None:
    """The interpreter (float32, pointer loads): odd lengths, grouped heads, both causalities."""
    torch.manual_seed(0)
    for b, hq, hkv, s, d, causal in [(1, 2, 1, 100, 32, False), (2, 4, 2, 77, 16, True), (1, 2, 2, 64, 32, True),
                                     (1, 1, 1, 129, 16, False)]:
        q, k, v = (torch.randn(b, h, s, d) for h in (hq, hkv, hkv))
        got = halves_forward(q, k, v, causal, 16, 16, 4, 1, False)
        err = (got - reference(q, k, v, causal)).abs().max().item()
        print(f"dry {b}x{hq}/{hkv}x{s}x{d} causal={causal}: max error {err:.2e}")
        assert err < 1e-4, err
    print("dry: all correct")


def ptx() -> None:
    """sm_90 compilations of the solution's forward and the halves forward at (128, 128, 8 warps, 3 stages) with TMA:
    registers, spills, and the wgmma wait counts in the PTX."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from autograder.portability import _bind, _resource_usage
    from solutions.flash_attention import kernels as fa

    target = GPUTarget("cuda", 90, 32)
    meta = torch.empty(4, 32, 4096, 128, dtype=torch.bfloat16, device="meta")

    from triton.tools.tensor_descriptor import TensorDescriptor

    def desc(block_n: int) -> TensorDescriptor:
        return TensorDescriptor(meta, shape=[4 * 32 * 4096, 128], strides=[128, 1], block_shape=[block_n, 128])

    def build(label: str, jit, args: tuple, kw: dict) -> None:  # noqa: ANN001
        _, (sig, ce, attrs, opts) = _bind(jit, args, kw, 90)
        k = triton.compile(ASTSource(jit, sig, ce, attrs), target=target, options=opts.__dict__)
        regs, spill = _resource_usage(k.asm["cubin"])
        # the PTX in order, one letter per event: M a wgmma issued, W<n> a wait for all but n, E an exponential
        events = re.findall(r"(wgmma\.mma_async|wgmma\.wait_group\.sync\.aligned\s+\d+|ex2\.approx)", k.asm["ptx"])
        trace = "".join("M" if e.startswith("wgmma.mma") else "E" if e.startswith("ex2") else "W" + e.split()[-1]
                        for e in events)
        trace = re.sub(r"(M+|E+)", lambda g: f"{g.group(0)[0]}{len(g.group(0))}", trace)
        print(f"{label}: {regs} registers, {spill} B spilled, smem {k.metadata.shared} B\n    {trace}")

    for causal in (False, True):
        build(f"solution causal={causal}", fa._attn_fwd_kernel,
              (meta, meta, meta, meta, meta, desc(128), desc(128), 4096, 4096, 32, 1, 0.1),
              dict(HEAD_DIM=128, BLOCK_M=128, BLOCK_N=128, CAUSAL=causal, STORE_LSE=False, USE_TMA=True,
                   DOT_PRECISION="tf32", num_warps=8, num_stages=3))
        for half, bn, w, st in [(64, 128, 8, 3), (64, 64, 8, 3), (64, 128, 4, 2)]:
            build(f"halves {half}x2 {bn} w{w} s{st} causal={causal}", _halves_fwd_kernel,
                  (meta, meta, meta, meta, desc(bn), desc(bn), 4096, 4096, 32, 1, 0.1),
                  dict(HEAD_DIM=128, HALF=half, BLOCK_N=bn, CAUSAL=causal, USE_TMA=True, num_warps=w, num_stages=st))


def gpu(out: Path, lengths: bool) -> None:
    """Every variant checked against float32 SDPA, then timed beside SDPA's cuDNN backend. With `lengths`, only the
    long and the short entry's tiles, over lengths 512-4096 at 4x32 heads and at the module 10 block's 1x32/8."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from autograder.timing import median, time_interleaved
    from course.results import run_meta
    from solutions.flash_attention import kernels as fa

    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    picked = fa.forward_config
    if lengths:
        settings, halves = [(128, 128, 8, 3), (64, 64, 4, 3)], []
        shapes = [(4, 32, 32, s) for s in (512, 1024, 2048, 4096)] + [(1, 32, 8, s) for s in (512, 1024, 2048, 4096)]
        name = "flash_fwd_lengths.json"
    else:
        # (BLOCK_M, BLOCK_N, warps, stages): one program per SM at 128 queries (registers), two at 64 queries
        # where the K/V stages leave room (64 x 64 x 2 or 3 stages, 64 x 32 x 4). The kernel needs BLOCK_N to
        # divide BLOCK_M (the causal diagonal): 64 x 128 is timed non-causal only.
        settings = [(128, 128, 8, 3), (128, 128, 8, 2), (128, 64, 8, 3), (128, 64, 8, 4), (64, 64, 4, 2),
                    (64, 64, 4, 3), (64, 64, 4, 4), (64, 128, 4, 2), (64, 128, 4, 3), (64, 32, 4, 4), (128, 32, 8, 4)]
        halves = [(64, 128, 8, 3), (64, 64, 8, 3), (64, 128, 4, 2)]
        shapes = [(4, 32, 32, s) for s in (512, 1024, 4096, 8192)]
        name = "flash_fwd_probe.json"
    rows = []
    for b, hq, hkv, s in shapes:
        for causal in (False, True):
            torch.manual_seed(s)
            q = torch.randn(b, hq, s, 128, device=dev, dtype=torch.bfloat16)
            k, v = (torch.randn(b, hkv, s, 128, device=dev, dtype=torch.bfloat16) for _ in range(2))
            exact = reference(q, k, v, causal)
            fns: dict = {}

            def cudnn(i: int) -> torch.Tensor:
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                            enable_gqa=hq != hkv)

            fns["cudnn"] = cudnn
            fns["solution"] = lambda i: fa.flash_attention(q, k, v, causal=causal)
            for bm, bn, w, st in settings:
                if causal and bm % bn:
                    continue
                cfg = fa.FwdConfig(bm, bn, w, st, True)

                def run(i: int, cfg=cfg) -> torch.Tensor:
                    fa.forward_config = lambda *a, **kw: cfg
                    try:
                        return fa.attention_forward(q, k, v, causal, 128 ** -0.5, False)[0]
                    finally:
                        fa.forward_config = picked
                fns[f"tile {bm}x{bn} w{w} s{st}"] = run
            for half, bn, w, st in halves:
                fns[f"halves {half}x2 {bn} w{w} s{st}"] = (
                    lambda i, a=(half, bn, w, st): halves_forward(q, k, v, causal, *a, True))
            errors, good = {}, {}
            for label, fn in fns.items():
                try:
                    got = fn(0)
                    torch.cuda.synchronize()
                    errors[label] = (got.float() - exact).abs().max().item()
                except Exception as e:  # noqa: BLE001 - a setting that does not fit is recorded, not fatal
                    errors[label] = repr(e)[:160]
                    continue
                if errors[label] < 0.03:
                    good[label] = fn
                else:
                    print("wrong", b, hq, hkv, s, causal, label, errors[label], flush=True)
            times = time_interleaved(good, 1, 20, dev)
            us = {lab: median(t) * 1e3 for lab, t in times.items()}
            flops = 4 * b * hq * s * s * 128 / (2 if causal else 1)
            rows.append({"B": b, "Hq": hq, "Hkv": hkv, "S": s, "causal": causal, "us": us, "errors": errors,
                         "tflops": {lab: flops / t / 1e6 for lab, t in us.items()}})
            best = min((t, lab) for lab, t in us.items() if lab not in ("cudnn", "solution"))
            print(f"{b}x{hq}/{hkv}x{s} causal={causal}: cudnn {us['cudnn']:.1f} us, solution {us['solution']:.1f} "
                  f"({us['cudnn'] / us['solution']:.3f}x), best {best[1]} {best[0]:.1f} "
                  f"({us['cudnn'] / best[0]:.3f}x)", flush=True)
            (out / name).write_text(json.dumps({"meta": run_meta("flash_fwd_probe"), "rows": rows}, indent=1))


if __name__ == "__main__":
    if "--dry" in sys.argv:
        dry()
    elif "--ptx" in sys.argv:
        ptx()
    else:
        gpu(Path(sys.argv[1]), "--lengths" in sys.argv)
