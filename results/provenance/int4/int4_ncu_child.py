"""Launch each INT4 decode variant 3 times at sk=16384, g=32 (ncu profiles the 3rd of the kernel named)."""
import os, sys
sys.path.insert(0, ".diag"); sys.path.insert(0, ".")
import torch
from int4_v2 import decode_v2, K
from autograder.spec import generator
from autograder.specs import flash_attention as spec
dev = torch.device("cuda")
sk, g = 16384, 32
params = {"shape": [8, 32, 1, 128], "kv_heads": 8, "seq_k": sk, "causal": False, "dtype": "bfloat16", "group_size": g}
dense = spec.make_forward_inputs(params, generator(1, dev), dev)
cache = K.quantize_kv_int4(dense["k"], dense["v"], g)
q = dense["q"]
which = os.environ["WHICH"]
fn = {"old": lambda: K.flash_decode_int4(q, *cache, g),
      "new": lambda: decode_v2(q, cache, g, 128, 4, 3, 2048, True),
      "bf16": lambda: K.flash_attention(q, dense["k"], dense["v"])}[which]
for _ in range(3):
    fn()
torch.cuda.synchronize()
