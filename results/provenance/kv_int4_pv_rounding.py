"""flash_attention.kv_int4 (bonus): how close the reference kernel's arithmetic comes to the grader's tolerance,
emulated on the CPU (no Triton): the kernel folds V's per-token scale into the probabilities and rounds that product
to bfloat16 before its dot with the 4-bit codes (`pv = (p * v_scale).to(q.dtype)`), then adds V's zero term in
float32. On the speed case's inputs (8 x 32/8 heads, 16384 keys, made by the grader's own generator) the output is
computed exactly but for that rounding, and in three alternatives, and checked with the grader's bfloat16 tolerance
(2.5e-2 of the larger of the row's and the tensor's mean |ref|, plus 2.5e-2 |ref|). On an H100 on 2026-12-06 one of
five gradings failed this part on one element of one timed call (results/h100/stability_flash_attention_2026-12-06.md).
    python results/provenance/kv_int4_pv_rounding.py N_CALLS

Its output for 20 calls (seeds 1000-1019) on 2026-12-06, in 261 s on two CPU cores, the worst error over the
tolerance of any element: bf16 pv, the kernel until then, 0.841; bf16 pv with the codes centred (c - 8, the zero
moved by 8 scales), the kernel since, 0.353; a high and a low bf16 part of pv, 0.001; float16 pv, 0.192. No
element was outside the tolerance in these 20 calls (the GPU failure was one element in about 250 calls)."""
import sys, time, torch
sys.path.insert(0, '.')
from autograder.specs import flash_attention as S
from course.kivi import dequantize_kivi, unpack_codes
torch.set_num_threads(2)
params = {**S.DECODE_SPEED, "seq_k": 16384}
def check(o, ref):
    mean_row = ref.abs().mean(-1, keepdim=True)
    scale = torch.maximum(mean_row, ref.abs().mean().expand_as(mean_row))
    tol = 2.5e-2 * scale + 2.5e-2 * ref.abs()
    return (o - ref).abs() > tol, ((o - ref).abs() / tol).max().item()
fails = {"bf16 pv (solution)": 0, "hi+lo pv": 0, "fp16 pv": 0, "bf16 pv, codes - 8": 0}
worst = {k: 0.0 for k in fails}
t0 = time.time()
N = int(sys.argv[1])
for seed in range(N):
    g = torch.Generator().manual_seed(1000 + seed)
    inp = S.make_kv_int4_inputs(params, g, torch.device("cpu"))
    k, v = dequantize_kivi(inp, S.KV_INT4_GROUP)
    q = inp["q"].double()  # (B, Hq, 1, D)
    B, Hq, _, D = q.shape; Hkv = k.shape[1]; G = Hq // Hkv
    qg = q.view(B, Hkv, G, D)
    s = torch.einsum("bhgd,bhnd->bhgn", qg, k) * S.scale_of(params)
    p = torch.softmax(s, -1)  # (B, Hkv, G, N), exact
    ref = torch.einsum("bhgn,bhnd->bhgd", p, v)
    codes = unpack_codes(inp["v_packed"]).double()  # (B, Hkv, N, D)
    vs, vz = inp["v_scale"].double(), inp["v_zero"].double()  # (B, Hkv, N)
    ps = p * vs[:, :, None, :]
    zterm = torch.einsum("bhgn,bhn->bhg", p, vz)[..., None]
    variants = {
        "bf16 pv (solution)": torch.einsum("bhgn,bhnd->bhgd", ps.float().bfloat16().double(), codes) + zterm,
        "fp16 pv": torch.einsum("bhgn,bhnd->bhgd", ps.float().half().double(), codes) + zterm,
    }
    hi = ps.float().bfloat16().double(); lo = (ps - hi).float().bfloat16().double()
    variants["hi+lo pv"] = torch.einsum("bhgn,bhnd->bhgd", hi + lo, codes) + zterm
    variants["bf16 pv, codes - 8"] = torch.einsum("bhgn,bhnd->bhgd", ps.float().bfloat16().double(), codes - 8) + torch.einsum("bhgn,bhn->bhg", p, vz + 8 * vs)[..., None]
    for name, o in variants.items():
        bad, w = check(o, ref)
        fails[name] += int(bad.sum()); worst[name] = max(worst[name], w)
print(f"{N} calls in {time.time() - t0:.0f} s")
for k in fails: print(f"{k}: {fails[k]} elements outside the tolerance, worst error / tolerance {worst[k]:.3f}")
