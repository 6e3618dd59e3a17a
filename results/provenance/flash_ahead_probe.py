"""Flash attention forward with the next key block's scores issued before this block's softmax (FlashAttention-3's
overlap within a warp group, written in the source), beside the solution and SDPA's cuDNN backend (issue 22).

    python results/provenance/flash_ahead_probe.py --check   # on the CPU (interpreter): every variant's output
    python results/provenance/flash_ahead_probe.py --ptx     # on the CPU: sm_90 compilations, registers, smem
    python results/provenance/flash_ahead_probe.py --waits   # on the CPU: the loop's wgmmas, waits and ex2s, in order
    python results/provenance/flash_ahead_probe.py OUT       # on a GPU: every variant checked, then timed

Run from the repository root. Why: lecture 08, section 12 puts the forward's last 11% against cuDNN on one instruction
stream in which a step's exponentials and its two wgmmas wait on each other. FlashAttention-3 (Shah et al., 2024,
section 3.2) overlaps them inside one warp group by software pipelining: the product S_{j+1} = Q K_{j+1}^T is issued
before the softmax of S_j, so the tensor cores work on it while the exponentials run. The variants write that in
Triton, on the unmasked key blocks of `_attn_fwd_inner` (the masked ones keep the solution's loop):

- `_ahead` (variant s_ahead_s2): before the loop, S of the first block; in the loop, K_{j+1} loaded and S_{j+1}
  issued, then the softmax of S_j and P_j V_j; after it, the last block's softmax and product. Triton's sm_90 code
  waits for S_{j+1} as soon as it is issued (--waits), as it does for every product that is not an accumulator,
  so nothing overlaps; it is checked and compiled, not timed.
- `_ahead_pv_first` (ahead_s2, ahead_n64, ahead_n64_s4): S_{j+1} issued (and waited for), the accumulator rescaled
  by step j's alpha and P_j V_j issued, then the softmax of S_{j+1}, which does not touch the accumulator. An
  accumulator's product is left in flight until the accumulator's next use, so here the exponentials of S_{j+1}
  run while P_j V_j does (--waits: `mma x8 wait0 mma x8 ex2 x66`, against the solution's `mma x8 wait0 ex2 x66
  mma x8`). P_j, in flight as the product's operand while the next P is made, goes through shared memory (32 KB at
  128 x 128), and three stages of 128-key tiles then need 262,200 bytes, more than an H100's 232,448 (--ptx): the
  variants drop a stage (s2), halve the key tile (n64) or both with a fourth stage (n64_s4).
- solution_s2: the solution with one stage less, what that alone costs. The harness (checks, sm_90 compilations, GPU timing) is
results/provenance/flash_lazy_probe.py's, with these variants in place of its own; "rebuilt" and "broken" are its
controls. Writes OUT/flash_ahead_probe.json on a GPU.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path

if "--waits" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "0"  # Triton's compiler, not its interpreter, although there is no GPU
    sys.argv.append("--ptx")  # so that the lazy probe's imports choose the compiler too

_spec = importlib.util.spec_from_file_location("flash_lazy_probe", Path(__file__).with_name("flash_lazy_probe.py"))
lp = importlib.util.module_from_spec(_spec)
sys.modules["flash_lazy_probe"] = lp
_spec.loader.exec_module(lp)  # its imports set the interpreter or the compiler from sys.argv, as for itself
fa = lp.fa
triton = lp.triton

AHEAD = '''
@triton.jit
def _kv_tile(desc, head_ptr, row0, start_n, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, USE_TMA: tl.constexpr):
    """The (BLOCK_N, HEAD_DIM) tile of K or V from key start_n on: whole blocks only (the unmasked range)."""
    if USE_TMA:
        t = desc.load([row0 + start_n, 0])
    else:
        offs = (start_n + tl.arange(0, BLOCK_N))[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
        t = tl.load(head_ptr + offs)
    return t


@triton.jit
def _softmax_step(acc, l_i, m_i, s, v, qk_scale, DOT_PRECISION: tl.constexpr):
    """The solution's unmasked step on the scores s of one block."""
    m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
    p = tl.math.exp2(s * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
    return acc, l_i, m_new


@triton.jit
def _ahead(acc, l_i, m_i, q, k_head_ptr, v_head_ptr, k_desc, v_desc, kv_row0, lo, hi, qk_scale,
           BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, USE_TMA: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """Keys [lo, hi), whole blocks, no mask: S_{j+1} issued before the softmax of S_j."""
    if lo < hi:
        k = _kv_tile(k_desc, k_head_ptr, kv_row0, lo, BLOCK_N, HEAD_DIM, USE_TMA)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)
        for start_n in range(lo, hi - BLOCK_N, BLOCK_N):
            k = _kv_tile(k_desc, k_head_ptr, kv_row0, start_n + BLOCK_N, BLOCK_N, HEAD_DIM, USE_TMA)
            s_next = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)
            v = _kv_tile(v_desc, v_head_ptr, kv_row0, start_n, BLOCK_N, HEAD_DIM, USE_TMA)
            acc, l_i, m_i = _softmax_step(acc, l_i, m_i, s, v, qk_scale, DOT_PRECISION)
            s = s_next
        v = _kv_tile(v_desc, v_head_ptr, kv_row0, hi - BLOCK_N, BLOCK_N, HEAD_DIM, USE_TMA)
        acc, l_i, m_i = _softmax_step(acc, l_i, m_i, s, v, qk_scale, DOT_PRECISION)
    return acc, l_i, m_i


