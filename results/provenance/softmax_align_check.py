import triton
from triton.backends.compiler import GPUTarget
from solutions.fusion.kernels import _softmax_kernel
sig = {"x_ptr": "*bf16", "y_ptr": "*bf16", "n_rows": "i32", "n_cols": "i32", "stride_x": "i32", "stride_y": "i32",
       "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "SINGLE_TILE": "constexpr", "PAIRS": "constexpr"}
d16 = [["tt.divisibility", 16]]
for label, attrs in [("n_cols, strides divisible by 16 (20000)", {(0,): d16, (1,): d16, (3,): d16, (4,): d16, (5,): d16}),
                     ("n_cols, strides odd (20001)", {(0,): d16, (1,): d16})]:
    for single in (True, False):
        src = triton.compiler.ASTSource(fn=_softmax_kernel, signature=sig, constexprs={"BLOCK_M": 1, "BLOCK_N": 32768 if single else 4096, "SINGLE_TILE": single, "PAIRS": False}, attrs=attrs)
        c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 16})
        ptx = c.asm["ptx"]
        kinds = {k: ptx.count(k) for k in ("ld.global.v4.b32", "ld.global.v2.b32", "ld.global.b32", "ld.global.b16", "st.global.v4.b32", "st.global.b16")}
        print(label, "single tile" if single else "looped", {k: v for k, v in kinds.items() if v})
