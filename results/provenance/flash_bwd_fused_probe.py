"""Flash attention backward against cuDNN (issue 20's training step, module 08 section 8): one kernel that
computes dK, dV and dQ together, adding each key block's share of dQ into a float32 buffer with atomics
(FlashAttention-2's design), against the solution's two kernels (dK/dV, then dQ: seven products where the
fused kernel does five).

    python results/provenance/flash_bwd_fused_probe.py --dry    # on the CPU (interpreter): every variant checked
    python results/provenance/flash_bwd_fused_probe.py --ptx    # on the CPU: sm_90 compilations (atomics, registers)
    python results/provenance/flash_bwd_fused_probe.py OUT      # on a GPU: checked, then timed beside SDPA
    python results/provenance/flash_bwd_fused_probe.py OUT --gqa   # the solution's kernels one by one, and its
                                                       # dK/dV kernel with a GQA group shared among programs

The dQ shares are added either with `tl.atomic_add` on a tile of pointers (one reduction per element) or with a
tensor descriptor's `atomic_add` (Hopper's bulk tensor reduction, one instruction per tile). The delta kernel also
zeroes the float32 buffer, and a last kernel scales and casts it into dQ.

Timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of 20,
bf16, d = 128. Every timed variant's gradients are first compared with float32 autograd through SDPA's math path."""
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

try:
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover
    TensorDescriptor = None

LOG2E = 1.4426950408889634