@triton.jit
def _ahead_pv_first(acc, l_i, m_i, q, k_head_ptr, v_head_ptr, k_desc, v_desc, kv_row0, lo, hi, qk_scale,
                    BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, USE_TMA: tl.constexpr,
                    DOT_PRECISION: tl.constexpr):
    """Keys [lo, hi): S_{j+1} issued, the accumulator rescaled and P_j V_j issued, then the softmax of S_{j+1},
    which does not touch the accumulator, so that it may run while P_j V_j does."""
    if lo < hi:
        k = _kv_tile(k_desc, k_head_ptr, kv_row0, lo, BLOCK_N, HEAD_DIM, USE_TMA)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)  # applied to acc just before the product that adds P_j V_j
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
        for start_n in range(lo, hi - BLOCK_N, BLOCK_N):
            k = _kv_tile(k_desc, k_head_ptr, kv_row0, start_n + BLOCK_N, BLOCK_N, HEAD_DIM, USE_TMA)
            s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # S_{j+1}
            v = _kv_tile(v_desc, v_head_ptr, kv_row0, start_n, BLOCK_N, HEAD_DIM, USE_TMA)
            acc = acc * alpha[:, None]
            acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)  # P_j V_j, left in flight
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            p = tl.math.exp2(s * qk_scale - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
            l_i = l_i * alpha + tl.sum(p, 1)
            m_i = m_new
        v = _kv_tile(v_desc, v_head_ptr, kv_row0, hi - BLOCK_N, BLOCK_N, HEAD_DIM, USE_TMA)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
    return acc, l_i, m_i
'''

DISPATCH = '''
@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, k_head_ptr, v_head_ptr, k_desc, v_desc, kv_row0, lo, hi, offs_m, seqlen_k,
                    qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK_KEYS: tl.constexpr,
                    MASK_CAUSAL: tl.constexpr, USE_TMA: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """The solution's loop on masked ranges; the variant's on unmasked ones."""
    if MASK_KEYS or MASK_CAUSAL:
        acc, l_i, m_i = _solution_inner(acc, l_i, m_i, q, k_head_ptr, v_head_ptr, k_desc, v_desc, kv_row0, lo, hi,
                                        offs_m, seqlen_k, qk_scale, BLOCK_N, HEAD_DIM, MASK_KEYS, MASK_CAUSAL,
                                        USE_TMA, DOT_PRECISION)
    else:
        acc, l_i, m_i = LOOP(acc, l_i, m_i, q, k_head_ptr, v_head_ptr, k_desc, v_desc, kv_row0, lo, hi, qk_scale,
                             BLOCK_N, HEAD_DIM, USE_TMA, DOT_PRECISION)
    return acc, l_i, m_i
'''

# variant -> (its unmasked loop, how its launch settings differ from the table's). P_j, left in flight as the
# product's operand while the next P is made, moves through shared memory (32 KB at 128 x 128), and the table's
# three stages of 128-key tiles then no longer fit in an H100's 227 KB (262,200 bytes, --ptx): the variants drop a
# stage or halve the key tile. solution_s2 is the solution with one stage less, what that alone costs.
VARIANTS = {
    "solution_s2": ("", {"num_stages": -1}),
    "s_ahead_s2": ("_ahead", {"num_stages": -1}),  # checked and compiled, not timed: see --waits
    "ahead_s2": ("_ahead_pv_first", {"num_stages": -1}),
    "ahead_n64": ("_ahead_pv_first", {"block_n": 64}),
    "ahead_n64_s4": ("_ahead_pv_first", {"block_n": 64, "num_stages": 1}),
}
_lazy_inner_source = lp.inner_source
_lazy_build = lp.build


def inner_source(name: str) -> str:
    """The controls as the lazy probe builds them; a variant: the solution's loop renamed, and a dispatch."""
    loop = VARIANTS[name][0] if name in VARIANTS else ""
    if not loop:
        return _lazy_inner_source("rebuilt" if name in VARIANTS else name)
    solution = inspect.getsource(fa._attn_fwd_inner.fn)
    solution = re.sub(r"^def _attn_fwd_inner\(", "def _solution_inner(", solution, count=1, flags=re.M)
    assert "def _solution_inner(" in solution
    return solution + "\n\n" + AHEAD + "\n\n" + DISPATCH.replace("LOOP(", loop + "(")


def settings(cfg: fa.FwdConfig, change: dict) -> fa.FwdConfig:
    """The table's settings with a variant's change: num_stages relative (at least 2), block_n absolute (at most
    block_m)."""
    out = dataclasses.replace(cfg, **{k: v for k, v in change.items() if k != "num_stages"})
    if "num_stages" in change:
        out = dataclasses.replace(out, num_stages=max(2, cfg.num_stages + change["num_stages"]))
    return dataclasses.replace(out, block_n=min(out.block_n, out.block_m))


def build(names: list[str], device_of=None) -> dict:
    """The lazy probe's variants, each of ours launched with its own settings (its module's forward_config)."""
    variants = _lazy_build(names, device_of)
    for name, var in variants.items():
        if name in VARIANTS:
            change = VARIANTS[name][1]
            var.module.forward_config = lambda *a, change=change, **kw: settings(fa.forward_config(*a, **kw), change)
    return variants


lp.inner_source = inner_source
lp.build = build
lp.VARIANTS = ["solution", "rebuilt", *VARIANTS]
lp.TIMED = [n for n in lp.VARIANTS if n != "s_ahead_s2"]
lp.PROBE = "flash_ahead_probe"

def print_waits() -> None:
    """The unmasked loop of each variant's sm_90 PTX as the H100's launcher launches it: its wgmma groups, waits and
    exponentials in order (flash_bwd_order_probe.waits)."""
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from autograder.portability import _bind
    from course.device import KNOWN_GPUS

    waits = importlib.util.spec_from_file_location("flash_bwd_order_probe",
                                                   Path(__file__).with_name("flash_bwd_order_probe.py"))
    bwd = importlib.util.module_from_spec(waits)
    waits.loader.exec_module(bwd)
    h100 = KNOWN_GPUS["NVIDIA H100 80GB HBM3"]
    variants = lp.build(["solution", *VARIANTS], device_of=lambda t: h100)
    print("sm_90 PTX of the forward as launched on an H100 (4 x 32 x 4096, bf16, d = 128): the longest loop body, its "
          "wgmma groups (mma xN), waits (wait0: for every product in flight) and exponentials (ex2 xN) in order")
    for causal in (False, True):
        q, k, v = (torch.empty(4, 32, 4096, 128, dtype=torch.bfloat16, device="meta") for _ in range(3))
        for name, var in variants.items():
            jit, args, kwargs = lp.recorded_launch(var, q, k, v, causal)
            _, (sig, cx, attrs, opts) = _bind(jit, args, kwargs, 90)
            ck = triton.compile(ASTSource(jit, sig, cx, attrs), target=GPUTarget("cuda", 90, 32), options=opts.__dict__)
            print(f"causal={causal} {name:13} {bwd.waits(ck.asm['ptx'])}")


if __name__ == "__main__":
    if "--waits" in sys.argv:
        print_waits()
    else:
        lp.main()
