import sys, re, subprocess, tempfile, os, collections, importlib.util
import triton
from triton.backends.compiler import GPUTarget
spec = importlib.util.spec_from_file_location("tw", "results/provenance/softmax_exp2_kernel.py")
tw = importlib.util.module_from_spec(spec); spec.loader.exec_module(tw)
tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
sig = {'x_ptr': '*bf16', 'y_ptr': '*bf16', 'n_rows': 'i32', 'n_cols': 'i32', 'stride_x': 'i32', 'stride_y': 'i32', 'BLOCK_N': 'constexpr', 'EXP2': 'constexpr', 'EVICT': 'constexpr', 'STREAM': 'constexpr'}
d16 = [['tt.divisibility', 16]]
for e2 in (0, 2):
    src = triton.compiler.ASTSource(fn=tw.pairs_var, signature=sig, constexprs={'BLOCK_N': 32768, 'EXP2': e2, 'EVICT': 0, 'STREAM': 0}, attrs={(0,): d16, (1,): d16, (3,): d16, (4,): d16, (5,): d16})
    c = triton.compile(src, target=GPUTarget('cuda', 90, 32), options={'num_warps': 16})
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(c.asm["cubin"]); f.flush()
        sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True).stdout
    ops = collections.Counter(re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass, re.M))
    total = sum(ops.values())
    print("tl.exp" if e2 == 0 else "tl.exp2", "SASS instructions", total, {k: v for k, v in ops.most_common(12)})
