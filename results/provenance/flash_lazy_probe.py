"""Flash attention forward: lazy rescaling and polynomial exponentials (FlashAttention-4's tricks) in the solution's
inner loop, beside the solution and SDPA's cuDNN backend (issue 22).

    python results/provenance/flash_lazy_probe.py --check   # on the CPU (interpreter): every variant's output
    python results/provenance/flash_lazy_probe.py --ptx     # on the CPU: sm_90 compilations, registers, ex2 / FMA
    python results/provenance/flash_lazy_probe.py OUT       # on a GPU: every variant checked, then timed

Run from the repository root. Why: the forward runs at 0.87-0.89x cuDNN on an H100 (issue 22,
results/h100/flash_ws_probe.md), and lecture 08 section 12 puts the rest on the softmax: in one instruction stream
the exponentials (MUFU) and the two wgmmas of a step wait on each other (every `wgmma.wait_group` in the solution's
sm_90 PTX waits for 0 groups). FlashAttention-4 takes work off that path two ways, tried here on the unmasked key
blocks of `_attn_fwd_inner` (masked blocks keep the solution's code):

- lazy: the running max m_i, and with it the rescaling of acc and l_i by exp2(m_i - m_new), changes only when some
  row's block max exceeds m_i by more than 8 (log2 units, a factor 256): one branch for the whole block. In between
  p = exp2(s - m_i) <= 2**8, which float32 sums and bfloat16's P hold without trouble.
- poly25 / poly50: a quarter or a half of the block's exponentials by a degree-3 polynomial on the FMA pipe
  (2**x = 2**round(x) * 2**f, f in [-0.5, 0.5]; round(x) from the 1.5 * 2**23 trick, added to the exponent bits)
  instead of MUFU's ex2. The (BLOCK_M, BLOCK_N) scores are split into key halves / quarters with reshape + permute +
  split and joined back before the P V dot; on sm_90 that is register renaming only (same shared memory and barriers
  as the solution, --ptx). lazy_poly25 / lazy_poly50: both.

How a variant runs: the source of the solution's `_attn_fwd_inner`, its unmasked branch rewritten, and of
`_attn_fwd_kernel`, unchanged, go to a file of their own (a temporary directory), imported as a module whose
namespace starts as a copy of the solution module's, so that the kernel calls the variant's inner loop. The
solution's launcher `attention_forward` (its own code object, bound to that namespace) launches it: the tiles,
warps, stages and TMA descriptors of solutions/flash_attention/configs.json, the course's `launch`. The solution
module is never modified. "rebuilt" is the solution's own code through that path (the control: bitwise equal output
under --check), "broken" a deliberately wrong one (l_i doubled on unmasked blocks) that must fail its check, here
and on the first GPU row: the variant, not a cached solution kernel, is what runs.

--check: float32 and bfloat16, B = 1, Hq/Hkv 2/2 and 4/2, S = 64 ... 512 (200 and 384: masked key blocks), d = 64 and
128, causal and not, score std 2 to 8 and the grader's "hostile" rows, against float64 attention under the course's
tolerances (autograder/specs/flash_attention.py). It prints how often the lazy branch is taken (replayed in float64
with the launcher's tiles). The polynomial's 1.0e-4 relative error is the size of the float32 tolerance itself: in
float32 the poly variants reach 1.1-1.8x it, so there they are held to POLY_FLOAT32_SLACK x it (FlashAttention-4 uses
the polynomial for 16-bit P only). Triton 3.7.1's interpreter multiplies bfloat16 dot operands as raw bits; --check
widens them to float32 in its own process first (interpreter_bf16_dot).

--ptx: TRITON_INTERPRET=0 and the H100's configs.json entry (bf16, d = 128, S = 4096 and the S <= 1024 class, causal
and not): the launch is recorded from the launcher itself on meta tensors and compiled for sm_90 (as
`python -m autograder portability` does). Every variant compiles with no spills (Triton 3.7.1).

OUT (a GPU): bf16, d = 128, 4x32/32 heads x S in {1024, 4096, 8192, 16384} and 1x32/8 x 4096, causal and not. Every
output is compared with cuDNN's under the course's bfloat16 tolerance (|out - ref| <= 2.5e-2 * max(row, tensor)
mean|ref| + 2.5e-2 * |ref|; the first head also against float64, recorded); a variant that fails is reported and
not timed. Timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of
20 calls (8 once 200 s have gone; rows left after 225 s are skipped). Writes OUT/flash_lazy_probe.json and prints a
table last: cuDNN's TFLOP/s and each variant's time ratio to cuDNN (higher is faster).
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import math
import os
import re
import sys
import tempfile
import time
import types
from pathlib import Path

if "--ptx" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "0"  # Triton's compiler, not its interpreter, although there is no GPU
sys.path.insert(0, str(Path.cwd()))

import course.env  # noqa: E402,F401  (the interpreter when there is no GPU and --ptx is not asked, before triton)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402

from solutions.flash_attention import kernels as fa  # noqa: E402

# --------------------------------------------------------------------------------------------------
# The polynomial: 2**f ~ 1 + C1 f + C2 f**2 + C3 f**3 on [-0.5, 0.5], minimax in relative error with the constant
# fixed at 1 (fit_poly; the values are its result rounded to float32). Max relative error 1.01e-4, in float32 over
# x in [-125, 8] too (check_poly).
# --------------------------------------------------------------------------------------------------
C1, C2, C3 = 0.6932829022407532, 0.24221095442771912, 0.05500893294811249
ROUND_MAGIC = 12582912.0  # 1.5 * 2**23: x + it rounds x to an integer, held in the low mantissa bits
LAZY_THRESHOLD = 8.0  # log2 units: rescale only when a row's max grows by more than a factor 256
# The polynomial's 1.0e-4 relative error is the course's float32 tolerance itself (rtol = atol = 1e-4): in float32
# the poly variants land at up to 1.8x it (--check), so there they are held to this multiple of it. FlashAttention-4
# uses the polynomial for 16-bit P only, whose own rounding (2**-9) is 40x larger; the GPU run is bf16.
POLY_FLOAT32_SLACK = 3.0


def fit_poly(iters: int = 2000) -> tuple[np.ndarray, float]:
    """Lawson's iteration (reweighted least squares) to the minimax relative error of 1 + c1 f + c2 f^2 + c3 f^3
    against 2**f on [-0.5, 0.5]; returns (c1, c2, c3) and the max relative error in float64."""
    f = 0.5 * np.cos(np.linspace(0.0, np.pi, 20001))  # Chebyshev-spaced points
    g = 2.0**f
    a = np.stack([f, f**2, f**3], 1) / g[:, None]  # rows of the relative error (1 + a c - g) / g
    b = (g - 1.0) / g
    w = np.full_like(f, 1.0 / f.size)
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)
        e = np.abs(a @ c - b)
        w = w * e
        w /= w.sum()
    return c, float(e.max())


def poly_exp2_numpy(x: np.ndarray) -> np.ndarray:
    """The kernel's formula in numpy float32 (int32 arithmetic wraps, as on the GPU)."""
    c1, c2, c3 = (np.float32(c) for c in (C1, C2, C3))
    x = np.maximum(x.astype(np.float32), np.float32(-125.0))
    t = x + np.float32(ROUND_MAGIC)
    j = t - np.float32(ROUND_MAGIC)
    f = x - j
    p = ((c3 * f + c2) * f + c1) * f + np.float32(1.0)
    with np.errstate(over="ignore"):
        return (p.view(np.int32) + (t.view(np.int32) << np.int32(23))).view(np.float32)


