"""Flash attention backward with each step's products in another order (issue 20's training step, issue 22): can the
order alone let the tensor cores and the exponentials overlap more?

In the solution's dK/dV step (`_attn_bwd_dkdv_inner`) the products run S^T = K Q^T, then P^T and dV += P^T dO, then
dP^T = V dO^T, then dS^T and dK += dS^T Q. Triton's sm_90 code waits for every product that is not an accumulator
right after issuing it (`wgmma.wait_group 0`, which waits for all products in flight) and leaves an accumulator's
product in flight until the accumulator's next use (--ptx). Variants: dkdv_order issues dP^T right after S^T, so
that dV's product stays in flight while dS is made (the price: S^T and dP^T are waited for one at a time, where the
solution's dP^T shares its wait with dV); dq_order does the same in the dQ step (`_attn_bwd_dq_inner`, dP with S);
both_order both. Everything else (tiles, warps, stages, the grid, the grouped-query split, the other kernels) is the solution's:
each variant is the solution's source with those lines moved, in a module of its own whose namespace starts as a
copy of the solution module's, launched by the solution's own `attention_backward` bound to it. "rebuilt" is the
solution's source through that path (bitwise equal to the solution under --check), "broken" a deliberately wrong
one (dV doubled on unmasked steps) that must fail.

    python results/provenance/flash_bwd_order_probe.py --check   # on the CPU (interpreter): every variant's grads
    python results/provenance/flash_bwd_order_probe.py --ptx     # on the CPU: sm_90 code, registers, the waits
    python results/provenance/flash_bwd_order_probe.py OUT       # on a GPU: checked, then timed beside cuDNN

GPU timing: the grader's timer (`autograder.timing.time_interleaved`, L2 flushed, order alternated), median of 20,
bf16, d = 128; cuDNN's backward through SDPA (autograd.grad of a kept graph). Each variant's gradients are first
compared with float32 autograd through SDPA's math path and must be within 1.5x the solution's error.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import sys
import tempfile
import types
from pathlib import Path

if "--ptx" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "0"  # Triton's compiler, not its interpreter, although there is no GPU
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import course.env  # noqa: E402,F401  (the interpreter when there is no GPU and --ptx is not asked, before triton)
import torch  # noqa: E402
import triton  # noqa: E402

from solutions.flash_attention import kernels as fa  # noqa: E402

DKDV_S = "        s_t = tl.dot(k, tl.trans(q), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)"
DKDV_DP = "        dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)  # (BLOCK_N, BLOCK_M)"
DQ_S = "        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N)"
DQ_DP = "        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N)"
DV = "        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=DOT_PRECISION)"

VARIANTS = {"rebuilt": (False, False), "dkdv_order": (True, False), "dq_order": (False, True), "both_order": (True, True)}
TIMED = ["solution", "dkdv_order", "dq_order", "both_order"]


def _moved(src: str, first: str, second: str) -> str:
    """src with the line `second` moved to right after the line `first`."""
    lines = src.splitlines()
    assert lines.count(first) == 1 and lines.count(second) == 1, "the solution's lines are not where they were"
    lines.remove(second)
    lines.insert(lines.index(first) + 1, second)
    return "\n".join(lines) + "\n"


def source(name: str) -> str:
    """The four backward kernels' source for variant `name` (its inner loops rewritten)."""
    dkdv = inspect.getsource(fa._attn_bwd_dkdv_inner.fn)
    dq = inspect.getsource(fa._attn_bwd_dq_inner.fn)
    if name == "broken":  # dV doubled on unmasked steps
        assert dkdv.count(DV) == 1
        dkdv = dkdv.replace(DV, DV + "\n        if not MASK_Q and not MASK_CAUSAL:\n            dv = dv + dv")
    else:
        order_dkdv, order_dq = VARIANTS[name]
        if order_dkdv:
            dkdv = _moved(dkdv, DKDV_S, DKDV_DP)
        if order_dq:
            dq = _moved(dq, DQ_S, DQ_DP)
    kernels = [inspect.getsource(fa._attn_bwd_dkdv_kernel.fn), inspect.getsource(fa._attn_bwd_dq_kernel.fn)]
    return "import triton\nimport triton.language as tl\n\n\n" + "\n\n".join([dkdv, *kernels[:1], dq, kernels[1]])


_TMP = Path(tempfile.mkdtemp(prefix="flash_bwd_order_probe_"))


class Variant:
    """A variant's module (the solution module's namespace, its backward kernels defined anew) and the solution's
    backward launcher bound to it."""

    def __init__(self, name: str, device_of=None) -> None:
        self.name = name
        if name == "solution":
            ns = {k: v for k, v in vars(fa).items() if not k.startswith("__")}
        else:
            path = _TMP / f"flash_bwd_{name}.py"
            path.write_text(source(name))  # a real file: triton.jit reads the source through inspect
            modname = f"_flash_bwd_order_{name}"
            spec = importlib.util.spec_from_file_location(modname, path)
            module = importlib.util.module_from_spec(spec)
            module.__dict__.update({k: v for k, v in vars(fa).items() if not k.startswith("__")})
            sys.modules[modname] = module
            spec.loader.exec_module(module)
            assert module._attn_bwd_dkdv_kernel is not fa._attn_bwd_dkdv_kernel
            ns = module.__dict__
        if device_of is not None:
            ns["device_of"] = device_of
        self.ns = ns
        self.backward = types.FunctionType(fa.attention_backward.__code__, ns, "attention_backward",
                                           fa.attention_backward.__defaults__, fa.attention_backward.__closure__)


