"""On a GPU: INT4 KIVI split-kernel variants (.diag/int4_v3..v6) checked in fp16/bf16 over the kv_int4 cases, then
timed against the public kernel, the course's bf16 decode and SDPA (8x32/8 heads, D=128, bf16, median us)."""
import importlib, itertools, os, sys, time
sys.path.insert(0, ".diag"); sys.path.insert(0, ".")
import torch, triton
from autograder.checking import compare
from autograder.spec import generator
from autograder.specs import flash_attention as spec
from autograder.timing import interleaved_ms
dev = torch.device("cuda")
print("GPU", torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
MODS = os.environ.get("MODS", "int4_v3,int4_v4,int4_v5,int4_v6").split(",")
dec = {}
for m in MODS:
    mm = importlib.import_module(m)
    dec[m[-2:]] = getattr(mm, "decode_" + m[-2:])
    K = mm.K
t0 = time.time()
bad = 0
for dtype, c in itertools.product(["float16", "bfloat16"], spec.CPU_KV_INT4 + spec.GPU_KV_INT4):
    params = {"dtype": dtype, **c}
    named = spec.make_kv_int4_inputs(params, generator(12, dev), dev)
    ref = spec.reference_kv_int4(named, params)["o"]
    g = params.get("group_size", 32)
    cache = [named[n] for n in spec.KV_INT4_NAMES[1:]]
    res = []
    for name, fn in dec.items():
        for bn, nw, kps in [(128, 4, None), (64, 2, 64)]:
            v = compare("o", fn(named["q"], cache, g, bn=bn, nw=nw, kps=kps), ref, spec.TOLERANCES[dtype])
            bad += not v.ok
            res.append(f"{name}/{bn}: " + ("ok" if v.ok else "BAD") + f" {v.max_error:.2g}")
    print("CHECK", dtype, c["shape"], c.get("kv_heads"), c["seq_k"], g, c.get("dist", ""), "; ".join(res), flush=True)
print(f"CHECKS bad={bad} ({time.time() - t0:.0f} s)", flush=True)

for sk, g in [(4096, 32), (16384, 32), (65536, 32), (16384, 16), (16384, 128)]:
    params = {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": sk, "causal": False, "dtype": "bfloat16", "group_size": g}
    dense = spec.make_forward_inputs(params, generator(1, dev), dev)
    cache = K.quantize_kv_int4(dense["k"], dense["v"], g)
    q = dense["q"]
    fns = {"public": lambda: K.flash_decode_int4(q, *cache, g), "bf16": lambda: K.flash_attention(q, dense["k"], dense["v"]),
           "SDPA": lambda: spec.sdpa_baseline(dense, params)}
    for (name, fn), (bn, nw, ns), kps in itertools.product(dec.items(), [(128, 4, 3), (128, 4, 2), (128, 8, 3), (64, 4, 3), (64, 2, 2)], [1024, 2048]):
        fns[f"{name}-bn{bn}-w{nw}-s{ns}-k{kps}"] = (lambda fn=fn, bn=bn, nw=nw, ns=ns, kps=kps: fn(q, cache, g, bn, nw, ns, kps, True))
    t1 = time.time()
    us = {n: t * 1e3 for n, t in interleaved_ms(fns, 25, dev).items()}
    nbytes = sum(t.nbytes for t in cache)
    best = sorted((t, n) for n, t in us.items() if n[0] == "v")
    per = {m: min(t for n, t in us.items() if n.startswith(m + "-")) for m in dec}
    print(f"TIME sk={sk} g={g} public {us['public']:.1f} bf16 {us['bf16']:.1f} SDPA {us['SDPA']:.1f} | per variant " + " ".join(f"{m} {t:.1f}" for m, t in per.items())
          + " | best " + "; ".join(f"{n} {t:.1f}" for t, n in best[:4]) + f" | best/SDPA {us['SDPA'] / best[0][0]:.2f}x, {nbytes / best[0][0] / 1e6:.2f} TB/s ({time.time() - t1:.0f} s)", flush=True)
    print("ALL", sk, g, " ".join(f"{n}={t:.1f}" for n, t in sorted(us.items())), flush=True)
