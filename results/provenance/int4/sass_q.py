"""SASS of int4_split_v2 (or a kernel named in KERNEL) at sm_90 for configs given as magic,bn,nw,ns[,block_g]."""
import sys; sys.path.insert(0, ".diag"); sys.path.insert(0, ".")
import importlib, os
from sass_count import loop_stats, full_ops
from sass_int4_v2 import sass_of, q, kp, ks, vs, op, lp, sk, g, D
modname = os.environ.get("MOD", "int4_v2")
m = importlib.import_module(modname)
for a in sys.argv[1:]:
    magic, bn, nw, ns = map(int, a.split(",")[:4])
    args = (q, kp, ks, ks, kp, vs, vs, op, lp, sk, sk // g, 4, 1024, 0.1)
    kw = dict(GROUP_SIZE=g, HEAD_DIM=D, BLOCK_N=bn, BLOCK_G=16, GQP=4, DOT_PRECISION="tf32", MAGIC=bool(magic), HALF_P=64, num_warps=nw, num_stages=ns)
    k, sass, r = sass_of((getattr(m, "int4_split_v6", None) or getattr(m, "int4_split_v5", None) or getattr(m, "int4_split_v4", None) or getattr(m, "int4_split_v3", None) or m.int4_split_v2), args, kw)
    for s in loop_stats(sass):
        ops = full_ops(sass, s[0], s[1])
        mem = {o: c for o, c in ops.items() if o.startswith(("LDS", "STS", "LDG", "LDSM", "LDL", "STL", "HMMA", "I2F", "F2F", "BAR"))}
        print(f"{a}: {r} smem {k.metadata.shared} loop {s[2]} instr, {s[2] * nw / bn:.1f} warp-instr/key; {sorted(mem.items())}")
