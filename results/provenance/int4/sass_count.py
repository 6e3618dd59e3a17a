"""Compile a Triton kernel for sm_90 on the CPU and count the SASS of its loops (no GPU needed)."""
import os, re, subprocess, sys, tempfile
sys.path.insert(0, ".")
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

BIN = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin")


def compile_sass(fn, signature, constexprs, num_warps=2, num_stages=3, arch=90):
    sig = dict(signature)
    for k in constexprs:
        sig[k] = "constexpr"
    k = triton.compile(ASTSource(fn, sig, constexprs), target=GPUTarget("cuda", arch, 32),
                       options={"num_warps": num_warps, "num_stages": num_stages})
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(k.asm["cubin"])
    sass = subprocess.run([f"{BIN}/cuobjdump", "-sass", f.name], capture_output=True, text=True).stdout
    res = subprocess.run([f"{BIN}/cuobjdump", "-res-usage", f.name], capture_output=True, text=True).stdout
    return k, sass, res


def loop_stats(sass):
    """Instructions per loop body: the spans between a label and a backward branch to it."""
    lines = [l for l in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4,6}\*/", l)]
    addr = [int(re.match(r"\s+/\*([0-9a-f]{4,6})\*/", l).group(1), 16) for l in lines]
    out = []
    for i, l in enumerate(lines):
        m = re.search(r"BRA (?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", l)
        m2 = re.search(r"BRA\s+`\(\.L_x_(\d+)\)", l)
        tgt = None
        mm = re.search(r"BRA[^;]*0x([0-9a-f]+)", l)
        if mm:
            tgt = int(mm.group(1), 16)
        if tgt is not None and tgt < addr[i]:
            body = [x for x, a in zip(lines, addr) if tgt <= a <= addr[i]]
            ops = {}
            for x in body:
                op = re.sub(r"^\s+/\*[0-9a-f]{4,6}\*/\s+(@!?U?P\w+\s+)?", "", x).split()[0].split(".")[0]
                ops[op] = ops.get(op, 0) + 1
            out.append((tgt, addr[i], len(body), ops))
    return out


def op_hist(sass, lo=0, hi=1 << 30):
    ops = {}
    for l in sass.splitlines():
        m = re.match(r"\s+/\*([0-9a-f]{4,6})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_]+)", l)
        if m and lo <= int(m.group(1), 16) <= hi:
            ops[m.group(3)] = ops.get(m.group(3), 0) + 1
    return ops


def full_ops(sass, lo, hi):
    """Histogram with modifiers (LDS.U8, LDSM.16.M88.4, ...) between two addresses."""
    ops = {}
    for l in sass.splitlines():
        m = re.match(r"\s+/\*([0-9a-f]{4,6})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)", l)
        if m and lo <= int(m.group(1), 16) <= hi:
            ops[m.group(3)] = ops.get(m.group(3), 0) + 1
    return ops