def build(names: list[str], device_of=None) -> dict[str, Variant]:
    return {n: Variant(n, device_of) for n in names}


def _inputs(b: int, hq: int, hkv: int, s: int, d: int, dtype: torch.dtype, device: str, seed: int = 0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return tuple(torch.randn(shape, generator=g).to(device=device, dtype=dtype)
                 for shape in ((b, hq, s, d), (b, hkv, s, d), (b, hkv, s, d), (b, hq, s, d)))  # fmt: skip


def _reference(q, k, v, do, causal: bool, dtype=torch.float32):
    qf, kf, vf = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    o = torch.nn.functional.scaled_dot_product_attention(qf, kf.repeat_interleave(group, 1),
                                                         vf.repeat_interleave(group, 1), is_causal=causal)  # fmt: skip
    o.backward(do.to(dtype))
    return qf.grad, kf.grad, vf.grad


def _errors(got, want) -> list[float]:
    """Largest error of dq, dk, dv relative to the largest magnitude of each."""
    return [float((a.double() - b.double()).abs().max() / b.double().abs().max()) for a, b in zip(got, want)]


def check() -> None:
    variants = build(["solution", *VARIANTS, "broken"])
    cases = [(1, 4, 2, 70, 32, False), (1, 4, 2, 70, 32, True), (2, 2, 1, 45, 32, True), (1, 2, 2, 200, 64, False),
             (1, 4, 1, 256, 64, True), (1, 2, 2, 130, 64, True)]
    for b, hq, hkv, s, d, causal in cases:
        q, k, v, do = _inputs(b, hq, hkv, s, d, torch.float32, "cpu")
        scale = d**-0.5
        o, lse = fa.attention_forward(q, k, v, causal, scale, True)
        want = _reference(q, k, v, do, causal, torch.float64)
        got = {n: var.backward(q, k, v, o, lse, do, causal, scale) for n, var in variants.items()}
        errs = {n: max(_errors(g, want)) for n, g in got.items()}
        assert all(torch.equal(a, b) for a, b in zip(got["rebuilt"], got["solution"])), "rebuilt differs"
        if not causal or s >= 128:  # short causal heads may have no unmasked step for "broken" to spoil
            assert errs["broken"] > 1e-2, "the broken variant passed: the variants are not what runs"
        for n in VARIANTS:
            assert errs[n] < 1e-4, (n, errs[n])
        print(f"{b}x{hq}/{hkv}x{s} d{d} causal={causal}: " + ", ".join(f"{n} {e:.1e}" for n, e in errs.items()),
              flush=True)
    print("every variant within 1e-4 of float64 (relative to the largest gradient); rebuilt bitwise equal to the "
          "solution; broken fails wherever a step is unmasked (the variant is what runs)")


def ptx() -> None:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    from autograder.diagnose import resource_usage
    from autograder.portability import _bind
    from course.device import KNOWN_GPUS
    from course.launch import plain_launches

    gpu_name = "NVIDIA H100 80GB HBM3"
    h100 = KNOWN_GPUS[gpu_name]
    variants = build(["solution", *[n for n in VARIANTS if n != "rebuilt"]], device_of=lambda t: h100)
    print(f"sm_90 compilations of the backward kernels as launched on an {gpu_name} (its configs.json entry), bf16, "
          "d = 128, 4 x 32/8 x 4096; the loop's products (mma: one wgmma group) and waits, in order")
    for causal in (False, True):
        q, k, v, do, o = (torch.empty(s, dtype=torch.bfloat16, device="meta")
                          for s in ((4, 32, 4096, 128), (4, 8, 4096, 128), (4, 8, 4096, 128), (4, 32, 4096, 128),
                                    (4, 32, 4096, 128)))  # fmt: skip
        lse = torch.empty(4, 32, 4096, dtype=torch.float32, device="meta")
        for name, var in variants.items():
            launches = []
            saved = JITFunction.run
            JITFunction.run = lambda self, *a, grid=None, warmup=False, **kw: launches.append((self, a, kw))
            try:
                with plain_launches():
                    var.backward(q, k, v, o, lse, do, causal, 128**-0.5)
            finally:
                JITFunction.run = saved
            for jit, args, kwargs in launches:
                kname = jit.fn.__name__
                if "dkdv_kernel" not in kname and "dq_kernel" not in kname:
                    continue
                _, (sig, cx, attrs, opts) = _bind(jit, args, kwargs, 90)
                ck = triton.compile(ASTSource(jit, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                                    options=opts.__dict__)
                use = resource_usage(ck.asm["cubin"])
                spill = use.get("STACK", 0) + use.get("LOCAL", 0)
                print(f"\ncausal={causal} {name:11} {kname:24} regs {use['REG']}, spill {spill} B, smem "
                      f"{ck.metadata.shared} B")
                print("  " + waits(ck.asm["ptx"]))


def waits(text: str) -> str:
    """The PTX's sequence of wgmma groups, waits and exponentials, runs collapsed, loop labels kept; the longest
    loop body only (the unmasked one)."""
    seq = []
    for m in re.finditer(r"wgmma\.mma_async|wgmma\.wait_group\.sync\.aligned (\d+)|ex2\.approx|\$L__BB\d+_\d+:", text):
        tok = "mma" if "mma_async" in m.group(0) else ("ex2" if "ex2" in m.group(0) else
                                                       (f"wait{m.group(1)}" if m.group(1) else "|"))
        if seq and seq[-1][0] == tok and tok in ("mma", "ex2"):
            seq[-1][1] += 1
        else:
            seq.append([tok, 1])
    bodies, cur = [], []
    for tok, n in seq:
        if tok == "|":
            bodies.append(cur)
            cur = []
        else:
            cur.append(tok if n == 1 or tok.startswith("wait") else f"{tok}x{n}")
    bodies.append(cur)
    return " ".join(max(bodies, key=lambda b: sum(1 for t in b if t.startswith("mma"))))


SHAPES = [(4, 32, 32, 4096, False), (4, 32, 32, 4096, True), (1, 32, 8, 2048, True), (4, 32, 8, 2048, True),
          (1, 32, 8, 4096, True)]


def gpu(out: Path) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from autograder.timing import median, time_interleaved
    from course.results import run_meta

    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    variants = build(["solution", *VARIANTS, "broken"])
    rows = []
    for i, (b, hq, hkv, s, causal) in enumerate(SHAPES):
        d = 128
        q, k, v, do = _inputs(b, hq, hkv, s, d, torch.bfloat16, "cuda")
        scale = d**-0.5
        o, lse = fa.attention_forward(q, k, v, causal, scale, True)
        want = _reference(q, k, v, do, causal)
        errs, fns = {}, {}
        for name, var in variants.items():
            if name == "broken" and i:
                continue
            try:
                got = var.backward(q, k, v, o, lse, do, causal, scale)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - a variant that does not compile or fit is reported
                errs[name] = str(e).splitlines()[0][:200]
                continue
            errs[name] = _errors(got, want)
            if name == "rebuilt":
                errs["rebuilt_bitwise_equal"] = all(torch.equal(a, b) for a, b in
                                                    zip(got, variants["solution"].backward(q, k, v, o, lse, do, causal, scale)))
            del got
            if name == "broken":
                assert max(errs[name]) > 1e-2, "the broken variant passed: the variants are not what runs"
                continue
            if name in TIMED and max(errs[name]) <= 1.5 * max(errs.get("solution", errs[name])) + 1e-3:
                fns[name] = lambda i, var=var: var.backward(q, k, v, o, lse, do, causal, scale)
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            res = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, enable_gqa=hq != hkv)
        fns["cuDNN"] = lambda i: torch.autograd.grad(res, (qg, kg, vg), do, retain_graph=True)
        times = time_interleaved(fns, 1, 20, dev)
        us = {n: median(t) * 1e3 for n, t in times.items()}
        flops = 2.5 * 4 * b * hq * s * s * d * (0.5 if causal else 1.0)
        rows.append({"B": b, "Hq": hq, "Hkv": hkv, "S": s, "D": d, "causal": causal, "us": us,
                     "tflops": {n: flops / t / 1e6 for n, t in us.items()}, "errors": errs})
        print(f"{b}x{hq}/{hkv}x{s} causal={causal}: " + ", ".join(f"{n} {t:.0f} us" for n, t in us.items()), flush=True)
        fns.clear()  # its closures hold this shape's tensors and cuDNN's graph
        torch.cuda.empty_cache()
        meta = run_meta("flash_bwd_order_probe")
        (out / "flash_bwd_order_probe.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print("\nbf16, d = 128, backward only; cuDNN TFLOP/s, then each variant's time ratio to the solution's (higher is "
          "faster) and the solution's to cuDNN's")
    print(f"{'B x Hq/Hkv x S':16} {'causal':6} {'cuDNN':>6} {'sol/cuDNN':>9} " + " ".join(f"{n:>11}" for n in TIMED[1:]))
    for r in rows:
        u = r["us"]
        print(f"{r['B']}x{r['Hq']}/{r['Hkv']}x{r['S']:<8} {'yes' if r['causal'] else 'no':6} {r['tflops']['cuDNN']:>6.0f} "
              f"{u['cuDNN'] / u['solution']:>9.3f} " + " ".join(f"{u['solution'] / u[n]:>11.3f}" if n in u else f"{'-':>11}"
                                                                 for n in TIMED[1:]))


if __name__ == "__main__":
    if "--check" in sys.argv:
        check()
    elif "--ptx" in sys.argv:
        ptx()
    else:
        gpu(Path(sys.argv[1]))