# --------------------------------------------------------------------------------------------------
# The variants: source text
# --------------------------------------------------------------------------------------------------

HELPERS = f'''
@triton.jit
def _exp2_poly(x):
    """2**x for x <= 8 on the FMA pipe: 2**round(x) * 2**f, f = x - round(x) in [-0.5, 0.5], 2**f by a degree-3
    minimax polynomial (max relative error 1.01e-4). round(x) sits in the low mantissa bits of t = x + 1.5 * 2**23;
    shifted left by 23 they add round(x) to p's exponent (t's other bits, 0x4B400000 << 23, wrap to 0 mod 2**32)."""
    x = tl.maximum(x, -125.0)  # 2**-125 * 2**f stays a normal float
    t = x + {ROUND_MAGIC!r}
    j = t - {ROUND_MAGIC!r}
    f = x - j
    p = (({C3!r} * f + {C2!r}) * f + {C1!r}) * f + 1.0
    return (p.to(tl.int32, bitcast=True) + (t.to(tl.int32, bitcast=True) << 23)).to(tl.float32, bitcast=True)


@triton.jit
def _halves(x):
    """(M, N) -> the key halves (M, N // 2) [:, :N // 2] and [:, N // 2:]."""
    return tl.split(tl.permute(tl.reshape(x, [x.shape[0], 2, x.shape[1] // 2]), [0, 2, 1]))


@triton.jit
def _unhalves(a, b):
    """The inverse of _halves: (M, N) with a as its first N // 2 keys and b as the rest."""
    return tl.reshape(tl.permute(tl.join(a, b), [0, 2, 1]), [a.shape[0], 2 * a.shape[1]])


@triton.jit
def _exp2_poly50(x):
    """2**x, the first half of the keys on MUFU (ex2), the second by the polynomial."""
    a, b = _halves(x)
    return _unhalves(tl.math.exp2(a), _exp2_poly(b))


@triton.jit
def _exp2_poly25(x):
    """2**x, the first three quarters of the keys on MUFU (ex2), the last quarter by the polynomial."""
    a, b = _halves(x)
    b1, b2 = _halves(b)
    return _unhalves(tl.math.exp2(a), _unhalves(tl.math.exp2(b1), _exp2_poly(b2)))

'''

