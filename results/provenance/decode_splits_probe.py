"""Issue 22, decode attention at 1024-4096 keys: how the split of the keys and the tile change the solution's time.
A probe, not course code: the solution's two kernels (split, then combine), launched with explicit settings.

The H200's table serves every length with one setting (64 keys a block, 4 warps, 3 stages, about 2 programs per
SM, splits of at least 2 blocks), tuned at 4096 keys. Here: blocks of 32, 64 or 128 keys, 2-4 stages, 4 or 8
warps, and 2 to 32 splits of the keys per (batch, KV head), at 1024, 2048, 4096 and 16384 keys (8 x 32 query
heads over 8 KV heads, d = 128, bf16), each checked against SDPA and timed beside it as the grader times.

    python results/provenance/decode_splits_probe.py OUT        # on a GPU: OUT/decode_splits_probe.json
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from autograder.timing import median, time_interleaved  # noqa: E402
from course.launch import cdiv, next_power_of_2  # noqa: E402
from course.loader import load_kernels  # noqa: E402
from course.results import run_meta  # noqa: E402

fa = load_kernels("flash_attention", "solutions")


def decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keys_per_split: int, block_n: int, warps: int,
           stages: int) -> torch.Tensor:
    """The solution's attention_decode with these settings (o only)."""
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    n_splits = cdiv(seqlen_k, keys_per_split)
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    fa._attn_decode_split_kernel[(n_splits, batch * n_heads_kv)](
        q, k, v, o_part, lse_part, seqlen_k, group, keys_per_split, head_dim ** -0.5 * fa.LOG2E,
        HEAD_DIM=head_dim, BLOCK_N=block_n, BLOCK_G=max(16, next_power_of_2(group)), DOT_PRECISION="tf32",
        num_warps=warps, num_stages=stages)
    fa._attn_decode_combine_kernel[(batch * n_heads_q,)](
        o_part, lse_part, o, lse, n_splits, HEAD_DIM=head_dim, BLOCK_S=next_power_of_2(n_splits),
        num_warps=4 if head_dim * n_splits >= 4096 else 1)
    return o


def main() -> None:
    dev = torch.device("cuda")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for seq in (1024, 2048, 4096, 16384):
        torch.manual_seed(seq)
        q = torch.randn(8, 32, 1, 128, device=dev, dtype=torch.bfloat16)
        k = torch.randn(8, 8, seq, 128, device=dev, dtype=torch.bfloat16)
        v = torch.randn(8, 8, seq, 128, device=dev, dtype=torch.bfloat16)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
        fns = {"solution (public call)": lambda i: fa.flash_attention(q, k, v),
               "SDPA (enable_gqa)": lambda i: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)}
        for bn, warps, stages, splits in itertools.product((32, 64, 128), (4, 8), (2, 3, 4), (2, 4, 8, 16, 32)):
            if (warps == 8) != (bn == 128) or seq // splits < bn:
                continue
            kps = cdiv(cdiv(seq, splits), bn) * bn
            got = decode(q, k, v, kps, bn, warps, stages)
            err = float((got.float() - ref).abs().max())
            assert err < 2e-2, (seq, bn, warps, stages, splits, err)
            fns[f"{cdiv(seq, kps)} splits of {kps} keys, blocks of {bn}, {warps} warps, {stages} stages"] = (
                lambda i, a=(kps, bn, warps, stages): decode(q, k, v, *a))
        times = time_interleaved(fns, 1, 20, dev)
        mb = (k.numel() + v.numel()) * 2 / 1e6
        best_label, best_us = None, float("inf")
        for label, t in times.items():
            us = median(t) * 1e3
            rows.append({"seq_k": seq, "variant": label, "us": us, "gbps": mb / us * 1e3})
            if label not in ("SDPA (enable_gqa)", "solution (public call)") and us < best_us:
                best_label, best_us = label, us
        sdpa = median(times["SDPA (enable_gqa)"]) * 1e3
        sol = median(times["solution (public call)"]) * 1e3
        print(f"{seq:6d} keys: SDPA {sdpa:6.1f} us, solution {sol:6.1f} ({sdpa / sol:.2f}x), best {best_us:6.1f} "
              f"({sdpa / best_us:.2f}x SDPA; {best_label})", flush=True)
    (out / "decode_splits_probe.json").write_text(json.dumps({"meta": run_meta("decode_splits_probe"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
