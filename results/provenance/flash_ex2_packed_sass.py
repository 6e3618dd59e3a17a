"""Do packed 16-bit exponentials halve the MUFU work of flash attention's softmax? Compiled here, no GPU needed.

    python results/provenance/flash_ex2_packed_sass.py

Lecture 08, section 12 puts part of the forward's gap to cuDNN on the exponentials (MUFU's ex2, one per score). PTX has
packed forms, `ex2.approx.ftz.bf16x2` and `ex2.approx.f16x2`, two exponentials per instruction, and P goes to the
P V product in 16 bits anyway. This compiles one kernel that takes 1024 float32 exponents to 16-bit results three
ways (float32 ex2 then a conversion, as the solution does; the argument packed to bf16x2 then one packed ex2; the same
in f16x2) for sm_90 (Hopper) and sm_100 (Blackwell), and counts the SASS instructions of each (nvdisasm). On sm_90
ptxas splits each packed PTX instruction into two MUFU.EX2 of one half each: as many MUFU instructions as float32.
"""
from __future__ import annotations

import collections
import os
import re
import subprocess
import tempfile

os.environ["TRITON_INTERPRET"] = "0"  # Triton's compiler, not its interpreter, although there is no GPU

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

N = 1024
FORMS = {0: "float32 ex2, then to bf16", 1: "bf16x2 ex2 (argument packed)", 2: "f16x2 ex2 (argument packed)"}


@triton.jit
def _exp2_kernel(x_ptr, y_ptr, N: tl.constexpr, FORM: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if FORM == 0:
        y = tl.math.exp2(x).to(tl.bfloat16)
    elif FORM == 1:
        y = tl.inline_asm_elementwise("ex2.approx.ftz.bf16x2 $0, $1;", "=r,r", [x.to(tl.bfloat16)],
                                      dtype=tl.bfloat16, is_pure=True, pack=2)
    else:
        y = tl.inline_asm_elementwise("ex2.approx.f16x2 $0, $1;", "=r,r", [x.to(tl.float16)],
                                      dtype=tl.float16, is_pure=True, pack=2)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))


def sass_counts(cubin: bytes) -> collections.Counter:
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([tool, "-c", f.name], capture_output=True, text=True, check=True).stdout
    return collections.Counter(re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass))


def main() -> None:
    print(f"{N} exponentials, float32 in, 16 bits out; SASS instructions (nvdisasm), 4 warps")
    for cc in (90, 100):
        for form, what in FORMS.items():
            src = ASTSource(_exp2_kernel, {"x_ptr": "*fp32", "y_ptr": "*bf16", "N": "constexpr", "FORM": "constexpr"},
                            {"N": N, "FORM": form})
            try:
                ck = triton.compile(src, target=GPUTarget("cuda", cc, 32), options={"num_warps": 4})
            except Exception as e:  # noqa: BLE001 - a target this Triton cannot build for: say so and go on
                print(f"  sm_{cc} {what:30s} not compiled: {str(e).splitlines()[0][:100]}")
                continue
            ops = sass_counts(ck.asm["cubin"])
            mufu = {k: v for k, v in ops.items() if k.startswith("MUFU")}
            per_thread = N // (4 * 32)
            print(f"  sm_{cc} {what:30s} MUFU {sum(mufu.values()):3d} {mufu}  (per thread: {per_thread} exponentials)"
                  f"  all {sum(ops.values())}")


if __name__ == "__main__":
    main()
