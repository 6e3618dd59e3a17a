"""W4A16 dot kernel variants (16-bit activations): decode nibbles straight into 16-bit floats."""
import os, sys, json, time
sys.path.insert(0, os.getcwd())
import torch, triton, triton.language as tl
import torch.nn.functional as F
from course.loader import load_kernels
qm = load_kernels("quant_matmul", "solutions")
_planes_to_k, _load_words, _finish_tile = qm._planes_to_k, qm._load_words, qm._finish_tile


@triton.jit
def _code16(v, DT: tl.constexpr):
    """v: int32 codes 0..15 -> DT (q - 8), exactly, from the bits: 0x6400 | v is fp16 1024 + v, 0x4300 | v bf16 128 + v."""
    if DT == tl.float16:
        return (v.to(tl.uint16) | 0x6400).to(tl.float16, bitcast=True) - 1032.0
    else:
        return (v.to(tl.uint16) | 0x4300).to(tl.bfloat16, bitcast=True) - 136.0


@triton.jit
def _dot16_kernel(x_ptr, w_ptr, s_ptr, y_ptr, part_ptr, lock_ptr, M, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
                  k_per_split, GROUP_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_W: tl.constexpr, EVEN_K: tl.constexpr, DOT_16BIT: tl.constexpr, PRECISION: tl.constexpr,
                  SPLIT: tl.constexpr, VARIANT: tl.constexpr):
    BLOCK_K: tl.constexpr = 8 * BLOCK_W
    DT: tl.constexpr = x_ptr.dtype.element_ty
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    n_mask = offs_n < N
    m_mask = offs_m < M
    rows = tl.minimum(offs_n, N - 1).to(tl.int64)
    w_rows = w_ptr + rows[:, None] * stride_wn
    s_rows = s_ptr + rows * stride_sn
    x_cols = x_ptr + tl.minimum(offs_m, M - 1).to(tl.int64)[None, :] * stride_xm
    k_start = pid_k * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        words = _load_words(w_rows, k0, k_end, BLOCK_W, EVEN_K)
        if VARIANT == 1:  # eight planes, joined into k order
            w = _planes_to_k(_code16(words & 0xF, DT), _code16((words >> 4) & 0xF, DT), _code16((words >> 8) & 0xF, DT),
                             _code16((words >> 12) & 0xF, DT), _code16((words >> 16) & 0xF, DT), _code16((words >> 20) & 0xF, DT),
                             _code16((words >> 24) & 0xF, DT), _code16((words >> 28) & 0xF, DT))
        elif VARIANT == 2:  # shifts broadcast over a new last axis, reshaped into k order
            sh = 4 * tl.arange(0, 8)
            v = (words[:, :, None] >> sh[None, None, :]) & 0xF
            w = tl.reshape(_code16(v, DT), (BLOCK_N, BLOCK_K))
        else:  # planes side by side (column i * BLOCK_W + j holds k = 8j + i): x is gathered in that order instead
            j5 = tl.join(tl.join(tl.join(_code16(words & 0xF, DT), _code16((words >> 16) & 0xF, DT)),
                                 tl.join(_code16((words >> 8) & 0xF, DT), _code16((words >> 24) & 0xF, DT))),
                         tl.join(tl.join(_code16((words >> 4) & 0xF, DT), _code16((words >> 20) & 0xF, DT)),
                                 tl.join(_code16((words >> 12) & 0xF, DT), _code16((words >> 28) & 0xF, DT))))
            w = tl.reshape(tl.permute(j5, (0, 2, 3, 4, 1)), (BLOCK_N, BLOCK_K))
        k = k0 + tl.arange(0, BLOCK_K)
        if VARIANT == 3:
            c = tl.arange(0, BLOCK_K)
            k = k0 + 8 * (c % BLOCK_W) + c // BLOCK_W
        if EVEN_K:
            xt = tl.load(x_cols + k[:, None])
        else:
            xt = tl.load(x_cols + k[:, None], mask=(k < k_end)[:, None], other=0.0)
        if GROUP_SIZE % BLOCK_K == 0:
            s = tl.load(s_rows + k0 // GROUP_SIZE).to(tl.float32)
            acc += tl.dot(w, xt) * s[:, None]
        else:
            s = tl.load(s_rows[:, None] + (k // GROUP_SIZE)[None, :], mask=(k < k_end)[None, :], other=0.0)
            acc = tl.dot(w * s, xt, acc)
    mn_mask = n_mask[:, None] & m_mask[None, :]
    tile_id = pid_m * tl.num_programs(0) + pid_n
    _finish_tile(acc, y_ptr + offs_m[None, :] * stride_ym + offs_n[:, None],
                 part_ptr + offs_m[None, :] * N + offs_n[:, None], mn_mask, lock_ptr + tile_id, M * N, SPLIT)


orig = qm._w4a16_dot_kernel
def with_variant(v):
    if v == 0:
        return orig
    class K:
        def __getitem__(self, grid):
            return lambda *a, **m: _dot16_kernel[grid](*a, VARIANT=v, **m)
    return K()

def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3

torch.manual_seed(0)
rows = []
shapes = [(m, 4096, 14336) for m in (2, 4, 8, 16, 32, 64)] + [(16, 14336, 4096), (16, 4096, 4096), (64, 4096, 4096), (16, 4096, 6144)]
for dt in (torch.float16, torch.bfloat16):
    for (m, k, n) in shapes:
        if dt == torch.bfloat16 and m not in (16, 64):
            continue
        x = torch.randn(m, k, device="cuda", dtype=dt)
        wp = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device="cuda")
        s = (torch.rand(n, k // 128, device="cuda") * 0.02 + 0.001).to(dt)
        dense = torch.randn(n, k, device="cuda", dtype=dt)
        words = wp.view(torch.int32)
        cfg = qm.pick_config(4, m, x)
        ref = None
        res = {"M": m, "K": k, "N": n, "dtype": str(dt)[6:], "cfg": str(cfg)}
        for v in (0, 1, 2, 3):
            qm._w4a16_dot_kernel = with_variant(v)
            try:
                y = qm.w4a16_launch(x, words, s, 128, cfg)
                torch.cuda.synchronize()
                if ref is None:
                    ref = y.float()
                err = (y.float() - ref).abs().max().item()
                t = bench(lambda: qm.w4a16_launch(x, words, s, 128, cfg))
                res[f"v{v}_us"], res[f"v{v}_err"] = round(t, 2), err
            except Exception as e:
                res[f"v{v}_us"], res[f"v{v}_err"] = None, repr(e)[:200]
            qm._w4a16_dot_kernel = orig
        res["cublas_us"] = round(bench(lambda: F.linear(x, dense)), 2)
        rows.append(res)
        print(json.dumps(res), flush=True)
out = os.environ.get("OUT", "/tmp")
json.dump(rows, open(f"{out}/w4_var.json", "w"), indent=1)
print("\n| M | K | N | dtype | current | v1 planes16 | v2 bcast16 | v3 permute | cuBLAS | errs |")
for r in rows:
    print(f"| {r['M']} | {r['K']} | {r['N']} | {r['dtype']} | {r['v0_us']} | {r['v1_us']} | {r['v2_us']} | {r['v3_us']} | {r['cublas_us']} | {r['v1_err']} {r['v2_err']} {r['v3_err']} |")
