import triton
from triton.backends.compiler import GPUTarget
from autograder.diagnose import resource_usage
from solutions.fusion.kernels import _softmax_kernel
sig = {"x_ptr": "*bf16", "y_ptr": "*bf16", "n_rows": "i32", "n_cols": "i32", "stride_x": "i32", "stride_y": "i32",
       "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "SINGLE_TILE": "constexpr", "PAIRS": "constexpr"}
d16 = [["tt.divisibility", 16]]
for dt in ("*bf16", "*fp16"):
    for pairs in (False, True):
        for w in (16, 32):
            s = dict(sig, x_ptr=dt, y_ptr=dt)
            src = triton.compiler.ASTSource(fn=_softmax_kernel, signature=s, constexprs={"BLOCK_M": 1, "BLOCK_N": 32768, "SINGLE_TILE": True, "PAIRS": pairs},
                                            attrs={(0,): d16, (1,): d16, (3,): d16, (4,): d16, (5,): d16})
            c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": w})
            u = resource_usage(c.asm["cubin"])
            print(dt, "pairs" if pairs else "plain", w, u["REG"], u.get("STACK", 0), "v4" if "ld.global.v4" in c.asm["ptx"] else "scalar")
