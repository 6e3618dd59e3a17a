"""Decode attention at the key counts a GPU's quick bench leaves out (issue 22's table: 1024 and 65536 keys), as
`python -m autograder bench flash_attention` times them: the grader's timer (L2 flushed), medians of 30, K and V
bytes over the copy bandwidth measured in the same run; against SDPA with enable_gqa.
    python results/provenance/decode_keys.py OUT [KEYS ...]"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
import torch
from autograder.timing import copy_bandwidth_gbps, median, time_interleaved
from course.loader import load_kernels
from course.results import run_meta

fa = load_kernels("flash_attention", "solutions")
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
dev = torch.device("cuda")
copy = copy_bandwidth_gbps(dev)
rows = []
for sk in [int(s) for s in sys.argv[2:]] or [1024, 65536]:
    torch.manual_seed(sk)
    q = torch.randn(8, 32, 1, 128, device=dev, dtype=torch.bfloat16)
    k, v = (torch.randn(8, 8, sk, 128, device=dev, dtype=torch.bfloat16) for _ in range(2))
    fns = {"solution": lambda i: fa.flash_attention(q, k, v),
           "SDPA (enable_gqa)": lambda i: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)}
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
    err = (fns["solution"](0).float() - ref).abs().max().item()
    times = time_interleaved(fns, 1, 30, dev)
    nbytes = 2 * k.numel() * k.element_size()
    for impl, t in times.items():
        ms = median(t)
        rows.append({"Sk": sk, "impl": impl, "ms": ms, "pct_copy": 100 * nbytes / (ms * 1e-3) / 1e9 / copy})
    sol, sdpa = (median(times[n]) for n in fns)
    print(f"Sk {sk}: solution {sol * 1e3:.1f} us ({rows[-2]['pct_copy']:.0f}% of copy), SDPA {sdpa * 1e3:.1f} us, "
          f"{sdpa / sol:.2f}x; max abs err {err:.1e}", flush=True)
(out / "decode_keys.json").write_text(json.dumps({"meta": {**run_meta("decode_keys"), "copy_gbps": copy}, "rows": rows}, indent=1))
