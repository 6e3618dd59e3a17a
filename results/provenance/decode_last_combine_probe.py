"""Decode attention (issue 22): the merge of the splits done by the last split program of each (batch, KV head)
instead of by a second kernel. Each split program stores its partial output and logsumexp as the solution's does,
then counts itself in on its group's counter (acq_rel); the program that counts in last reads the group's partials
back from L2, merges them, writes o and lse, and sets the counter back to zero for the next call. One launch, no
wait; the merge of a group overlaps the other groups' splits, and only the very last group's merge is in the tail.
With one launch there is also no reason to keep the splits few: PROGRAMS_PER_SM is swept.

Timed against the solution (split kernel + combine kernel, the latter a dependent launch on Hopper) and SDPA with
the grader's timer (autograder/timing.py, L2 flushed), 8 x 32 query heads / 8 KV heads, d = 128, bf16.
    python results/provenance/decode_last_combine_probe.py OUT     (--small: a CPU interpreter check)"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
import course.env  # noqa: F401  (the interpreter on a machine without a GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.launch import cdiv, next_power_of_2
from course.loader import load_kernels

fa = load_kernels("flash_attention", "solutions")


@triton.jit
def split_last_combine_kernel(q_ptr, k_ptr, v_ptr, o_part_ptr, lse_part_ptr, o_ptr, lse_ptr, count_ptr, seqlen_k,
                              group, keys_per_split, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                              BLOCK_G: tl.constexpr, BLOCK_S: tl.constexpr):
    qk_scale = tl.cast(qk_scale, tl.float32)
    split = tl.program_id(0)
    pid_bkv = tl.program_id(1)
    n_splits = tl.num_programs(0)
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n0 = tl.arange(0, BLOCK_N)
    rows = pid_bkv * group + offs_g
    row_mask = offs_g < group
    q = tl.load(q_ptr + rows[:, None] * HEAD_DIM + offs_d[None, :], mask=row_mask[:, None], other=0.0)
    kv_head = pid_bkv.to(tl.int64) * seqlen_k * HEAD_DIM
    start = split * keys_per_split
    end = tl.minimum(start + keys_per_split, seqlen_k)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_DIM], dtype=tl.float32)
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + offs_n0
        key_mask = offs_n < end
        kv_offs = kv_head + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        k = tl.load(k_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
        v = tl.load(v_ptr + kv_offs, mask=key_mask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k))
        s = tl.where(key_mask[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    part = rows.to(tl.int64) * n_splits + split
    tl.store(o_part_ptr + part[:, None] * HEAD_DIM + offs_d[None, :], acc / l_i[:, None], mask=row_mask[:, None])
    tl.store(lse_part_ptr + part, m_i + tl.math.log2(l_i), mask=row_mask)
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + pid_bkv, 1, sem="acq_rel")
    if arrived == n_splits - 1:
        offs_s = tl.arange(0, BLOCK_S)
        s_mask = offs_s < n_splits
        for g in range(0, group):
            row = (pid_bkv * group + g).to(tl.int64)
            lse_s = tl.load(lse_part_ptr + row * n_splits + offs_s, mask=s_mask, other=float("-inf"), cache_modifier=".cg")
            o_s = tl.load(o_part_ptr + (row * n_splits + offs_s)[:, None] * HEAD_DIM + offs_d[None, :],
                          mask=s_mask[:, None], other=0.0, cache_modifier=".cg")
            m = tl.max(lse_s, 0)
            w = tl.math.exp2(lse_s - m)
            total = tl.sum(w, 0)
            out = tl.sum(o_s * w[:, None], 0) / total
            tl.store(o_ptr + row * HEAD_DIM + offs_d, out.to(o_ptr.dtype.element_ty))
            tl.store(lse_ptr + row, (m + tl.math.log2(total)) * 0.6931471805599453)
        tl.atomic_xchg(count_ptr + pid_bkv, 0)


_COUNTS: dict = {}


def decode_last(q, k, v, scale, programs_per_sm: int | None = None, block_n: int = 64, warps: int = 4, stages: int = 3):
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    groups = batch * n_heads_kv
    if programs_per_sm is None:
        cfg, _ = fa.decode_config(fa.device_of(q), q.dtype, seqlen_k, groups)
        keys = cfg.keys_per_split
    else:
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 4
        splits = max(1, min(cdiv(seqlen_k, 2 * block_n), (programs_per_sm * sms) // groups))
        keys = cdiv(cdiv(seqlen_k, splits), block_n) * block_n
    n_splits = cdiv(seqlen_k, keys)
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    count = _COUNTS.get(q.device)
    if count is None or count.numel() < groups:
        count = _COUNTS[q.device] = torch.zeros(max(groups, 4096), dtype=torch.int32, device=q.device)
    split_last_combine_kernel[(n_splits, groups)](
        q, k, v, o_part, lse_part, o, lse, count, seqlen_k, group, keys, scale * 1.4426950408889634,
        HEAD_DIM=head_dim, BLOCK_N=block_n, BLOCK_G=max(16, next_power_of_2(group)), BLOCK_S=next_power_of_2(n_splits),
        num_warps=warps, num_stages=stages)
    return o, lse


def small_check() -> None:
    torch.manual_seed(0)
    q = torch.randn(2, 8, 1, 32)
    k, v = torch.randn(2, 2, 100, 32), torch.randn(2, 2, 100, 32)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    for pps in (None, 2, 4):
        for _ in range(2):  # the second call finds the counters back at zero
            o, _ = decode_last(q, k, v, 32 ** -0.5, pps, block_n=16, warps=1, stages=1)
            err = (o - ref).abs().max().item()
            assert err < 1e-4, err
    print("small check ok")


def main() -> None:
    from autograder.timing import median, time_interleaved
    from course.results import run_meta

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    rows = []
    for sk in (1024, 2048, 4096, 16384):
        torch.manual_seed(sk)
        q = torch.randn(8, 32, 1, 128, device=dev, dtype=torch.bfloat16)
        k, v = (torch.randn(8, 8, sk, 128, device=dev, dtype=torch.bfloat16) for _ in range(2))
        scale = 128 ** -0.5
        fns = {"solution": lambda i: fa.flash_attention(q, k, v),
               "SDPA": lambda i: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
               "last combines, solution's splits": lambda i: decode_last(q, k, v, scale)[0]}
        for pps in (1, 2, 3, 4, 6):
            fns[f"last combines, {pps} per SM"] = lambda i, pps=pps: decode_last(q, k, v, scale, pps)[0]
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
        errs = {lab: (fn(0).float() - ref).abs().max().item() for lab, fn in fns.items()}
        times = time_interleaved(fns, 1, 50, dev)
        us = {lab: median(t) * 1e3 for lab, t in times.items()}
        rows.append({"Sk": sk, "us": us, "max_abs_err": errs, "kv_gb": 2 * 8 * 8 * sk * 128 * 2 / 1e9})
        print(f"Sk {sk}: " + ", ".join(f"{lab} {t:.1f}" for lab, t in us.items()) + " us", flush=True)
        print("   errors " + ", ".join(f"{e:.1e}" for e in errs.values()), flush=True)
    (out / "decode_last_combine_probe.json").write_text(
        json.dumps({"meta": run_meta("decode_last_combine_probe"), "rows": rows}, indent=1))
    names = list(rows[0]["us"])
    lines = ["| keys | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(names)]
    for r in rows:
        lines.append(f"| {r['Sk']} | " + " | ".join(f"{r['us'][n]:.1f}" for n in names) + " |")
    print("\n".join(lines))


if __name__ == "__main__":
    small_check() if "--small" in sys.argv else main()