# The lazy unmasked step, EXP2 standing for the exponential of the variant.
LAZY_BODY = f"""\
m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
# One branch for the block: taken when any row's max grew by more than {LAZY_THRESHOLD} (always on the first
# block, m_i = -inf; the unmasked m_new is finite, so m_new - m_i is never NaN).
if tl.max(m_new - m_i, 0) > {LAZY_THRESHOLD!r}:
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha
    acc = acc * alpha[:, None]
    m_i = m_new
p = EXP2(s * qk_scale - m_i[:, None])  # <= 2**{LAZY_THRESHOLD:g}
l_i += tl.sum(p, 1)
acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
"""

EXP_OF = {"": "tl.math.exp2", "poly25": "_exp2_poly25", "poly50": "_exp2_poly50"}
VARIANTS = ["solution", "rebuilt", "lazy", "poly25", "poly50", "lazy_poly25", "lazy_poly50"]
TIMED = list(VARIANTS)  # on the GPU, beside cuDNN ("broken" only checked, on the first row)
PROBE = "flash_lazy_probe"  # the run's name and its JSON's (flash_ahead_probe.py reuses this harness under its own)


def _indent(lines: list[str], n: int) -> list[str]:
    return [(" " * n + ln) if ln.strip() else ln for ln in lines]


def inner_source(name: str) -> str:
    """The source of _attn_fwd_inner with its unmasked branch made variant `name`'s. The loop tail that both branches
    share (alpha, l_i, acc, m_i) moves into each branch (MASK_KEYS and MASK_CAUSAL are constexprs: no runtime cost)."""
    src = inspect.getsource(fa._attn_fwd_inner.fn)
    lines = src.splitlines()
    i_if = lines.index("        if MASK_KEYS or MASK_CAUSAL:")
    i_else = lines.index("        else:", i_if)
    i_alpha = next(i for i in range(i_else, len(lines)) if lines[i].startswith("        alpha = tl.math.exp2(m_i - m_new)"))
    i_end = lines.index("        m_i = m_new", i_alpha)
    masked, unmasked, tail = lines[i_if + 1 : i_else], lines[i_else + 1 : i_alpha], lines[i_alpha : i_end + 1]
    assert all(ln.startswith("            ") or not ln.strip() for ln in masked + unmasked), "unexpected indentation"
    solution_step = unmasked + _indent(tail, 4)  # the solution's unmasked step, verbatim
    exp_line = "            p = tl.math.exp2(s * qk_scale - m_new[:, None])"
    assert solution_step.count(exp_line) == 1, "the solution's unmasked exponential is not where it was"
    kind, _, exp = name.partition("_") if name.startswith("lazy") else ("", "", name)
    if name in ("solution", "rebuilt"):
        step = solution_step
    elif name == "broken":  # l_i doubled on unmasked blocks: a wrong output wherever they exist
        step = [ln.replace("l_i * alpha + tl.sum(p, 1)", "l_i * alpha + 2.0 * tl.sum(p, 1)") for ln in solution_step]
        assert step != solution_step
    elif kind == "lazy":
        step = _indent(LAZY_BODY.replace("EXP2", EXP_OF[exp]).splitlines(), 12)
    else:
        step = [ln.replace("tl.math.exp2(", EXP_OF[exp] + "(") if ln == exp_line else ln for ln in solution_step]
    out = lines[: i_if + 1] + masked + _indent(tail, 4) + ["        else:"] + step + lines[i_end + 1 :]
    return "\n".join(out) + "\n"


_TMP = Path(tempfile.mkdtemp(prefix="flash_lazy_probe_"))


class Variant:
    """One variant: its module (a copy of the solution module's namespace with the two kernels replaced), its
    kernel, and the solution's launcher bound to that namespace."""

    def __init__(self, name: str, device_of=None) -> None:
        self.name = name
        if name == "solution":
            ns = {k: v for k, v in vars(fa).items() if not k.startswith("__")}
            self.module, self.path = None, None
        else:
            text = ("import triton\nimport triton.language as tl\n\n" + HELPERS + "\n" + inner_source(name) + "\n\n"
                    + inspect.getsource(fa._attn_fwd_kernel.fn))
            self.path = _TMP / f"flash_lazy_{name}.py"
            self.path.write_text(text)  # a real file: triton.jit reads the source through inspect
            modname = f"_flash_lazy_probe_{name}"
            spec = importlib.util.spec_from_file_location(modname, self.path)
            module = importlib.util.module_from_spec(spec)
            module.__dict__.update({k: v for k, v in vars(fa).items() if not k.startswith("__")})
            sys.modules[modname] = module
            spec.loader.exec_module(module)  # defines the helpers, _attn_fwd_inner and _attn_fwd_kernel anew
            assert module._attn_fwd_kernel is not fa._attn_fwd_kernel and module._attn_fwd_inner is not fa._attn_fwd_inner
            self.module, ns = module, module.__dict__
        if device_of is not None:
            ns["device_of"] = device_of
        self.kernel = ns["_attn_fwd_kernel"]
        # The solution's launcher, the same code object, with this namespace for its globals
        self.forward = types.FunctionType(fa.attention_forward.__code__, ns, "attention_forward",
                                          fa.attention_forward.__defaults__, fa.attention_forward.__closure__)

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        return self.forward(q, k, v, causal, 1.0 / math.sqrt(q.shape[-1]), False)[0]


