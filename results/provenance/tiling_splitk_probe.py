"""What split-K would add to module 04's last-wave split: a measured probe, not course code.

The launcher's tail programs each walk all of K (lecture 04, section 6). Here the tail rows (or, at 1536^3, the
whole product) are computed by a split-K variant of the solution's kernel instead: program (t, s) multiplies
tile t over the s-th of S slices of K into a float32 workspace (S, rows, N), and a second kernel sums the S
partials and rounds once to the output dtype. The rows of whole waves still go through the solution's kernel
with the first tile. Each variant is checked against a float32 product before it is timed (do_bench median,
L2 cleared before each call), beside cuBLAS and the solution as it launches.

    python results/provenance/tiling_splitk_probe.py                     # on a GPU, writes $OUT/tiling_splitk_probe.json
    TRITON_INTERPRET=1 python results/provenance/tiling_splitk_probe.py --dry   # the same code on tiny shapes
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from course.device import device_of  # noqa: E402
from solutions.tiling import kernels as tk  # noqa: E402


@triton.jit
def _splitk_kernel(a_ptr, b_ptr, ws_ptr, M, N, K, k_per_split, stride_am, stride_bk,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Program (p, s): tile p of the (M, N) partial product over k in [s * k_per_split, (s + 1) * k_per_split),
    in float32, into ws[s] (S, M, N)."""
    pid, s = tl.program_id(0), tl.program_id(1)
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_m
    pid_n = (pid % in_group) // group_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k0 = tl.multiple_of(s * k_per_split, BLOCK_K)  # k_per_split is a multiple of BLOCK_K
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + (k0 + offs_k)[None, :]
    b_ptrs = b_ptr + (k0 + offs_k).to(tl.int64)[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(tl.minimum(K - k0, k_per_split), BLOCK_K)):
        k_left = K - k0 - k * BLOCK_K  # masks as the solution's: only the last step of the last slice is partial
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    ws = ws_ptr + s.to(tl.int64) * M * N + offs_m.to(tl.int64)[:, None] * N + offs_n[None, :]
    tl.store(ws, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _sum_splits_kernel(ws_ptr, c_ptr, MN, S: tl.constexpr, BLOCK: tl.constexpr):
    """c = sum over s of ws[s], rounded once to c's dtype; c and ws[s] are (M, N) with contiguous rows."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(S):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def splitk(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, ws: torch.Tensor, cfg: dict, splits: int) -> None:
    """c = a @ b through `splits` slices of K (ws: at least splits * M * N float32)."""
    m, k = a.shape
    n = b.shape[1]
    per = triton.cdiv(triton.cdiv(k, splits), cfg["block_k"]) * cfg["block_k"]
    grid = (triton.cdiv(m, cfg["block_m"]) * triton.cdiv(n, cfg["block_n"]), triton.cdiv(k, per))
    _splitk_kernel[grid](a, b, ws, m, n, k, per, a.stride(0), b.stride(0), BLOCK_M=cfg["block_m"], BLOCK_N=cfg["block_n"],
                         BLOCK_K=cfg["block_k"], GROUP_M=cfg["group_m"], num_stages=cfg["num_stages"], num_warps=cfg["num_warps"])  # fmt: skip
    block = 1024
    _sum_splits_kernel[(triton.cdiv(m * n, block),)](ws, c, m * n, S=grid[1], BLOCK=block, num_warps=4)


def tile(bm: int, bn: int, bk: int, stages: int, warps: int) -> dict:
    return {"block_m": bm, "block_n": bn, "block_k": bk, "group_m": 8, "num_stages": stages, "num_warps": warps}


def main() -> None:
    dry = "--dry" in sys.argv
    dev = "cpu" if dry else "cuda"
    dtype = torch.float32 if dry else torch.bfloat16
    device = device_of(torch.empty(1, device=dev))
    big = tile(32, 32, 16, 3, 4) if dry else tk.matmul_config(device, dtype)[0]
    tiles = {"128x256": big} if dry else {"128x256": big, "128x128": tile(128, 128, 64, 3, 4), "64x128": tile(64, 128, 64, 4, 4)}
    shapes = [(96, 64, 96), (64, 70, 64)] if dry else [(1536, 1536, 1536), (1024, 1024, 1024), (2304, 2304, 2304),
                                                        (3072, 3072, 3072), (5120, 5120, 5120), (1536, 4096, 1536)]  # fmt: skip
    rows_out = []
    for m, k, n in shapes:
        g = torch.Generator(device=dev).manual_seed(m + n)
        a = torch.randn(m, k, device=dev, dtype=dtype, generator=g)
        b = torch.randn(k, n, device=dev, dtype=dtype, generator=g)
        c = torch.empty(m, n, device=dev, dtype=dtype)
        ws = torch.empty(8 * m * n, device=dev, dtype=torch.float32)
        ref = a.float() @ b.float()
        scale = ref.abs().mean().item()

        def bench(fn) -> float:
            c.fill_(float("nan"))
            fn()
            err = ((c.float() - ref).abs().max() / scale).item()
            assert err < (1e-5 if dry else 3e-2), err
            return float("nan") if dry else triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3

        t_sol = bench(lambda: tk._launch(a, b, c))
        t_cublas = float("nan") if dry else triton.testing.do_bench(lambda: torch.matmul(a, b), warmup=25, rep=100,
                                                                    return_mode="median") * 1e3  # fmt: skip
        # the rows of whole waves of the first tile, as tail_split would keep them (0 at 1536^3: no whole wave)
        ct = triton.cdiv(n, big["block_n"])
        whole = (triton.cdiv(m, big["block_m"]) * ct // device.sms * device.sms) // ct * big["block_m"]
        variants = {}
        if whole and not dry:  # the two launches of the solution's split, each alone (the other rows left unwritten)
            tail_cfg = tk.CONFIGS.pick(device, "tail", "16-bit")
            parts = {"whole-wave rows alone": lambda: tk._launch_tile(a[:whole], b, c[:whole], big),
                     "tail rows alone (64x128)": lambda: tk._launch_tile(a[whole:], b, c[whole:], tail_cfg)}
            for label, fn in parts.items():
                variants[label] = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3
        for name, cfg in tiles.items():
            for s in (1, 2, 3, 4, 6, 8):
                if s == 1 and name == "128x256":
                    continue

                def run(cfg=cfg, s=s) -> None:
                    if whole:
                        tk._launch_tile(a[:whole], b, c[:whole], big)
                    splitk(a[whole:], b, c[whole:], ws, cfg, s)

                variants[f"{whole} rows, then {name} split {s}"] = bench(run)
        best = min((v for v in variants if "alone" not in v), key=variants.get)
        alone = "; ".join(f"{v} {t:.1f}" for v, t in variants.items() if "alone" in v)
        rows_out.append({"shape": [m, k, n], "solution_us": t_sol, "cublas_us": t_cublas, "variants": variants})
        print(f"{m}x{k}x{n}: cuBLAS {t_cublas:.1f} solution {t_sol:.1f} ({t_cublas / t_sol:.2f}x) best split-K "
              f"{variants[best]:.1f} ({t_cublas / variants[best]:.2f}x; {best}) {alone}", flush=True)  # fmt: skip
    out = Path(os.environ.get("OUT", "."))
    info = {"gpu": "interpreter" if dry else torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__, "date": time.strftime("%Y-%m-%d")}  # fmt: skip
    if not dry:
        (out / "tiling_splitk_probe.json").write_text(json.dumps({**info, "rows": rows_out}, indent=1))


if __name__ == "__main__":
    main()
