"""Module 04's TMA bonus kernel at the sizes where one 128 x 256 tile leaves SMs idle: every tile of a small set,
one or two programs an SM, timed beside cuBLAS and the pointer kernel of the main task; and which kernel cuBLAS
runs at each size (its name says its tile and whether it splits K).

The kernel is the solution's `_matmul_tma_kernel`, launched here directly so that the tile and the number of
programs can vary; the launcher's own choice is `tma_programs(tiles, SMs)` programs of the table's tile.

    python results/provenance/tiling_tma_small_probe.py      # on a GPU: $OUT/tiling_tma_small_probe.json
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
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

from autograder import timing  # noqa: E402
from solutions.tiling import kernels as tk  # noqa: E402

# (block_m, block_n, block_k, num_stages, num_warps); the first is the table's entry for the H100 and the H200
TILES = [(128, 256, 64, 4, 8), (128, 128, 64, 4, 8), (128, 128, 64, 4, 4), (128, 128, 64, 5, 4), (64, 256, 64, 4, 4),
         (64, 128, 64, 4, 4), (64, 128, 64, 6, 4), (128, 64, 64, 4, 4), (64, 64, 64, 6, 4)]  # fmt: skip
SIZES = [512, 1024, 1536, 1792, 2048, 2304, 2560, 3072, 4096]


def launch(tile: tuple[int, ...], per_sm: int, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, sms: int) -> None:
    bm, bn, bk, stages, warps = tile
    m, k = a.shape
    n = b.shape[1]
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    tk._matmul_tma_kernel[(tk.tma_programs(tiles, per_sm * sms),)](
        TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn // 2]), m, n, k,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8 if bm * bn < 128 * 256 else 16, num_stages=stages, num_warps=warps,
    )  # fmt: skip


def cublas_kernels(a: torch.Tensor, b: torch.Tensor) -> list[str]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        torch.matmul(a, b)
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def square_problem(s: int, dtype: torch.dtype, dev: torch.device) -> tuple[list, list, torch.Tensor, torch.Tensor]:
    """Three (s, s) inputs a and b (seeded by s), an output buffer and the float64 product of the first pair."""
    g = torch.Generator(device=dev).manual_seed(s)
    a_s = [torch.randn(s, s, device=dev, dtype=dtype, generator=g) for _ in range(3)]
    b_s = [torch.randn(s, s, device=dev, dtype=dtype, generator=g) for _ in range(3)]
    return a_s, b_s, torch.empty(s, s, device=dev, dtype=dtype), a_s[0].double() @ b_s[0].double()


def main() -> None:
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        for s in SIZES if dtype == torch.bfloat16 else [1024, 1536, 3072]:
            a_s, b_s, c, ref = square_problem(s, dtype, dev)
            fns = {"cuBLAS": lambda i: torch.matmul(a_s[i], b_s[i]), "pointers": lambda i: tk.matmul(a_s[i], b_s[i]),
                   "matmul_tma": lambda i: tk.matmul_tma(a_s[i], b_s[i])}  # fmt: skip
            errors = {}
            for tile in TILES:
                for per_sm in (1, 2):
                    name = f"{tile[0]}x{tile[1]}x{tile[2]} s{tile[3]} w{tile[4]} x{per_sm}"
                    try:
                        c.zero_()
                        launch(tile, per_sm, a_s[0], b_s[0], c, sms)
                        torch.cuda.synchronize()
                        errors[name] = ((c.double() - ref).abs().max() / ref.abs().mean()).item()
                        fns[name] = lambda i, t=tile, p=per_sm: launch(t, p, a_s[i], b_s[i], c, sms)
                    except Exception as e:  # noqa: BLE001 - a tile that does not fit is reported
                        errors[name] = f"failed: {str(e).splitlines()[0][:160]}"
            times = timing.time_interleaved(fns, 3, 15, dev)
            us = {name: timing.median(t) * 1e3 for name, t in times.items()}
            vs = {name: us["cuBLAS"] / t for name, t in us.items()}
            probe = {x: v for x, v in vs.items() if x not in ("cuBLAS", "pointers", "matmul_tma")}
            best = max(probe, key=probe.get)
            row = {"dtype": str(dtype).split(".")[-1], "size": s, "us": us, "vs_cublas": vs, "max_err_over_mean": errors,
                   "best": best, "cublas_kernels": cublas_kernels(a_s[0], b_s[0])}  # fmt: skip
            rows.append(row)
            print(f"{row['dtype']} {s}^3: cuBLAS {us['cuBLAS']:.1f} us; pointers {vs['pointers']:.2f}x, "
                  f"matmul_tma {vs['matmul_tma']:.2f}x, best {best} {vs[best]:.2f}x", flush=True)  # fmt: skip
    out = Path(os.environ.get("OUT", "."))
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/tiling_tma_small_probe.py",
            "timer": "autograder.timing.time_interleaved: 3 inputs, 15 rounds, L2 flushed; medians in us", "rows": rows}  # fmt: skip
    (out / "tiling_tma_small_probe.json").write_text(json.dumps(info, indent=1))


if __name__ == "__main__":
    main()