@triton.jit
def _preprocess_zero_kernel(o_ptr, do_ptr, delta_ptr, dq_acc_ptr, n_rows, HEAD_DIM: tl.constexpr,
                            BLOCK_R: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    mask = rows < n_rows
    offs = rows.to(tl.int64)[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    o = tl.load(o_ptr + offs, mask=mask[:, None], other=0.0).to(tl.float32)
    do = tl.load(do_ptr + offs, mask=mask[:, None], other=0.0).to(tl.float32)
    tl.store(delta_ptr + rows, tl.sum(o * do, 1), mask=mask)
    tl.store(dq_acc_ptr + offs, tl.zeros([BLOCK_R, HEAD_DIM], tl.float32), mask=mask[:, None])


@triton.jit
def _convert_kernel(dq_acc_ptr, dq_ptr, n, sm_scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(dq_acc_ptr + offs, mask=mask, other=0.0)
    tl.store(dq_ptr + offs, (x * sm_scale).to(dq_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _fused_inner(dk, dv, k, v, q_head_ptr, do_head_ptr, lse_head_ptr, delta_head_ptr, dq_head_ptr, dq_desc, dq_row0,
                 lo, hi, offs_n, seqlen_q, qk_scale, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr,
                 MASK_Q: tl.constexpr, MASK_CAUSAL: tl.constexpr, DQ_TMA: tl.constexpr):
    offs_d = tl.arange(0, HEAD_DIM)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        offs = offs_m[:, None] * HEAD_DIM + offs_d[None, :]
        if MASK_Q:
            q_mask = offs_m < seqlen_q
            q = tl.load(q_head_ptr + offs, mask=q_mask[:, None], other=0.0)
            do = tl.load(do_head_ptr + offs, mask=q_mask[:, None], other=0.0)
            lse = tl.load(lse_head_ptr + offs_m, mask=q_mask, other=float("inf"))
            delta = tl.load(delta_head_ptr + offs_m, mask=q_mask, other=0.0)
        else:
            q = tl.load(q_head_ptr + offs)
            do = tl.load(do_head_ptr + offs)
            lse = tl.load(lse_head_ptr + offs_m)
            delta = tl.load(delta_head_ptr + offs_m)
        s_t = tl.dot(k, tl.trans(q))  # (BLOCK_N, BLOCK_M)
        p_t = tl.math.exp2(s_t * qk_scale - (lse * 1.4426950408889634)[None, :])
        if MASK_CAUSAL:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        dp_t = tl.dot(v, tl.trans(do))  # (BLOCK_N, BLOCK_M)
        ds_t = (p_t * (dp_t - delta[None, :])).to(q.dtype)
        dk = tl.dot(ds_t, q, dk)
        dq = tl.dot(tl.trans(ds_t), k)  # (BLOCK_M, HEAD_DIM): this key block's share of dQ, unscaled
        if DQ_TMA:
            dq_desc.atomic_add([dq_row0 + start_m, 0], dq)
        elif MASK_Q:
            tl.atomic_add(dq_head_ptr + offs, dq, mask=q_mask[:, None], sem="relaxed")
        else:
            tl.atomic_add(dq_head_ptr + offs, dq, sem="relaxed")
    return dk, dv


@triton.jit
def _fused_bwd_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_acc_ptr, dq_desc, dk_ptr, dv_ptr,
                      seqlen_q, seqlen_k, group, qk_scale, sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, DQ_TMA: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_bkv = tl.program_id(1)
    start_n = pid_n * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_mask = offs_n < seqlen_k
    kv_offs = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    k = tl.load(k_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
    v = tl.load(v_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    full = seqlen_q - seqlen_q % BLOCK_M
    for g in range(0, group):
        bh = (pid_bkv * group + g).to(tl.int64)
        q_head = q_ptr + bh * seqlen_q * HEAD_DIM
        do_head = do_ptr + bh * seqlen_q * HEAD_DIM
        dq_head = dq_acc_ptr + bh * seqlen_q * HEAD_DIM
        lse_head = lse_ptr + bh * seqlen_q
        delta_head = delta_ptr + bh * seqlen_q
        dq_row0 = (bh * seqlen_q).to(tl.int32)
        if CAUSAL:
            dk, dv = _fused_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head, dq_head, dq_desc, dq_row0,
                                  start_n, tl.minimum(start_n + BLOCK_N, seqlen_q), offs_n, seqlen_q, qk_scale,
                                  BLOCK_M, HEAD_DIM, True, True, DQ_TMA)
            lo = start_n + BLOCK_N
        else:
            lo = 0
        dk, dv = _fused_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head, dq_head, dq_desc, dq_row0,
                              lo, full, offs_n, seqlen_q, qk_scale, BLOCK_M, HEAD_DIM, False, False, DQ_TMA)
        dk, dv = _fused_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head, dq_head, dq_desc, dq_row0,
                              tl.maximum(lo, full), seqlen_q, offs_n, seqlen_q, qk_scale, BLOCK_M, HEAD_DIM,
                              True, False, DQ_TMA)
    tl.store(dk_ptr + kv_offs, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=key_mask[:, None])
    tl.store(dv_ptr + kv_offs, dv.to(dv_ptr.dtype.element_ty), mask=key_mask[:, None])


def fused_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor,
                   do: torch.Tensor, causal: bool, scale: float, block_m: int, block_n: int, warps: int, stages: int,
                   dq_tma: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    delta = torch.empty_like(lse)
    dq_acc = torch.empty(q.shape, device=q.device, dtype=torch.float32)  # zeroed by the delta kernel
    n_rows = batch * hq * sq
    _preprocess_zero_kernel[(triton.cdiv(n_rows, 64),)](o, do, delta, dq_acc, n_rows, HEAD_DIM=d, BLOCK_R=64)
    if dq_tma:
        # rows of one head only: a tile past the head's last query would add into the next head's first rows,
        # so a head's length must be a multiple of the step (the probe only times such shapes with it)
        assert sq % block_m == 0
        dq_desc = TensorDescriptor(dq_acc.view(n_rows, d), [n_rows, d], [d, 1], [block_m, d])
    else:
        dq_desc = None
    _fused_bwd_kernel[(triton.cdiv(sk, block_n), batch * hkv)](
        q, k, v, do, lse, delta, dq_acc, dq_desc, dk, dv, sq, sk, hq // hkv, scale * LOG2E, scale,
        HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, DQ_TMA=dq_tma, num_warps=warps,
        num_stages=stages)
    dq = torch.empty_like(q)
    n = dq.numel()
    _convert_kernel[(triton.cdiv(n, 4096),)](dq_acc, dq, n, scale, BLOCK=4096)
    return dq, dk, dv


@triton.jit
def _dkdv_split_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, seqlen_q, seqlen_k, group,
                       qk_scale, sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       CAUSAL: tl.constexpr, SPLIT: tl.constexpr):
    """The solution's dK/dV kernel with the group's query heads shared among SPLIT programs: program
    (j, (b * Hkv + kv) * SPLIT + s) sums heads s*group/SPLIT ... into float32 partials (SPLIT > 1)."""
    pid_n = tl.program_id(0)
    pid = tl.program_id(1)
    pid_bkv = pid // SPLIT
    part = pid % SPLIT
    per_program = group // SPLIT
    start_n = pid_n * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_mask = offs_n < seqlen_k
    kv_offs = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    k = tl.load(k_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
    v = tl.load(v_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    full = seqlen_q - seqlen_q % BLOCK_M
    for g in range(part * per_program, (part + 1) * per_program):
        bh = (pid_bkv * group + g).to(tl.int64)
        q_head = q_ptr + bh * seqlen_q * HEAD_DIM
        do_head = do_ptr + bh * seqlen_q * HEAD_DIM
        lse_head = lse_ptr + bh * seqlen_q
        delta_head = delta_ptr + bh * seqlen_q
        if CAUSAL:
            dk, dv = _dkdv_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head, start_n,
                              tl.minimum(start_n + BLOCK_N, seqlen_q), offs_n, seqlen_q, qk_scale,
                              BLOCK_M, HEAD_DIM, True, True, "tf32")
            lo = start_n + BLOCK_N
        else:
            lo = 0
        dk, dv = _dkdv_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head, lo, full, offs_n, seqlen_q, qk_scale,
                          BLOCK_M, HEAD_DIM, False, False, "tf32")
        dk, dv = _dkdv_inner(dk, dv, k, v, q_head, do_head, lse_head, delta_head, tl.maximum(lo, full), seqlen_q,
                          offs_n, seqlen_q, qk_scale, BLOCK_M, HEAD_DIM, True, False, "tf32")
    if SPLIT == 1:
        tl.store(dk_ptr + kv_offs, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=key_mask[:, None])
        tl.store(dv_ptr + kv_offs, dv.to(dv_ptr.dtype.element_ty), mask=key_mask[:, None])
    else:
        p_offs = pid.to(tl.int64) * seqlen_k * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        tl.store(dk_ptr + p_offs, dk, mask=key_mask[:, None])
        tl.store(dv_ptr + p_offs, dv, mask=key_mask[:, None])


@triton.jit
def _sum_parts_kernel(dk_part_ptr, dv_part_ptr, dk_ptr, dv_ptr, n_per_head, sm_scale, SPLIT: tl.constexpr,
                      BLOCK: tl.constexpr):
    """dK, dV of one KV head = the sum of its SPLIT float32 partials, in order (deterministic)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_per_head
    head = tl.program_id(1).to(tl.int64)
    dk = tl.zeros([BLOCK], tl.float32)
    dv = tl.zeros([BLOCK], tl.float32)
    for s in tl.static_range(SPLIT):
        base = (head * SPLIT + s) * n_per_head
        dk += tl.load(dk_part_ptr + base + offs, mask=mask, other=0.0)
        dv += tl.load(dv_part_ptr + base + offs, mask=mask, other=0.0)
    tl.store(dk_ptr + head * n_per_head + offs, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=mask)
    tl.store(dv_ptr + head * n_per_head + offs, dv.to(dv_ptr.dtype.element_ty), mask=mask)


_dkdv_inner = None  # bound to the solution's _attn_bwd_dkdv_inner by _bind_solution()


def _bind_solution(sol) -> None:
    globals()["_dkdv_inner"] = sol._attn_bwd_dkdv_inner


def split_backward(sol, q, k, v, o, lse, do, causal: bool, scale: float, split: int, block_m: int, block_n: int,
                   warps: int, stages: int, parts: str = "all"):
    """The solution's backward with its dK/dV kernel's GQA group shared among `split` programs."""
    batch, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    group = hq // hkv
    cfg = sol.backward_config(sol.device_of(q), q.dtype)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    delta = torch.empty_like(lse)
    n_rows = batch * hq * sq
    if parts in ("all", "pre"):
        sol._attn_bwd_preprocess_kernel[(triton.cdiv(n_rows, 64),)](o, do, delta, n_rows, HEAD_DIM=d, BLOCK_R=64)
    if parts in ("all", "dkdv"):
        if split == 1:
            dk_out, dv_out = dk, dv
        else:
            dk_out = torch.empty((batch * hkv * split, sk, d), device=q.device, dtype=torch.float32)
            dv_out = torch.empty_like(dk_out)
        _dkdv_split_kernel[(triton.cdiv(sk, block_n), batch * hkv * split)](
            q, k, v, do, lse, delta, dk_out, dv_out, sq, sk, group, scale * LOG2E, scale, HEAD_DIM=d,
            BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, SPLIT=split, num_warps=warps, num_stages=stages)
        if split > 1:
            n = sk * d
            _sum_parts_kernel[(triton.cdiv(n, 2048), batch * hkv)](dk_out, dv_out, dk, dv, n, scale, SPLIT=split,
                                                                   BLOCK=2048)
    if parts in ("all", "dq"):
        sol._attn_bwd_dq_kernel[(triton.cdiv(sq, cfg.dq_block_m), batch * hq)](
            q, k, v, do, lse, delta, dq, sq, sk, hq, group, scale * LOG2E, scale, HEAD_DIM=d,
            BLOCK_M=cfg.dq_block_m, BLOCK_N=cfg.dq_block_n, CAUSAL=causal,
            DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32", num_warps=cfg.dq_warps,
            num_stages=cfg.dq_stages)
    return dq, dk, dv


def _solution():
    from autograder.portability import _load_solution  # noqa: PLC0415
    return _load_solution("flash_attention")


def _inputs(b: int, hq: int, hkv: int, s: int, d: int, dtype: torch.dtype, device: str, seed: int = 0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    q, k, v, do = (torch.randn(shape, generator=g).to(device=device, dtype=dtype)
                   for shape in ((b, hq, s, d), (b, hkv, s, d), (b, hkv, s, d), (b, hq, s, d)))
    return q, k, v, do


def _reference(q, k, v, do, causal: bool):
    qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    ke, ve = kf.repeat_interleave(group, 1), vf.repeat_interleave(group, 1)
    o = torch.nn.functional.scaled_dot_product_attention(qf, ke, ve, is_causal=causal)
    o.backward(do.float())
    return qf.grad, kf.grad, vf.grad


def _errors(got, want) -> list[float]:
    return [float((a.float() - b).abs().max() / b.abs().max()) for a, b in zip(got, want)]


def dry() -> None:
    sol = _solution()
    torch.manual_seed(0)
    for (b, hq, hkv, s, d, causal) in [(1, 4, 2, 77, 32, True), (2, 2, 2, 64, 16, False), (1, 4, 1, 130, 32, True),
                                       (1, 2, 2, 95, 64, False)]:
        q, k, v, do = _inputs(b, hq, hkv, s, d, torch.float32, "cpu")
        scale = d ** -0.5
        o, lse = sol.attention_forward(q, k, v, causal, scale, True)
        want = _reference(q, k, v, do, causal)
        got = fused_backward(q, k, v, o, lse, do, causal, scale, 16, 32, 4, 1, False)
        two = sol.attention_backward(q, k, v, o, lse, do, causal, scale)
        _bind_solution(sol)
        for split in (1, 2, hq // hkv):
            if (hq // hkv) % split == 0:
                sp = split_backward(sol, q, k, v, o, lse, do, causal, scale, split, 16, 32, 4, 1)
                print("   split", split, ["%.1e" % e for e in _errors(sp, want)])
        print((b, hq, hkv, s, d, causal), "fused", ["%.1e" % e for e in _errors(got, want)],
              "two kernels", ["%.1e" % e for e in _errors(two, want)])


def ptx() -> None:
    from triton.backends.compiler import GPUTarget  # noqa: PLC0415
    from triton.compiler import ASTSource  # noqa: PLC0415
    from autograder.portability import _resource_usage  # noqa: PLC0415
    target = GPUTarget("cuda", 90, 32)
    for dq_tma in (False, True):
        for block_m, block_n, warps, stages in [(64, 128, 8, 2), (64, 128, 8, 3), (32, 128, 8, 2), (64, 64, 4, 2)]:
            sig = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "do_ptr": "*bf16", "lse_ptr": "*fp32",
                   "delta_ptr": "*fp32", "dq_acc_ptr": "*fp32",
                   "dq_desc": f"tensordesc<fp32[{block_m}, 128]>" if dq_tma else "constexpr",
                   "dk_ptr": "*bf16", "dv_ptr": "*bf16", "seqlen_q": "i32", "seqlen_k": "i32", "group": "i32",
                   "qk_scale": "fp32", "sm_scale": "fp32", "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr",
                   "BLOCK_N": "constexpr", "CAUSAL": "constexpr", "DQ_TMA": "constexpr"}
            consts = {"HEAD_DIM": 128, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": True, "DQ_TMA": dq_tma}
            if not dq_tma:
                consts["dq_desc"] = None
            attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 5, 6, 8, 9)}
            try:
                src = ASTSource(_fused_bwd_kernel, sig, consts, attrs)
                k = triton.compile(src, target=target, options={"num_warps": warps, "num_stages": stages})
            except Exception as e:  # noqa: BLE001
                print(f"tma={dq_tma} {block_m}x{block_n} w{warps} s{stages}: compile failed: {str(e)[:300]}")
                continue
            text = k.asm["ptx"]
            reds = sorted(set(re.findall(r"\b(red\.[\w.]+|atom\.[\w.]+|cp\.reduce\.async\.bulk[\w.:]*)", text)))
            regs, spills = _resource_usage(k.asm["cubin"])
            print(f"tma={dq_tma} {block_m}x{block_n} w{warps} s{stages}: smem {k.metadata.shared} B, regs {regs}, "
                  f"spills {spills}, reductions {reds}, wgmma waits {len(re.findall('wgmma.wait_group', text))}")


def gpu(out: Path) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: PLC0415
    from autograder.timing import median, time_interleaved  # noqa: PLC0415
    sol = _solution()
    dev = torch.device("cuda")
    variants = [(bm, bn, w, st, tma) for tma in (False, True)
                for bm, bn, w, st in [(64, 128, 8, 2), (64, 128, 8, 3), (32, 128, 8, 2), (32, 128, 4, 2),
                                      (64, 64, 4, 2), (64, 64, 4, 3)]]
    shapes = [(4, 32, 32, 1024, False), (4, 32, 32, 2048, False), (4, 32, 32, 4096, False),
              (4, 32, 32, 2048, True), (4, 32, 32, 4096, True), (1, 32, 8, 2048, True), (4, 32, 8, 2048, True)]
    rows = []
    for b, hq, hkv, s, causal in shapes:
        d = 128
        q, k, v, do = _inputs(b, hq, hkv, s, d, torch.bfloat16, "cuda")
        scale = d ** -0.5
        o, lse = sol.attention_forward(q, k, v, causal, scale, True)
        want = _reference(q, k, v, do, causal)
        fns = {}
        two = sol.attention_backward(q, k, v, o, lse, do, causal, scale)
        errs = {"two kernels": _errors(two, want)}
        fns["two kernels"] = lambda i: sol.attention_backward(q, k, v, o, lse, do, causal, scale)
        for bm, bn, w, st, tma in variants:
            name = f"fused {bm}x{bn} w{w} s{st}{' tma' if tma else ''}"
            try:
                got = fused_backward(q, k, v, o, lse, do, causal, scale, bm, bn, w, st, tma)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                errs[name] = str(e)[:200]
                continue
            errs[name] = _errors(got, want)
            if max(errs[name]) > 3 * max(errs["two kernels"]) + 1e-2:
                continue
            fns[name] = (lambda i, bm=bm, bn=bn, w=w, st=st, tma=tma:
                         fused_backward(q, k, v, o, lse, do, causal, scale, bm, bn, w, st, tma))
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))

        def sdpa_bwd(backend):
            with sdpa_kernel(backend):
                res = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal,
                                                                       enable_gqa=hq != hkv)
            return res

        for label, backend in (("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION), ("SDPA flash", SDPBackend.FLASH_ATTENTION)):
            try:
                res = sdpa_bwd(backend)
                torch.autograd.grad(res, (qg, kg, vg), do, retain_graph=True)
            except Exception as e:  # noqa: BLE001
                errs[label] = str(e)[:200]
                continue
            fns[label] = (lambda i, res=res: torch.autograd.grad(res, (qg, kg, vg), do, retain_graph=True))
        times = time_interleaved(fns, 1, 20, dev)
        flops = 2.5 * 4 * b * hq * s * s * d * (0.5 if causal else 1.0)
        for name, ts in times.items():
            t = median(ts)
            rows.append({"shape": f"{b}x{hq}/{hkv}x{s}x{d}", "causal": causal, "impl": name, "us": t * 1e3,
                         "tflops": flops / (t * 1e-3) / 1e12, "errors": errs.get(name)})
        for name, e in errs.items():
            if isinstance(e, str):
                rows.append({"shape": f"{b}x{hq}/{hkv}x{s}x{d}", "causal": causal, "impl": name, "error": e})
        print(f"{b}x{hq}/{hkv}x{s} causal={causal}", flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": __import__("datetime").date.today().isoformat()}
    (out / "flash_bwd_fused_probe.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"| shape | causal | impl | us | TFLOP/s | vs cuDNN |", "|---|---|---|---:|---:|---:|"]
    for key in dict.fromkeys((r["shape"], r["causal"]) for r in rows):
        group_rows = [r for r in rows if (r["shape"], r["causal"]) == key and "us" in r]
        cudnn = next((r["us"] for r in group_rows if r["impl"] == "SDPA cuDNN"), None)
        best = sorted((r for r in group_rows if r["impl"].startswith("fused")), key=lambda r: r["us"])[:3]
        for r in [x for x in group_rows if not x["impl"].startswith("fused")] + best:
            ratio = f"{cudnn / r['us']:.2f}x" if cudnn else "-"
            lines.append(f"| {key[0]} | {key[1]} | {r['impl']} | {r['us']:.1f} | {r['tflops']:.0f} | {ratio} |")
    (out / "flash_bwd_fused_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def gpu_gqa(out: Path) -> None:
    """The solution's backward kernel by kernel, and its dK/dV kernel with the GQA group shared among programs."""
    from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: PLC0415
    from autograder.timing import median, time_interleaved  # noqa: PLC0415
    sol = _solution()
    _bind_solution(sol)
    dev = torch.device("cuda")
    shapes = [(1, 32, 8, 2048, True), (2, 32, 8, 2048, True), (4, 32, 8, 2048, True), (1, 32, 8, 4096, True),
              (1, 32, 8, 2048, False), (4, 32, 32, 2048, True)]
    tiles = [(64, 128, 8, 3), (64, 64, 4, 3), (32, 64, 4, 3)]
    rows = []
    for b, hq, hkv, s, causal in shapes:
        d, group = 128, hq // hkv
        q, k, v, do = _inputs(b, hq, hkv, s, d, torch.bfloat16, "cuda")
        scale = d ** -0.5
        o, lse = sol.attention_forward(q, k, v, causal, scale, True)
        want = _reference(q, k, v, do, causal)
        two = sol.attention_backward(q, k, v, o, lse, do, causal, scale)
        errs = {"two kernels": _errors(two, want)}
        fns = {"two kernels": lambda i: sol.attention_backward(q, k, v, o, lse, do, causal, scale)}
        for part in ("pre", "dkdv", "dq"):
            fns[f"solution {part} only"] = (lambda i, part=part: split_backward(
                sol, q, k, v, o, lse, do, causal, scale, 1, 64, 128, 8, 3, parts=part))
        for split in sorted({1, 2, group}):
            if group % split:
                continue
            for bm, bn, w, st in tiles:
                name = f"split {split} {bm}x{bn} w{w} s{st}"
                try:
                    got = split_backward(sol, q, k, v, o, lse, do, causal, scale, split, bm, bn, w, st)
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    errs[name] = str(e)[:200]
                    continue
                errs[name] = _errors(got, want)
                fns[name] = (lambda i, split=split, bm=bm, bn=bn, w=w, st=st: split_backward(
                    sol, q, k, v, o, lse, do, causal, scale, split, bm, bn, w, st))
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            res = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, enable_gqa=hq != hkv)
        fns["SDPA cuDNN"] = lambda i: torch.autograd.grad(res, (qg, kg, vg), do, retain_graph=True)
        times = time_interleaved(fns, 1, 20, dev)
        flops = 2.5 * 4 * b * hq * s * s * d * (0.5 if causal else 1.0)
        for name, ts in times.items():
            t = median(ts)
            rows.append({"shape": f"{b}x{hq}/{hkv}x{s}x{d}", "causal": causal, "impl": name, "us": t * 1e3,
                         "tflops": flops / (t * 1e-3) / 1e12, "errors": errs.get(name)})
        for name, e in errs.items():
            if isinstance(e, str):
                rows.append({"shape": f"{b}x{hq}/{hkv}x{s}x{d}", "causal": causal, "impl": name, "error": e})
        print(f"{b}x{hq}/{hkv}x{s} causal={causal}", flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": __import__("datetime").date.today().isoformat()}
    (out / "flash_bwd_gqa_probe.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["| shape | causal | impl | us | vs cuDNN | max rel. error |", "|---|---|---|---:|---:|---:|"]
    for key in dict.fromkeys((r["shape"], r["causal"]) for r in rows):
        for r in [x for x in rows if (x["shape"], x["causal"]) == key]:
            if "us" not in r:
                lines.append(f"| {key[0]} | {key[1]} | {r['impl']} | {r['error'][:60]} | | |")
                continue
            cudnn = next(x["us"] for x in rows if (x["shape"], x["causal"]) == key and x["impl"] == "SDPA cuDNN")
            err = f"{max(r['errors']):.1e}" if isinstance(r.get("errors"), list) else ""
            lines.append(f"| {key[0]} | {key[1]} | {r['impl']} | {r['us']:.1f} | {cudnn / r['us']:.2f}x | {err} |")
    (out / "flash_bwd_gqa_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if "--dry" in sys.argv:
        dry()
    elif "--ptx" in sys.argv:
        ptx()
    else:
        target = Path(sys.argv[1])
        target.mkdir(parents=True, exist_ok=True)
        gpu_gqa(target) if "--gqa" in sys.argv else gpu(target)
