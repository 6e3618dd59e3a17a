"""Decode attention (issue 22): does programmatic dependent launch (PDL) take the gap between the split and the
combine kernel out of the decode's time? The combine kernel is launched with `launch_pdl=True` and waits for the
split kernel's results with `gdc_wait` before it reads them; optionally the split kernel lets it launch as soon as
all of its own programs have started (`gdc_launch_dependents` first thing), so that the combine's programs wait on
their SMs instead of being launched after the split kernel ends. The kernels are the solution's, with those lines
added (source rewritten here, nothing else changed); outputs are checked bitwise against the solution's.

    python results/provenance/decode_pdl_probe.py OUT"""
import inspect, json, sys, textwrap
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
import triton
import triton.language as tl
from autograder.timing import median, time_interleaved
from course.launch import cdiv, next_power_of_2
from course.loader import load_kernels
from course.results import run_meta

fa = load_kernels("flash_attention", "solutions")


def variant(kernel, name: str, first_line: str):
    """The kernel's source with one line added before its body, compiled as a new kernel."""
    src = textwrap.dedent(inspect.getsource(kernel.fn))
    src = src.replace(f"def {kernel.fn.__name__}(", f"def {name}(", 1)
    head, body = src.split('"""', 2)[0:2], src.split('"""', 2)[2]
    src = '"""'.join(head) + '"""\n    ' + first_line + body
    src = src.replace("@triton.jit\n", "", 1)
    namespace = dict(vars(fa))
    namespace["tl"] = tl
    path = Path(f"/tmp/{name}.py")
    path.write_text("import triton\nimport triton.language as tl\n" + src)
    code = compile(path.read_text(), str(path), "exec")
    exec(code, namespace)
    return triton.jit(namespace[name])


split_trigger = variant(fa._attn_decode_split_kernel, "split_trigger", "tl.extra.cuda.gdc_launch_dependents()")
combine_wait = variant(fa._attn_decode_combine_kernel, "combine_wait", "tl.extra.cuda.gdc_wait()")


def decode(q, k, v, scale, split_kernel, pdl: bool):
    batch, n_heads_q, _, head_dim = q.shape
    n_heads_kv, seqlen_k = k.shape[1], k.shape[2]
    group = n_heads_q // n_heads_kv
    cfg, combine_elements = fa.decode_config(fa.device_of(q), q.dtype, seqlen_k, batch * n_heads_kv)
    n_splits = cdiv(seqlen_k, cfg.keys_per_split)
    o = torch.empty_like(q)
    lse = torch.empty((batch, n_heads_q, 1), dtype=torch.float32, device=q.device)
    o_part = torch.empty((batch * n_heads_q, n_splits, head_dim), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((batch * n_heads_q, n_splits), dtype=torch.float32, device=q.device)
    split_kernel[(n_splits, batch * n_heads_kv)](
        q, k, v, o_part, lse_part, seqlen_k, group, cfg.keys_per_split, scale * 1.4426950408889634,
        HEAD_DIM=head_dim, BLOCK_N=cfg.block_n, BLOCK_G=max(16, next_power_of_2(group)), DOT_PRECISION="tf32",
        num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    combine = combine_wait if pdl else fa._attn_decode_combine_kernel
    extra = {"launch_pdl": True} if pdl else {}
    combine[(batch * n_heads_q,)](o_part, lse_part, o, lse, n_splits, HEAD_DIM=head_dim,
                                  BLOCK_S=next_power_of_2(n_splits),
                                  num_warps=4 if head_dim * n_splits >= combine_elements else 1, **extra)
    return o


out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
dev = torch.device("cuda")
rows = []
for sk in (1024, 4096, 16384):
    torch.manual_seed(sk)
    q = torch.randn(8, 32, 1, 128, device=dev, dtype=torch.bfloat16)
    k, v = (torch.randn(8, 8, sk, 128, device=dev, dtype=torch.bfloat16) for _ in range(2))
    scale = 128 ** -0.5
    fns = {
        "solution": lambda i: fa.flash_attention(q, k, v),
        "same launches here": lambda i: decode(q, k, v, scale, fa._attn_decode_split_kernel, False),
        "PDL, combine waits": lambda i: decode(q, k, v, scale, fa._attn_decode_split_kernel, True),
        "PDL, split triggers early": lambda i: decode(q, k, v, scale, split_trigger, True),
        "SDPA": lambda i: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
    }
    ref = fns["solution"](0)
    same = {lab: bool(torch.equal(fn(0), ref)) for lab, fn in fns.items() if lab != "SDPA"}
    times = time_interleaved(fns, 1, 50, dev)
    us = {lab: median(t) * 1e3 for lab, t in times.items()}
    gb = 2 * 8 * 8 * sk * 128 * 2 / 1e9
    rows.append({"Sk": sk, "us": us, "bitwise_equal": same, "kv_gb": gb})
    print(f"Sk {sk}: " + ", ".join(f"{lab} {t:.1f}" for lab, t in us.items()) + f" us; equal {same}", flush=True)
(out / "decode_pdl_probe.json").write_text(json.dumps({"meta": run_meta("decode_pdl_probe"), "rows": rows}, indent=1))
