"""What Hopper's tensor-memory accelerator (TMA) gives module 04's matmul at 4096^3 and 8192^3: a measured probe.

Issue 22 asks the reference matmul for >= 1.0x cuBLAS at 4096^3 and 8192^3 (bf16 and fp16). The solution's pointer
kernel reaches 0.91-0.94x. Lecture 04, section 8, reports a first tensor-descriptor version of the same tiles at
0.97x (4096^3) and 1.00x (8192^3) on an H200 (`results/h200/tune_tiling.txt`). This probe times, beside the
solution and cuBLAS, in one run and with the grader's timer (`autograder.timing.time_interleaved`: the L2 flushed
before each call, new inputs every rep):

- "tma": one program per (BLOCK_M, BLOCK_N) tile of c, grouped order as the solution's, every tile of a, b and c
  moved by a descriptor made on the host (`TensorDescriptor.from_tensor`);
- "persistent": one program per SM (or two), each taking tiles p, p + P, p + 2P, ...; the tile loop and the K loop
  flattened into one (`tl.range(..., flatten=True)`), so that the pipeliner requests the next tile's first steps
  while this tile's last ones are multiplied and its epilogue runs;
- "persistent, split epilogue": the same, storing c in two (BLOCK_M, BLOCK_N / 2) halves, which halves the
  epilogue's shared-memory buffer and leaves room for a fourth stage of 128 x 256 x 64 tiles.

Each variant is checked against a float64 product before it is timed.

    python results/provenance/tiling_tma_probe.py                              # on a GPU: $OUT/tiling_tma_probe.json
    TRITON_INTERPRET=1 python results/provenance/tiling_tma_probe.py --dry     # the same code on tiny float32 shapes
    TRITON_INTERPRET=0 python results/provenance/tiling_tma_probe.py --smem    # each variant compiled for sm_90 here
    python results/provenance/tiling_tma_probe.py --more                       # around the shipped tile, 4096^3 and 8192^3
    python results/provenance/tiling_tma_probe.py --programs                   # the shipped tile with fewer programs
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
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


@triton.jit
def _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(row, column) of tile number `tile` in the grouped order of the solution's kernel."""
    in_group = GROUP_M * num_pid_n
    first_m = (tile // in_group) * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    return first_m + (tile % in_group) % rows, (tile % in_group) // rows


@triton.jit
def _mm_tma_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])  # (BLOCK_M, BLOCK_K); past K or M: zeros
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])  # (BLOCK_K, BLOCK_N)
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))  # rows and columns past the edge are dropped


