"""Skinny products (decode-like M) under the last-wave split: tail_split sends them to the 64 x 128 tile alone
(twice the programs of 128 x 256 tiles); is that faster than one launch, measured? bf16, do_bench medians (us).

    python results/provenance/tiling_tail_skinny.py                  # on a GPU, writes $OUT/tiling_tail_skinny.json
    python results/provenance/tiling_tail_skinny.py --table FILE     # its markdown table (no GPU)
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

from course.device import device_of  # noqa: E402
from solutions.tiling import kernels as tk  # noqa: E402

if sys.argv[1:2] == ["--table"]:
    d = json.loads(Path(sys.argv[2]).read_text())
    print(f"Measured on {d['gpu']} ({d['date']}; torch {d['torch']}, triton {d['triton']}) by "
          "`python results/provenance/tiling_tail_skinny.py`; bf16, median of do_bench (us), L2 cleared before each call.\n")
    print("| shape (M x K x N) | tail_split's choice | chosen (us) | one launch (us) | gain | cuBLAS (us) | vs cuBLAS |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in d["rows"]:
        m, k, n = r["shape"]
        print(f"| {m}x{k}x{n} | {r['choice']} | {r['model_us']:.1f} | {r['one_launch_us']:.1f} | "
              f"{r['one_launch_us'] / r['model_us']:.2f}x | {r['cublas_us']:.1f} | {r['cublas_us'] / r['model_us']:.2f}x |")
    sys.exit(0)

split = tk.tail_split
rows = []
for m in (1, 8, 16, 32, 64, 128, 256, 512):
    for k, n in ((4096, 4096), (4096, 14336), (14336, 4096)):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ref = a.float() @ b.float()
        first, tail = split(device_of(a), a.dtype, m, n)
        tk.tail_split = split
        tk._launch(a, b, c)
        err = ((c.float() - ref).abs().max() / ref.abs().mean()).item()
        t_model = triton.testing.do_bench(lambda: tk._launch(a, b, c), warmup=25, rep=100, return_mode="median") * 1e3
        tk.tail_split = lambda *x: (x[2], None)
        t_one = triton.testing.do_bench(lambda: tk._launch(a, b, c), warmup=25, rep=100, return_mode="median") * 1e3
        t_cublas = triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=25, rep=100, return_mode="median") * 1e3
        tk.tail_split = split
        what = "one launch" if tail is None else f"tail from row {first}"
        rows.append({"shape": [m, k, n], "choice": what, "model_us": t_model, "one_launch_us": t_one, "cublas_us": t_cublas, "err": err})
        print(f"{m}x{k}x{n}: {what:18s} chosen {t_model:7.1f} one launch {t_one:7.1f} ({t_one / t_model:.2f}x) cuBLAS {t_cublas:7.1f} err {err:.1e}", flush=True)
out = Path(os.environ.get("OUT", "."))
(out / "tiling_tail_skinny.json").write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
    "triton": triton.__version__, "date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=1))  # fmt: skip
