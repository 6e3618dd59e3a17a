"""Two streams running split-K W4A16 launches at once (a real program's overlap of two workloads): the launcher
before (5abdd3a: one set of arrival counters per GPU) against this tree's (one set per stream). Both streams are held
back (torch.cuda._sleep) while the host queues every call, so that their launches run together; each
repeats its own product; every output is compared with the same product computed alone beforehand.

    python results/provenance/w4a16_streams.py OUT BEFORE_KERNELS_PY"""
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
from course.loader import load_kernels, load_module
from course.results import run_meta

out, before_path = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
versions = {"before (counters per GPU)": load_module(before_path, "quant_matmul_before"),
            "after (counters per stream)": load_kernels("quant_matmul", "solutions")}
dev, bf = torch.device("cuda"), torch.bfloat16
g = torch.Generator(device="cpu").manual_seed(0)
rows = []
for m, n, k in ((1, 4096, 4096), (1, 14336, 4096), (16, 4096, 4096)):
    inputs = []
    for _ in range(2):
        x = torch.randn(m, k, generator=g).to(dev, bf)
        wp = torch.randint(0, 256, (n, k // 2), generator=g, dtype=torch.uint8).to(dev)
        sc = (torch.rand(n, k // 128, generator=g) * 0.02).to(dev, bf)
        inputs.append((x, wp, sc))
    for name, mod in versions.items():
        expected = [mod.w4a16_matmul(x, wp, sc, 128) for x, wp, sc in inputs]
        torch.cuda.synchronize()
        streams = [torch.cuda.Stream(), torch.cuda.Stream()]
        outs = [[], []]
        for s in streams:  # hold both streams back while the host queues every call, so that they run together
            with torch.cuda.stream(s):
                torch.cuda._sleep(200_000_000)
        for _ in range(300):
            for i, s in enumerate(streams):
                with torch.cuda.stream(s):
                    outs[i].append(mod.w4a16_matmul(*inputs[i], 128))
        torch.cuda.synchronize()
        wrong = sum(int(not torch.equal(o, expected[i])) for i in range(2) for o in outs[i])
        rows.append({"M": m, "N": n, "K": k, "launcher": name, "calls": 600, "wrong": wrong})
        print(f"M={m:2d} N={n:5d} {name:30s} {wrong:4d} of 600 outputs wrong", flush=True)
(out / "w4a16_streams.json").write_text(json.dumps({"meta": run_meta("w4a16_streams"), "rows": rows}, indent=1))
