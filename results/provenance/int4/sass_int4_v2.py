import sys; sys.path.insert(0, ".diag"); sys.path.insert(0, ".")
import os, re, subprocess, tempfile
from sass_count import loop_stats, op_hist, BIN
import torch, triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from autograder.portability import _bind
from int4_v2 import int4_split_v2
mod = sys.modules["int4_v2"].mod


def sass_of(jit, args, kw, arch=90):
    key, (signature, constexprs, attrs, options) = _bind(jit, args, kw, arch)
    k = triton.compile(ASTSource(jit, signature, constexprs, attrs), target=GPUTarget("cuda", arch, 32), options=options.__dict__)
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(k.asm["cubin"])
    sass = subprocess.run([f"{BIN}/cuobjdump", "-sass", f.name], capture_output=True, text=True).stdout
    res = subprocess.run([f"{BIN}/cuobjdump", "-res-usage", f.name], capture_output=True, text=True).stdout
    return k, sass, res.strip().splitlines()[-1].split()[:2]


def report(name, k, sass, r, bn, nw):
    print(f"{name}: total {sum(op_hist(sass).values())}; {r} smem {k.metadata.shared}")
    for s in loop_stats(sass):
        top = sorted(s[3].items(), key=lambda x: -x[1])[:16]
        print(f"   loop {hex(s[0])}-{hex(s[1])}: {s[2]} instr/iter, {s[2]*nw/bn:.1f} warp-instr/key", top)


meta = torch.device("meta")
B, Hq, Hkv, sk, D, g = 8, 32, 8, 16384, 128, 32
q = torch.empty(B, Hq, 1, D, dtype=torch.bfloat16, device=meta)
kp = torch.empty(B, Hkv, sk, D // 2, dtype=torch.uint8, device=meta)
ks = torch.empty(B, Hkv, sk // g, D, dtype=torch.float32, device=meta)
vs = torch.empty(B, Hkv, sk, dtype=torch.float32, device=meta)
op = torch.empty(B * Hq, 16, D, dtype=torch.float32, device=meta)
lp = torch.empty(B * Hq, 16, dtype=torch.float32, device=meta)
which = sys.argv[1] if len(sys.argv) > 1 and __name__ == "__main__" else "none"
if which in ("both", "old"):
    for bn, nw in [(32, 2), (32, 4)]:
        args = (q, kp, ks, ks, kp, vs, vs, op, lp, sk, sk // g, 4, 1024, 0.1)
        kw = dict(GROUP_SIZE=g, HEAD_DIM=D, BLOCK_N=bn, BLOCK_G=16, DOT_PRECISION="tf32", UNPACK_JOIN=True, num_warps=nw, num_stages=3)
        report(f"old bn={bn} w={nw}", *sass_of(mod._attn_decode_int4_split_kernel, args, kw), bn, nw)
if which in ("both", "new"):
    for magic, bn, nw in [(0, 128, 4), (1, 128, 4), (1, 64, 2), (1, 64, 4), (1, 128, 8)]:
        args = (q, kp, ks, ks, kp, vs, vs, op, lp, sk, sk // g, 4, 1024, 0.1)
        kw = dict(GROUP_SIZE=g, HEAD_DIM=D, BLOCK_N=bn, BLOCK_G=16, GQP=4, DOT_PRECISION="tf32", MAGIC=bool(magic), HALF_P=64, num_warps=nw, num_stages=3)
        report(f"new magic={magic} bn={bn} w={nw}", *sass_of(int4_split_v2, args, kw), bn, nw)
