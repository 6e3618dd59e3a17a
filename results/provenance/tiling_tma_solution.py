"""The TMA bonus of module 04 as the solution ships it (`solutions/tiling/kernels.py`, `matmul_tma`), timed on a GPU
beside the probe's persistent kernel with the same tile (which counts the epilogue's tile apart from the loop's,
results/provenance/tiling_tma_probe.py), the pointer kernel of the main task and cuBLAS; then the float32 tiles that
the table could take for it (tf32x3, three tensor-core products a step), against the pointer kernel's float32.

    python results/provenance/tiling_tma_solution.py      # on a GPU: $OUT/tiling_tma_solution.json
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

from autograder import timing  # noqa: E402
from results.provenance import tiling_tma_probe as probe  # noqa: E402
from solutions.tiling import kernels as tk  # noqa: E402

FLOAT32_TILES = [(128, 128, 32, 3, 8), (128, 64, 32, 4, 4), (128, 128, 32, 2, 8), (64, 128, 32, 4, 4), (128, 256, 32, 2, 8)]


def rel_err(c: torch.Tensor, ref: torch.Tensor) -> float:
    return ((c.double() - ref).abs().max() / ref.abs().mean()).item()


def main() -> None:
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    table = tk.tma_config(tk.device_of(torch.empty(1, device=dev)), torch.bfloat16)
    twin = probe.variant("persistent", table["block_m"], table["block_n"], table["block_k"], table["num_stages"],
                         table["num_warps"], split=True, group_m=table["group_m"])  # fmt: skip
    for dtype, shapes in ((torch.bfloat16, [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 14336)]),
                          (torch.float16, [(4096, 4096, 4096), (8192, 8192, 8192)]),
                          (torch.float32, [(2048, 2048, 2048), (4096, 4096, 4096)])):  # fmt: skip
        for m, k, n in shapes:
            g = torch.Generator(device=dev).manual_seed(m + 3 * k + 7 * n)
            a_s = [torch.randn(m, k, device=dev, dtype=dtype, generator=g) for _ in range(3)]
            b_s = [torch.randn(k, n, device=dev, dtype=dtype, generator=g) for _ in range(3)]
            c = torch.empty(m, n, device=dev, dtype=dtype)
            ref = a_s[0].double() @ b_s[0].double()
            errors = {"solution tma": rel_err(tk.matmul_tma(a_s[0], b_s[0]), ref),
                      "solution pointers": rel_err(tk.matmul(a_s[0], b_s[0]), ref)}  # fmt: skip
            fns = {"solution tma": lambda i: tk.matmul_tma(a_s[i], b_s[i]),
                   "solution pointers": lambda i: tk.matmul(a_s[i], b_s[i]),
                   "cuBLAS": lambda i: torch.matmul(a_s[i], b_s[i])}  # fmt: skip
            if dtype != torch.float32:
                probe.launch(twin, a_s[0], b_s[0], c, sms)
                errors["probe twin"] = rel_err(c, ref)
                fns["probe twin"] = lambda i: probe.launch(twin, a_s[i], b_s[i], c, sms)
                times = timing.time_interleaved(fns, 3, 20, dev)
            else:
                times = {}
                for bm, bn, bk, st, w in FLOAT32_TILES:
                    cfg = {"block_m": bm, "block_n": bn, "block_k": bk, "group_m": 8, "num_stages": st, "num_warps": w}
                    name = f"tma {bm}x{bn}x{bk} s{st} w{w}"
                    with tk.CONFIGS.forcing("tma", "float32", cfg):
                        try:
                            errors[name] = rel_err(tk.matmul_tma(a_s[0], b_s[0]), ref)
                            t = timing.time_interleaved({name: lambda i: tk.matmul_tma(a_s[i], b_s[i]),
                                                         "solution pointers": fns["solution pointers"]}, 3, 10, dev)
                            times[name] = t[name]
                        except Exception as e:  # noqa: BLE001 - a tile that does not fit is reported
                            errors[name] = f"failed: {str(e).splitlines()[0][:160]}"
                times.update(timing.time_interleaved(fns, 3, 10, dev))
            us = {name: timing.median(t) * 1e3 for name, t in times.items()}
            row = {"dtype": str(dtype).split(".")[-1], "shape": [m, k, n], "us": us, "max_err_over_mean": errors,
                   "vs_cublas": {name: us["cuBLAS"] / t for name, t in us.items()}}  # fmt: skip
            rows.append(row)
            print(f"{row['dtype']} {m}x{k}x{n}: " + ", ".join(f"{x} {v:.3f}x" for x, v in row["vs_cublas"].items()), flush=True)
    out = Path(os.environ.get("OUT", "."))
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/tiling_tma_solution.py",
            "table_tile_16bit": table, "grid": "as few programs as keep the fewest rounds of tiles, "
            "cdiv(tiles, cdiv(tiles, SMs))"}  # fmt: skip
    (out / "tiling_tma_solution.json").write_text(json.dumps({**info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
