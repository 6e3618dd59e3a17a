"""On a GPU: the INT4 KIVI decode (solution) against the previous kernel (HEAD before the change, .diag/old_fa), the
course's bf16 decode and SDPA over the bf16 cache; 8x32/8 heads, D=128, bf16, median us of 30, interleaved, L2 flushed.
Checks each public call against the float64 attention over the dequantized cache first."""
import importlib.util, json, sys, time
sys.path.insert(0, ".")
import torch, triton
from course.loader import load_kernels
from autograder.checking import compare
from autograder.spec import generator
from autograder.specs import flash_attention as spec
from autograder.timing import interleaved_ms
dev = torch.device("cuda")
K = load_kernels("flash_attention", "solutions")
s_ = importlib.util.spec_from_file_location("old_fa_kernels", ".diag/old_fa/kernels.py")
OLD = importlib.util.module_from_spec(s_); sys.modules["old_fa_kernels"] = OLD; s_.loader.exec_module(OLD)
info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d"), "shape": "B=8, Hq=32, Hkv=8, D=128, bf16", "unit": "median us of 30", "rows": []}
print("GPU", info["gpu"], info["torch"], info["triton"], flush=True)
for sk, g in [(1024, 32), (4096, 32), (16384, 32), (65536, 32), (16384, 16), (16384, 64), (16384, 128)]:
    params = {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": sk, "causal": False, "dtype": "bfloat16", "group_size": g}
    dense = spec.make_forward_inputs(params, generator(1, dev), dev)
    cache = K.quantize_kv_int4(dense["k"], dense["v"], g)
    q = dense["q"]
    named = {"q": q[:2], **{n: t[:2] for n, t in zip(spec.KV_INT4_NAMES[1:], cache)}}
    ref = spec.reference_kv_int4(named, params)["o"]
    ok = compare("o", K.flash_decode_int4(q, *cache, g)[:2], ref, spec.TOLERANCES["bfloat16"]).ok
    fns = {"int4": lambda: K.flash_decode_int4(q, *cache, g), "int4 before": lambda: OLD.flash_decode_int4(q, *cache, g),
           "bf16 decode": lambda: K.flash_attention(q, dense["k"], dense["v"]), "SDPA": lambda: spec.sdpa_baseline(dense, params)}
    us = {n: t * 1e3 for n, t in interleaved_ms(fns, 30, dev).items()}
    nbytes = sum(t.nbytes for t in cache)
    dense_bytes = 2 * dense["k"].nbytes
    row = {"seq_k": sk, "group_size": g, "ok": ok, "int4_MiB": nbytes / 2**20, "bf16_MiB": dense_bytes / 2**20, **{f"{n} us": round(t, 1) for n, t in us.items()}}
    info["rows"].append(row)
    print(f"ROW sk={sk} g={g} ok={ok} cache {nbytes / 2**20:.0f}/{dense_bytes / 2**20:.0f} MiB: " + "; ".join(f"{n} {t:.1f}" for n, t in us.items())
          + f" | int4/SDPA {us['SDPA'] / us['int4']:.2f}x, before {us['SDPA'] / us['int4 before']:.2f}x; int4 {nbytes / us['int4'] / 1e6:.2f} TB/s", flush=True)
json.dump(info, open(sys.argv[1], "w"), indent=1)