@triton.jit
def _mm_tma_persistent_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                              BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr,
                              SPLIT_EPILOGUE: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    steps = tl.cdiv(K, BLOCK_K)
    tiles = num_pid_m * num_pid_n
    # The epilogue's tile number is counted apart from the loop's: with the loops flattened, the loop's own tile
    # number has moved on to the next tile's by the time the last step's product is stored.
    stored = tl.program_id(0) - PROGRAMS
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, steps):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        stored += PROGRAMS
        out_m, out_n = _tile_coords(stored, num_pid_m, num_pid_n, GROUP_M)
        if SPLIT_EPILOGUE:
            halves = tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)).permute(0, 2, 1)
            left, right = tl.split(halves)  # (BLOCK_M, BLOCK_N // 2) each
            c_desc.store([out_m * BLOCK_M, out_n * BLOCK_N], left.to(c_desc.dtype))
            c_desc.store([out_m * BLOCK_M, out_n * BLOCK_N + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([out_m * BLOCK_M, out_n * BLOCK_N], acc.to(c_desc.dtype))


def _alloc(size: int, alignment: int, stream: object) -> torch.Tensor:
    return torch.empty(size, dtype=torch.int8, device="cuda")


def launch(variant: dict, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, sms: int) -> None:
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = variant["block_m"], variant["block_n"], variant["block_k"]
    split = variant.get("split", False)
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
    b_desc = TensorDescriptor.from_tensor(b, [bk, bn])
    c_desc = TensorDescriptor.from_tensor(c, [bm, bn // 2 if split else bn])
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": variant.get("group_m", 8),
            "num_stages": variant["num_stages"], "num_warps": variant["num_warps"]}  # fmt: skip
    if variant["kind"] == "tma":
        _mm_tma_kernel[(tiles,)](a_desc, b_desc, c_desc, m, n, k, **meta)
    else:
        programs = min(tiles, variant.get("programs", sms * variant.get("per_sm", 1)))
        _mm_tma_persistent_kernel[(programs,)](a_desc, b_desc, c_desc, m, n, k, PROGRAMS=programs,
                                               SPLIT_EPILOGUE=split, **meta)  # fmt: skip


def variant(kind: str, bm: int, bn: int, bk: int, stages: int, warps: int, **more: object) -> dict:
    return {"kind": kind, "block_m": bm, "block_n": bn, "block_k": bk, "num_stages": stages, "num_warps": warps, **more}


def name_of(v: dict) -> str:
    extra = (" split" if v.get("split") else "") + (f" g{v['group_m']}" if "group_m" in v else "") + (f" x{v['per_sm']}/SM" if v.get("per_sm", 1) > 1 else "")
    extra += f" {v['programs']} programs" if "programs" in v else ""
    return f"{v['kind']} {v['block_m']}x{v['block_n']}x{v['block_k']} s{v['num_stages']} w{v['num_warps']}{extra}"


VARIANTS = [
    variant("tma", 128, 256, 64, 3, 8),
    variant("tma", 128, 256, 64, 4, 8),
    variant("persistent", 128, 256, 64, 3, 8),
    variant("persistent", 128, 256, 64, 3, 8, split=True),
    variant("persistent", 128, 256, 64, 4, 8, split=True),
    variant("persistent", 128, 256, 64, 4, 8, split=True, group_m=4),
    variant("persistent", 128, 256, 64, 4, 8, split=True, group_m=16),
    variant("persistent", 128, 128, 64, 4, 8),
    variant("persistent", 256, 128, 64, 3, 8, split=True),
    variant("persistent", 256, 128, 64, 4, 8, split=True),
]
# --more: around the tile the bonus shipped with (the first), at the two sizes of issue 22's target.
MORE_VARIANTS = [
    variant("persistent", 128, 256, 64, 4, 8, split=True, group_m=16),
    variant("persistent", 128, 256, 64, 4, 8, split=True, group_m=32),
    variant("persistent", 128, 256, 64, 4, 8, split=True, group_m=8),
    variant("persistent", 128, 256, 128, 2, 8, split=True, group_m=16),
    variant("persistent", 128, 256, 64, 4, 8, split=True, group_m=16, programs=128),
    variant("persistent", 256, 128, 64, 4, 8, split=True, group_m=16),
]
# --programs: the shipped tile with fewer programs than SMs (128 ran 1-2% faster than 132 in the --more run).
PROGRAMS_VARIANTS = [variant("persistent", 128, 256, 64, 4, 8, split=True, group_m=16, programs=p)
                     for p in (132, 128, 124, 120, 112, 96)]
DRY_VARIANTS = [variant("tma", 32, 32, 16, 2, 4), variant("persistent", 32, 32, 16, 2, 4),
                variant("persistent", 32, 32, 16, 2, 4, split=True)]


def smem_report() -> None:
    """Compile each variant for sm_90 (no GPU needed): shared memory and registers, or why it does not fit."""
    from triton.backends.compiler import GPUTarget

    target = GPUTarget("cuda", 90, 32)
    for dtype in ("bf16",):
        for v in VARIANTS:
            split = v.get("split", False)
            desc = lambda bm, bn: f"tensordesc<{dtype}[{bm}, {bn}]>"  # noqa: E731
            kernel = _mm_tma_kernel if v["kind"] == "tma" else _mm_tma_persistent_kernel
            sig = {"a_desc": desc(v["block_m"], v["block_k"]), "b_desc": desc(v["block_k"], v["block_n"]),
                   "c_desc": desc(v["block_m"], v["block_n"] // 2 if split else v["block_n"]),
                   "M": "i32", "N": "i32", "K": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
                   "BLOCK_K": "constexpr", "GROUP_M": "constexpr"}  # fmt: skip
            consts = {"BLOCK_M": v["block_m"], "BLOCK_N": v["block_n"], "BLOCK_K": v["block_k"], "GROUP_M": 8}
            if kernel is _mm_tma_persistent_kernel:
                sig.update(PROGRAMS="constexpr", SPLIT_EPILOGUE="constexpr")
                consts.update(PROGRAMS=132, SPLIT_EPILOGUE=split)
            src = triton.compiler.ASTSource(fn=kernel, signature=sig, constexprs=consts)
            try:
                ck = triton.compile(src, target=target, options={"num_warps": v["num_warps"], "num_stages": v["num_stages"]})
                print(f"{name_of(v)}: shared {ck.metadata.shared} B, registers {ck.n_regs if hasattr(ck, 'n_regs') else '?'}")
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{name_of(v)}: does not compile: {str(e).splitlines()[0][:160]}")


def main() -> None:
    if "--smem" in sys.argv:
        smem_report()
        return
    dry = "--dry" in sys.argv
    dev = "cpu" if dry else "cuda"
    if not dry:
        triton.set_allocator(_alloc)
    dtypes = [torch.float32] if dry else [torch.bfloat16, torch.float16]
    more = "--more" in sys.argv or "--programs" in sys.argv
    variants = DRY_VARIANTS if dry else PROGRAMS_VARIANTS if "--programs" in sys.argv else MORE_VARIANTS if more else VARIANTS
    shapes = [(96, 64, 80), (70, 52, 92)] if dry else [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 14336),
                                                        (3072, 4096, 4096)] if "--programs" in sys.argv else [
        (4096, 4096, 4096), (8192, 8192, 8192)] if more else [
        (4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3072, 3072, 3072), (4096, 4096, 14336),
        (4096, 14336, 4096)]
    sms = 3 if dry else torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    if not dry:
        from autograder import timing
        from solutions.tiling import kernels as tk
    for dtype in dtypes:
        for m, k, n in shapes:
            g = torch.Generator(device=dev).manual_seed(m * 7 + k * 3 + n)
            pool = 2 if dry else 3
            a_s = [torch.randn(m, k, device=dev, dtype=dtype, generator=g) for _ in range(pool)]
            b_s = [torch.randn(k, n, device=dev, dtype=dtype, generator=g) for _ in range(pool)]
            c = torch.empty(m, n, device=dev, dtype=dtype)
            ref = a_s[0].double() @ b_s[0].double()
            scale = ref.abs().mean().item()
            fns = {}
            errors = {}
            for v in variants:
                c.fill_(float("nan"))
                try:
                    launch(v, a_s[0], b_s[0], c, sms)
                except Exception as e:  # noqa: BLE001 - a variant that does not fit this GPU is reported, not timed
                    errors[name_of(v)] = f"failed: {str(e).splitlines()[0][:200]}"
                    continue
                err = ((c.double() - ref).abs().max() / scale).item()
                errors[name_of(v)] = err
                # Within the output's rounding (2u of each element) plus 1e-3 of the mean for the float32 sums:
                # a tile stored in the wrong place or a step skipped is off by the whole mean.
                u = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}.get(dtype, 2.0**-20)
                if not bool(((c.double() - ref).abs() <= 2 * u * ref.abs() + 1e-3 * scale).all()):
                    errors[name_of(v)] = f"wrong: max|err|/mean|c| {err:.3g}"
                    continue
                fns[name_of(v)] = lambda i, v=v: launch(v, a_s[i], b_s[i], c, sms)
            if dry:
                print(f"{m}x{k}x{n}: {errors}")
                assert all(isinstance(e, float) and e < 1e-5 for e in errors.values()), errors
                continue
            fns["solution"] = lambda i: tk._launch(a_s[i], b_s[i], c)
            fns["cuBLAS"] = lambda i: torch.matmul(a_s[i], b_s[i])
            times = timing.time_interleaved(fns, pool, 40 if more else 20, torch.device("cuda"))
            us = {name: timing.median(t) * 1e3 for name, t in times.items()}
            flops = 2.0 * m * n * k
            row = {"dtype": str(dtype).split(".")[-1], "shape": [m, k, n], "us": us,
                   "tflops": {name: flops / t / 1e6 for name, t in us.items()}, "max_err_over_mean": errors}  # fmt: skip
            rows.append(row)
            best = min((x for x in us if x not in ("solution", "cuBLAS")), key=us.get, default="solution")
            print(f"{row['dtype']} {m}x{k}x{n}: cuBLAS {us['cuBLAS']:.1f} us, solution {us['cuBLAS'] / us['solution']:.3f}x, "
                  f"best {best} {us['cuBLAS'] / us[best]:.3f}x; not timed: "
                  f"{ {x: e for x, e in errors.items() if isinstance(e, str)} }", flush=True)  # fmt: skip
    if dry:
        print("dry run: every variant correct")
        return
    out = Path(os.environ.get("OUT", "."))
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/tiling_tma_probe.py " + " ".join(sys.argv[1:])}  # fmt: skip
    tag = "_programs" if "--programs" in sys.argv else "_more" if more else ""
    (out / f"tiling_tma_probe{tag}.json").write_text(json.dumps({**info, "rows": rows}, indent=1))
    print("\n| shape | dtype | cuBLAS us | solution | " + " | ".join(name_of(v) for v in variants) + " |")
    for r in rows:
        cb = r["us"]["cuBLAS"]
        cells = [f"{cb / r['us'][name_of(v)]:.3f}" if name_of(v) in r["us"] else "-" for v in variants]
        print(f"| {'x'.join(map(str, r['shape']))} | {r['dtype']} | {cb:.1f} | {cb / r['us']['solution']:.3f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