def build(names: list[str], device_of=None) -> dict[str, Variant]:
    return {n: Variant(n, device_of) for n in names}


# --------------------------------------------------------------------------------------------------
# --check: the CPU interpreter
# --------------------------------------------------------------------------------------------------


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """float64 attention over the given (rounded) inputs."""
    group = q.shape[1] // k.shape[1]
    q, k, v = (t.double() for t in (q, k, v))
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def lazy_branches(q: torch.Tensor, k: torch.Tensor, causal: bool, block_m: int, block_n: int) -> tuple[int, int, int]:
    """The lazy branch as the kernel takes it, replayed in float64 on the unmasked key blocks:
    (unmasked blocks, branches taken, of which first blocks)."""
    group = q.shape[1] // k.shape[1]
    kk = k.double().repeat_interleave(group, 1)
    s_all = q.double() @ kk.transpose(-1, -2) * (fa.LOG2E / math.sqrt(q.shape[-1]))  # log2 units
    seqlen_q, seqlen_k = q.shape[2], k.shape[2]
    blocks = taken = first = 0
    for start_m in range(0, seqlen_q, block_m):
        rows = s_all[:, :, start_m : start_m + block_m]  # rows past seqlen_q hold q = 0 in the kernel: scores 0
        if rows.shape[2] < block_m:
            rows = torch.cat([rows, rows.new_zeros(*rows.shape[:2], block_m - rows.shape[2], seqlen_k)], 2)
        hi = start_m if causal else seqlen_k - seqlen_k % block_n
        m = torch.full(rows.shape[:3], float("-inf"), dtype=torch.float64)
        for start_n in range(0, hi, block_n):
            m_blk = rows[..., start_n : start_n + block_n].amax(-1)
            m_new = torch.maximum(m, m_blk)
            take = ((m_new - m).flatten(2).amax(-1) > LAZY_THRESHOLD)  # per (batch, head) program
            blocks += take.numel()
            taken += int(take.sum())
            first += take.numel() if start_n == 0 else 0
            m = torch.where(take[..., None], m_new, m)
    return blocks, taken, first


