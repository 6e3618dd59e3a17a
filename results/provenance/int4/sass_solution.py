"""Warp instructions per key of the solution's INT4 split kernel, from its SASS for sm_90, compiled on the CPU
(no GPU needed): the decode speed shape (8x32/8 heads, D=128, bf16, 16384 keys, G=32) at the H100/H200 table's
tile (128 keys, 4 warps, 3 stages). Run from the repository root: TRITON_INTERPRET=0 python results/provenance/int4/sass_solution.py
The same count on the commit before 2026-11-25's rewrite (32-key tiles, 2 warps) gave 78.5."""
import os, re, subprocess, sys, tempfile
sys.path.insert(0, ".")
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from autograder.portability import _bind
from course.loader import load_kernels

BIN = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")
K = load_kernels("flash_attention", "solutions")
mod = sys.modules[K.flash_decode_int4.__module__]
meta = torch.device("meta")
B, Hq, Hkv, sk, D, g, bn, nw, ns = 8, 32, 8, 16384, 128, 32, 128, 4, 3
q = torch.empty(B, Hq, 1, D, dtype=torch.bfloat16, device=meta)
kp = torch.empty(B, Hkv, sk, D // 2, dtype=torch.uint8, device=meta)
ks = torch.empty(B, Hkv, sk // g, D, dtype=torch.float32, device=meta)
vs = torch.empty(B, Hkv, sk, dtype=torch.float32, device=meta)
op = torch.empty(B * Hq, 8, D, dtype=torch.float32, device=meta)
lp = torch.empty(B * Hq, 8, dtype=torch.float32, device=meta)
block_g, block_n = mod.int4_tiles(Hq // Hkv, g, bn)
args = (q, kp, ks, ks, kp, vs, vs, op, lp, sk, sk // g, Hq // Hkv, 2048, 0.1)
kw = dict(GROUP_SIZE=g, HEAD_DIM=D, BLOCK_D=D, BLOCK_N=block_n, BLOCK_G=block_g, GQP=4, DOT_PRECISION="tf32",
          num_warps=nw, num_stages=ns)
jit = mod._attn_decode_int4_split_kernel
_, (signature, constexprs, attrs, options) = _bind(jit, args, kw, 90)
k = triton.compile(ASTSource(jit, signature, constexprs, attrs), target=GPUTarget("cuda", 90, 32), options=options.__dict__)
with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
    f.write(k.asm["cubin"])
sass = subprocess.run([f"{BIN}/cuobjdump", "-sass", f.name], capture_output=True, text=True).stdout
lines = [l for l in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4,6}\*/", l)]
addr = [int(re.match(r"\s+/\*([0-9a-f]{4,6})\*/", l).group(1), 16) for l in lines]
for i, l in enumerate(lines):  # the loop: the span from a backward branch's target to the branch
    m = re.search(r"BRA[^;]*0x([0-9a-f]+)", l)
    if m and int(m.group(1), 16) < addr[i]:
        body = [x for x, a in zip(lines, addr) if int(m.group(1), 16) <= a <= addr[i]]
        ops: dict[str, int] = {}
        for x in body:
            op_ = re.sub(r"^\s+/\*[0-9a-f]{4,6}\*/\s+(@!?U?P\w+\s+)?", "", x).split()[0].split(".")[0]
            ops[op_] = ops.get(op_, 0) + 1
        top = ", ".join(f"{o} {c}" for o, c in sorted(ops.items(), key=lambda t: -t[1])[:10])
        print(f"tile {block_n} keys x {block_g} rows, {nw} warps: {len(body)} instructions per iteration per warp = "
              f"{len(body) * nw / block_n:.1f} warp instructions per key; most: {top}")
