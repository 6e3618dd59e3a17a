"""results/<gpu>/train_profile.md from the train_profile.json that train_profile.py wrote on that GPU.

    python results/provenance/train_profile_table.py results/h100/train_profile.json > results/h100/train_profile.md
"""
from __future__ import annotations

import json
import sys

KINDS = ["course attention fwd", "course attention bwd", "SDPA attention", "projections (GEMM)",
         "course rmsnorm/rope/swiglu", "Inductor's kernels", "ATen copies and fills"]  # fmt: skip


def main(path: str) -> None:
    data = json.load(open(path))
    meta = data["meta"]
    print(f"# Where the compiled training step's time goes ({meta['gpu']})\n")
    print(f"{meta['date']}, torch {meta['torch']}, triton {meta['triton']}, CUDA {meta['cuda']}; "
          "`results/provenance/train_profile.py` (run by `STEPS=train bash results/provenance/session_1206s.sh`), "
          "this table by `results/provenance/train_profile_table.py`. Each block is compiled with "
          "torch.compile(fullgraph=True, dynamic=False), forward and backward; wall time is the median (best) of 7 "
          "interleaved rounds of 3 queued steps; GPU time is the sum of every kernel's time over 5 profiled steps, per "
          "step; idle = wall - GPU, the time the GPU waited for the host. Ratios: compiled PyTorch's wall time over the "
          "block's.\n")  # fmt: skip
    for shape, blocks in data["rows"].items():
        print(f"## {shape} tokens\n")
        print("| block | wall us | best | vs PyTorch | GPU us | idle us | " + " | ".join(KINDS) + " | grad err |")
        print("|---|---:|---:|---:|---:|---:|" + "---:|" * len(KINDS) + "---:|")
        base = blocks["PyTorch"]["wall_us_median"]
        for name, row in blocks.items():
            kinds = " | ".join(f"{row['by_kind'].get(k, 0.0):.0f}" for k in KINDS)
            idle = row["wall_us_median"] - row["gpu_us"]
            print(f"| {name} | {row['wall_us_median']:.0f} | {row['wall_us_best']:.0f} | {base / row['wall_us_median']:.3f}x "
                  f"| {row['gpu_us']:.0f} | {idle:.0f} | {kinds} | {row['max_grad_rel_err']:.1e} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