def check_poly() -> None:
    c, err = fit_poly()
    print(f"polynomial fit (Lawson, minimax relative, constant 1): C1 {c[0]:.9f} C2 {c[1]:.9f} C3 {c[2]:.9f}, "
          f"max rel error {err:.3e} (float64)")
    assert np.allclose(c, (C1, C2, C3), rtol=0, atol=2e-7), "the coefficients in the file are not the fit's"
    x = np.concatenate([np.linspace(-125.0, 8.0, 2_000_001, dtype=np.float32),
                        np.arange(-125, 9).astype(np.float32), np.arange(-125, 8).astype(np.float32) + np.float32(0.5)])
    want = 2.0 ** x.astype(np.float64)
    rel = np.abs(poly_exp2_numpy(x).astype(np.float64) - want) / want
    print(f"numpy float32 formula over x in [-125, 8]: max rel error {rel.max():.3e} (at x = {x[rel.argmax()]:.4f}); "
          f"(0x4B400000 << 23) mod 2**32 = {(0x4B400000 << 23) % 2**32:#x}")
    assert rel.max() < 1.1e-4

    # The same formula as a Triton kernel (the interpreter here): the helper text the variants use
    path = _TMP / "flash_lazy_poly.py"
    path.write_text("import triton\nimport triton.language as tl\n" + HELPERS + """
@triton.jit
def _poly_kernel(x_ptr, y_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, _exp2_poly(x))
    tl.store(z_ptr + offs, x + 12582912.0 - 12582912.0)
""")
    spec = importlib.util.spec_from_file_location("_flash_lazy_poly", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ns = mod.__dict__
    xs = torch.linspace(-140.0, 8.0, 4096, dtype=torch.float32)
    ys, zs = torch.empty_like(xs), torch.empty_like(xs)
    ns["_poly_kernel"][(1,)](xs, ys, zs, N=4096)
    want_t = torch.exp2(xs.double().clamp_min(-125.0))
    rel_t = ((ys.double() - want_t).abs() / want_t).max().item()
    print(f"Triton (interpreter) _exp2_poly over x in [-140, 8] (clamped at -125): max rel error {rel_t:.3e}; "
          f"(x + 1.5*2**23) - 1.5*2**23 == round(x): {bool(torch.equal(zs, torch.round(xs)))}")
    assert rel_t < 1.1e-4 and torch.equal(zs, torch.round(xs))


def interpreter_bf16_dot() -> str:
    """Triton 3.7.1's interpreter multiplies bfloat16 dot operands as their raw uint16 bits (its create_dot converts
    only 8-bit floats): the solution itself is then wrong by 1e8 in bfloat16. When a 16x16 test dot shows that, this
    process's interpreter gets a create_dot that widens bfloat16 operands to float32 first (exact; the product is
    accumulated in float32 as before). Nothing on disk changes. Returns what it found, for the log."""
    import triton.language as tl
    from triton.runtime import interpreter as interp

    path = _TMP / "flash_lazy_dot.py"
    path.write_text("""import triton
import triton.language as tl


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr):
    o = tl.arange(0, 16)
    a = tl.load(a_ptr + o[:, None] * 16 + o[None, :])
    b = tl.load(b_ptr + o[:, None] * 16 + o[None, :])
    tl.store(c_ptr + o[:, None] * 16 + o[None, :], tl.dot(a, b))
""")
    spec = importlib.util.spec_from_file_location("_flash_lazy_dot", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def wrong() -> bool:
        a, b = (torch.randn(16, 16, generator=torch.Generator().manual_seed(i)).bfloat16() for i in (1, 2))
        c = torch.empty(16, 16)
        mod._dot_kernel[(1,)](a, b, c)
        return not torch.allclose(c, a.float() @ b.float(), rtol=1e-5, atol=1e-5)

    if not wrong():
        return "the interpreter's bfloat16 dot is right"
    plain = interp.InterpreterBuilder.create_dot

    def widen(h):
        if h.dtype.scalar == tl.bfloat16:
            return interp.TensorHandle(interp._convert_float(h.data, tl.bfloat16, tl.float32, None).view(np.float32),
                                       tl.float32)
        return h

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return plain(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    interp.InterpreterBuilder.create_dot = create_dot
    assert not wrong(), "the bfloat16 dot is still wrong"
    return ("the interpreter's bfloat16 dot multiplied raw bits (a Triton interpreter bug); this process widens its "
            "operands to float32")


def check() -> None:
    from autograder.spec import generator
    from autograder.specs.flash_attention import TOLERANCES, make_forward_inputs
    from course.comparison import compare

    check_poly()
    print(interpreter_bf16_dot())
    names = VARIANTS + ["broken"]
    variants = build(names)
    device = torch.device("cpu")
    cases = [  # (B, Hq, Hkv, S, D, causal, score std or "hostile")
        (1, 2, 2, 64, 64, False, 2.0), (1, 2, 2, 64, 64, True, 2.0), (1, 2, 2, 128, 64, True, 8.0), (1, 2, 2, 200, 64, False, 8.0),
        (1, 2, 2, 200, 64, True, 2.0), (1, 4, 2, 200, 64, True, 8.0), (1, 4, 2, 200, 64, False, "hostile"),
        (1, 4, 2, 200, 128, True, 8.0), (1, 2, 2, 200, 128, False, 2.0), (1, 2, 2, 512, 64, True, 8.0),
        (1, 4, 2, 384, 128, False, 5.0),
    ]
    worst: dict[tuple[str, str], float] = {}
    failures = []
    t0 = time.perf_counter()
    for dtype in (torch.float32, torch.bfloat16):
        dname = str(dtype).replace("torch.", "")
        tol = TOLERANCES[dname]
        for ci, (b, hq, hkv, s, d, causal, dist) in enumerate(cases):
            params = {"shape": [b, hq, s, d], "kv_heads": hkv, "dtype": dname}
            params.update({"dist": "hostile", "score_std": 2.0} if dist == "hostile" else {"score_std": dist})
            inp = make_forward_inputs(params, generator(ci, device), device)
            q, k, v = inp["q"], inp["k"], inp["v"]
            want = reference(q, k, v, causal)
            cfg = fa.forward_config(fa.device_of(q), d, dtype, causal, fa.length_class(s, s))
            nb, taken, first = lazy_branches(q, k, causal, cfg.block_m, cfg.block_n)
            cells, outs = [], {}
            for name, var in variants.items():
                got = outs[name] = var(q, k, v, causal)
                verdict = compare(name, got, want, tol)
                err = (got.double() - want).abs().max().item()
                cells.append(f"{name} {err:.1e} ({verdict.max_error:.2f})")
                key = (dname, name)
                worst[key] = max(worst.get(key, 0.0), verdict.max_error)
                if name == "broken":
                    bad = verdict.ok == (nb > 0)  # it must fail wherever unmasked blocks run
                elif dtype == torch.float32 and "poly" in name:
                    bad = verdict.max_error > POLY_FLOAT32_SLACK
                else:
                    bad = not verdict.ok
                if bad:
                    failures.append(f"{dname} case {ci} {name}: " + ("passed" if verdict.ok else verdict.brief))
            if not torch.equal(outs["rebuilt"], outs["solution"]):
                failures.append(f"{dname} case {ci}: rebuilt differs from the solution")
            print(f"{dname} {b}x{hq}/{hkv}x{s} d{d} {'causal' if causal else 'full'} "
                  f"{'hostile' if dist == 'hostile' else f'score std {dist}'}, tiles {cfg.block_m}x{cfg.block_n}: "
                  f"lazy branch taken in {taken - first} of {nb - first} unmasked blocks after the first "
                  f"(+{first} first blocks, always taken)", flush=True)
            print("   max |err| (err / tolerance): " + ", ".join(cells), flush=True)
    print(f"\nworst error / tolerance per variant (<= 1 passes; 'broken' must fail; poly in float32: <= "
          f"{POLY_FLOAT32_SLACK:g}, see POLY_FLOAT32_SLACK), {time.perf_counter() - t0:.0f} s:")
    for dname in ("float32", "bfloat16"):
        print(f"  {dname}: " + ", ".join(f"{n} {worst[(dname, n)]:.3f}" for n in names))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("all variants within the course's tolerance (the poly ones in float32 within "
          f"{POLY_FLOAT32_SLACK:g}x of it); rebuilt bitwise equal to the solution; the broken variant failed every case "
          "with unmasked blocks (the variant is what runs)")


# --------------------------------------------------------------------------------------------------
# --ptx: sm_90 compilations on the CPU, of exactly what the launcher launches on an H100
# --------------------------------------------------------------------------------------------------


def recorded_launch(var: Variant, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> tuple:
    """(kernel, args, kwargs) of the launch the variant's launcher makes for meta tensors q, k, v: JITFunction.run
    records instead of compiling (course.launch's plain path, so that every launch reaches it)."""
    from triton.runtime.jit import JITFunction

    from course.launch import plain_launches

    launches = []

    def record(self, *args, grid=None, warmup=False, **kwargs):
        launches.append((self, args, kwargs))

    saved = JITFunction.run
    JITFunction.run = record
    try:
        with plain_launches():
            var.forward(q, k, v, causal, 1.0 / math.sqrt(q.shape[-1]), False)
    finally:
        JITFunction.run = saved
    assert len(launches) == 1 and launches[0][0] is var.kernel, "the launcher did not launch the variant's kernel"
    return launches[0]


def sass_counts(cubin: bytes) -> dict[str, int]:
    """MUFU.EX2 and FFMA instructions in the cubin's SASS (cuobjdump -sass), or {} where that cannot run."""
    import subprocess

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        try:
            sass = subprocess.run([str(tool), "-sass", f.name], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return {}
    return {"MUFU.EX2": len(re.findall(r"MUFU\.EX2", sass)), "FFMA": len(re.findall(r"\bFFMA\b", sass)),
            "BAR": len(re.findall(r"\bBAR\.", sass))}


def ptx() -> None:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from autograder.diagnose import resource_usage
    from autograder.portability import _bind
    from course.device import KNOWN_GPUS

    gpu_name = "NVIDIA H100 80GB HBM3"
    h100 = KNOWN_GPUS[gpu_name]
    variants = build(VARIANTS, device_of=lambda t: h100)
    target = GPUTarget("cuda", 90, 32)
    print(f"sm_90 compilations of what the launcher launches on an {gpu_name} (its configs.json entry), bf16, "
          "d = 128, B 4 x H 32; static instruction counts (every loop body once)")
    header = (f"{'variant':12} {'regs':>4} {'spill B':>7} {'smem B':>7} {'ptx ex2':>7} {'ptx fma':>7} {'MUFU.EX2':>8} "
              f"{'FFMA':>5} {'BAR':>4}  magic add/sub")
    failed = []
    for seqlen in (4096, 1024):
        for causal in (False, True):
            q, k, v = (torch.empty(4, 32, seqlen, 128, dtype=torch.bfloat16, device="meta") for _ in range(3))
            cfg = fa.forward_config(h100, 128, torch.bfloat16, causal, fa.length_class(seqlen, seqlen))
            print(f"\nS = {seqlen} {'causal' if causal else 'non-causal'}: BLOCK_M {cfg.block_m}, BLOCK_N {cfg.block_n}, "
                  f"{cfg.num_warps} warps, {cfg.num_stages} stages, TMA {cfg.tma}")
            print(header)
            for name, var in variants.items():
                jit, args, kwargs = recorded_launch(var, q, k, v, causal)
                _, (signature, constexprs, attrs, options) = _bind(jit, args, kwargs, 90)
                try:
                    ck = triton.compile(ASTSource(jit, signature, constexprs, attrs), target=target,
                                        options=options.__dict__)
                except Exception as e:  # noqa: BLE001 - a variant that does not compile is the finding
                    msg = str(e).strip().splitlines()[-1][:160] if str(e).strip() else type(e).__name__
                    print(f"{name:12} does not compile: {msg}")
                    failed.append(f"S={seqlen} causal={causal} {name}: does not compile")
                    continue
                text = ck.asm["ptx"]
                use = resource_usage(ck.asm["cubin"])
                spill = use.get("STACK", 0) + use.get("LOCAL", 0)
                sass = sass_counts(ck.asm["cubin"])
                ex2 = len(re.findall(r"\bex2\.approx", text))
                fma = len(re.findall(r"\bfma\.rn\.(?:ftz\.)?f32\b", text))
                magic = (len(re.findall(r"\b(?:add|sub)\.(?:rn\.)?(?:ftz\.)?f32\s[^;]*0f4B400000", text)),
                         len(re.findall(r"\badd\.(?:rn\.)?(?:ftz\.)?f32\s[^;]*0fCB400000", text)))
                print(f"{name:12} {use['REG']:>4} {spill:>7} {ck.metadata.shared:>7} {ex2:>7} {fma:>7} "
                      f"{sass.get('MUFU.EX2', '?'):>8} {sass.get('FFMA', '?'):>5} {sass.get('BAR', '?'):>4}  "
                      f"{magic[0]} / {magic[1]}", flush=True)
                if spill:
                    failed.append(f"S={seqlen} causal={causal} {name}: {spill} B of spills")
    print("\nmagic add/sub: f32 adds or subtracts of 1.5 * 2**23 (0f4B400000) / adds of its negative (0fCB400000) "
          "in the PTX: both halves of the rounding trick survive the compiler where the counts match.")
    if failed:
        print("NOT CLEAN:\n  " + "\n  ".join(failed))
        sys.exit(1)
    print("every variant compiles for sm_90 with no spills")


# --------------------------------------------------------------------------------------------------
# OUT: a GPU
# --------------------------------------------------------------------------------------------------

GPU_SHAPES = [(4, 32, 32, 4096), (4, 32, 32, 1024), (1, 32, 8, 4096), (4, 32, 32, 8192), (4, 32, 32, 16384)]
BUDGET_S = 200.0  # past this, fewer reps; past SKIP_S, the remaining rows are skipped (the run stays under 4 minutes)
SKIP_S = 225.0


def gpu(out: Path) -> None:
    from autograder.specs.flash_attention import TOLERANCES
    from course.results import run_meta

    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    tol = TOLERANCES["bfloat16"]
    variants = build(VARIANTS + ["broken"])
    meta = run_meta(PROBE)
    meta.update(poly=[C1, C2, C3], poly_max_rel_error=1.01e-4, lazy_threshold_log2=LAZY_THRESHOLD,
                tolerance={"rtol": tol.rtol, "atol": tol.atol, "scale": tol.scale, "against": "cuDNN"})
    rows: list[dict] = []
    for b, hq, hkv, s in GPU_SHAPES:
        for causal in (False, True):
            elapsed = time.perf_counter() - start
            if elapsed > SKIP_S:
                print(f"{b}x{hq}/{hkv}x{s} causal={causal}: skipped, {elapsed:.0f} s gone", flush=True)
                continue
            row = gpu_row(variants, tol, b, hq, hkv, s, causal, 20 if elapsed < BUDGET_S else 8, not rows)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            rows.append(row)
            ratio = row["ratio_to_cudnn"]
            print(f"{b}x{hq}/{hkv}x{s} causal={causal} ({row['config']['block_m']}x{row['config']['block_n']}): "
                  f"cudnn {row['us']['cudnn']:.1f} us, {row['tflops']['cudnn']:.0f} TFLOP/s; vs cuDNN: "
                  + ", ".join(f"{n} {ratio[n]:.3f}" for n in ratio if n != "cudnn")
                  + f" [{time.perf_counter() - start:.0f} s]", flush=True)
            (out / f"{PROBE}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"wrote {out / (PROBE + '.json')} ({time.perf_counter() - start:.0f} s)")
    print_table(rows, meta)


def gpu_row(variants: dict[str, Variant], tol, b: int, hq: int, hkv: int, s: int, causal: bool, reps: int,
            with_broken: bool, d: int = 128, dev: str = "cuda", backend: str = "CUDNN_ATTENTION") -> dict:
    """One shape: every variant checked against cuDNN (and the first head against float64), the good ones timed.
    (d, dev and backend other than the defaults: a dry run of this code on the CPU.)"""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from autograder.timing import median, time_interleaved
    from course.comparison import compare

    dev = torch.device(dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    backend = getattr(SDPBackend, backend)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    gen = torch.Generator(device=dev).manual_seed(1000 * s + 10 * hkv + causal)
    q = torch.randn(b, hq, s, d, device=dev, dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(b, hkv, s, d, device=dev, dtype=torch.bfloat16, generator=gen) for _ in range(2))
    gqa, kv_repeated = hq != hkv, False
    with sdpa_kernel(backend):
        try:
            ref = sdpa(q, k, v, is_causal=causal, enable_gqa=gqa)
            kc, vc = k, v
        except RuntimeError as e:  # a cuDNN without grouped heads: K and V repeated for it, outside the timing
            print(f"cuDNN with enable_gqa failed ({str(e)[:80]}); K and V repeated for it", flush=True)
            kc, vc = (t.repeat_interleave(hq // hkv, 1) for t in (k, v))
            ref = sdpa(q, kc, vc, is_causal=causal)
            kv_repeated, gqa = True, False
    sync()
    ref64 = ref.double()
    exact = reference(q[:1, :1], k[:1, :1], v[:1, :1], causal)  # float64, the first head
    cfg = fa.forward_config(fa.device_of(q), d, q.dtype, causal, fa.length_class(s, s))
    errors: dict[str, object] = {}
    exact_errors = {"cudnn": compare("cudnn", ref[:1, :1], exact, tol).max_error}
    good, outs = {}, {}
    for name in VARIANTS + (["broken"] if with_broken else []):  # broken: the first row shows the swap works
        var = variants[name]
        try:
            got = var(q, k, v, causal)
            sync()
        except Exception as e:  # noqa: BLE001 - a variant that does not run is reported, not fatal
            errors[name] = repr(e)[:200]
            print(f"{b}x{hq}/{hkv}x{s} causal={causal} {name}: failed to run: {errors[name]}", flush=True)
            continue
        verdict = compare(name, got, ref64, tol)
        errors[name] = verdict.max_error
        exact_errors[name] = compare(name, got[:1, :1], exact, tol).max_error
        if name in ("solution", "rebuilt"):
            outs[name] = got
        if name == "broken":
            if verdict.ok:
                print("the deliberately broken variant PASSED: the launcher does not run the variant kernels; "
                      "nothing timed", flush=True)
                sys.exit(1)
            print(f"broken variant: {verdict.max_error:.1f}x the tolerance, as it must be (the variant kernel is "
                  "what runs)", flush=True)
        elif verdict.ok:
            good[name] = lambda i, var=var: var(q, k, v, causal)
        else:
            print(f"{b}x{hq}/{hkv}x{s} causal={causal} {name}: WRONG, not timed: {verdict.brief}", flush=True)
        del got
    same = "solution" in outs and "rebuilt" in outs and torch.equal(outs["solution"], outs["rebuilt"])
    del outs, ref64, ref
    fns = {"cudnn": lambda i: sdpa(q, kc, vc, is_causal=causal, enable_gqa=gqa)}
    fns.update({n: good[n] for n in TIMED if n in good})
    with sdpa_kernel(backend):
        times = time_interleaved(fns, 1, reps, dev)
    us = {n: median(t) * 1e3 for n, t in times.items()}
    flops = 4 * b * hq * s * s * d / (2 if causal else 1)
    return {"B": b, "Hq": hq, "Hkv": hkv, "S": s, "D": d, "causal": causal, "reps": reps,
            "config": {"block_m": cfg.block_m, "block_n": cfg.block_n, "num_warps": cfg.num_warps,
                       "num_stages": cfg.num_stages, "tma": cfg.tma},
            "us": us, "tflops": {n: flops / t / 1e6 for n, t in us.items()},
            "ratio_to_cudnn": {n: us["cudnn"] / t for n, t in us.items()},
            "error_vs_cudnn": errors, "error_vs_float64_head0": exact_errors,
            "rebuilt_bitwise_equal_to_solution": same, "cudnn_kv_repeated": kv_repeated}


def print_table(rows: list[dict], meta: dict) -> None:
    names = ["solution"] + [n for n in TIMED if n != "solution"]
    print(f"\n{meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}: bf16, d = 128; "
          "cuDNN TFLOP/s, then each variant's time ratio to cuDNN (cuDNN's time over its own, higher is faster; - not "
          "timed)")
    head = f"{'B x Hq/Hkv x S':18} {'causal':6} {'cuDNN':>6} " + " ".join(f"{n:>11}" for n in names)
    print(head)
    for r in sorted(rows, key=lambda r: (r["Hkv"] != r["Hq"], r["S"], r["causal"])):
        cells = " ".join(f"{r['ratio_to_cudnn'][n]:>11.3f}" if n in r["ratio_to_cudnn"] else f"{'-':>11}" for n in names)
        print(f"{str(r['B']) + 'x' + str(r['Hq']) + '/' + str(r['Hkv']) + 'x' + str(r['S']):18} "
              f"{'yes' if r['causal'] else 'no':6} {r['tflops']['cudnn']:>6.0f} {cells}")


def main() -> None:
    if "--check" in sys.argv:
        check()
    elif "--ptx" in sys.argv:
        ptx()
    else:
        gpu(Path(sys.argv[1]))


if __name__ == "__main__":
    main()
