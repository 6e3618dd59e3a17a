"""Module 04's TMA bonus with tiles that are not powers of two: 192 x 128, 128 x 192, 192 x 96 and 192 x 192.

Lecture 04 ends its TMA section on the gap at 1536^3 (0.70-0.72x cuBLAS): no power-of-two tile fills the SMs
there. 72 tiles of 128 x 256 fill 55% of them in one round, 144 of 128 x 128 need two rounds. cuBLAS runs
192 x 96 tiles, 128 of them, one round with 97% of the SMs busy; at 3072^3 it runs 192 x 192 (256 tiles, two
rounds). A Triton block's sides are powers of two, so this probe writes such a tile as up to four blocks:
rows BM0 + BM1 and columns BN0 + BN1, each with an accumulator of its own and its own descriptors. Each step
along K loads one or two A blocks and one or two B blocks and issues one product per pair. Every block is at
least 64 rows, so every product stays a wgmma on sm_90.

The kernel is otherwise the solution's `_matmul_tma_kernel`: persistent, grouped order, one flattened loop.

    python results/provenance/tiling_tma_wide_probe.py --check    # CPU: TRITON_INTERPRET=1, every tile's split
    python results/provenance/tiling_tma_wide_probe.py --sm90     # CPU: sm_90 compilations (registers, spills, smem)
    python results/provenance/tiling_tma_wide_probe.py            # GPU: $OUT/tiling_tma_wide_probe.json
    python results/provenance/tiling_tma_wide_probe.py --facts    # GPU: the grader's diagnosis names the serialized one
    python results/provenance/tiling_tma_wide_probe.py --table results/h100/tiling_tma_wide_probe*.json
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

if "--check" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"
elif "--sm90" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "0"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


@triton.jit
def _wide_tma_kernel(
    a0_desc,  # over a (M, K) in (BM0, BK) blocks: the tile's first rows
    a1_desc,  # over a in (BM1, BK) blocks: the rows after them (unused when BM1 == 0)
    b0_desc,  # over b (K, N) in (BK, BN0) blocks: the tile's first columns
    b1_desc,  # over b in (BK, BN1) blocks (unused when BN1 == 0)
    c00_desc,  # over c (M, N) in (BM0, BN0) blocks
    c01_desc,  # (BM0, BN1)
    c10_desc,  # (BM1, BN0)
    c11_desc,  # (BM1, BN1)
    M,
    N,
    K,
    BM0: tl.constexpr,
    BM1: tl.constexpr,
    BN0: tl.constexpr,
    BN1: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    FLATTEN: tl.constexpr = True,
):
    BM: tl.constexpr = BM0 + BM1
    BN: tl.constexpr = BN0 + BN1
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP_M * num_pid_n
    tiles = num_pid_m * num_pid_n
    steps = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), tiles, tl.num_programs(0), flatten=FLATTEN):
        first_pid_m = (tile // num_pid_in_group) * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % num_pid_in_group) % group_size_m
        pid_n = (tile % num_pid_in_group) // group_size_m
        row = pid_m * BM
        col = pid_n * BN
        acc00 = tl.zeros((BM0, BN0), dtype=tl.float32)
        if BN1 > 0:
            acc01 = tl.zeros((BM0, BN1), dtype=tl.float32)
        if BM1 > 0:
            acc10 = tl.zeros((BM1, BN0), dtype=tl.float32)
            if BN1 > 0:
                acc11 = tl.zeros((BM1, BN1), dtype=tl.float32)
        for k in range(0, steps):
            a0 = a0_desc.load([row, k * BK])  # (BM0, BK); zeros past M and K
            b0 = b0_desc.load([k * BK, col])  # (BK, BN0)
            acc00 = tl.dot(a0, b0, acc00)
            if BN1 > 0:
                b1 = b1_desc.load([k * BK, col + BN0])  # (BK, BN1)
                acc01 = tl.dot(a0, b1, acc01)
            if BM1 > 0:
                a1 = a1_desc.load([row + BM0, k * BK])  # (BM1, BK)
                acc10 = tl.dot(a1, b0, acc10)
                if BN1 > 0:
                    acc11 = tl.dot(a1, b1, acc11)
        c00_desc.store([row, col], acc00.to(c00_desc.dtype))  # rows and columns past c's edge are dropped
        if BN1 > 0:
            c01_desc.store([row, col + BN0], acc01.to(c01_desc.dtype))
        if BM1 > 0:
            c10_desc.store([row + BM0, col], acc10.to(c10_desc.dtype))
            if BN1 > 0:
                c11_desc.store([row + BM0, col + BN0], acc11.to(c11_desc.dtype))


# (BM0, BM1, BN0, BN1, BK, num_stages, num_warps, flatten): the tile is (BM0 + BM1) x (BN0 + BN1). With two or more
# accumulators, flatten=True makes ptxas serialize every wgmma (C7515: "non wgmma instructions defining accumulator
# registers ... between start and end of the pipeline stage"), so the wide tiles run with the tile loop and the K
# loop apart; a flattened one and the one-accumulator controls both ways show what that costs.
TILES = [
    (128, 64, 128, 0, 64, 4, 8, False),  # 192 x 128: 96 tiles at 1536^3 (one round, 73% of 132 SMs)
    (128, 0, 128, 64, 64, 4, 8, False),  # 128 x 192: 96 tiles at 1536^3
    (128, 0, 128, 64, 64, 4, 8, True),  # the same, flattened: serialized
    (128, 64, 64, 32, 64, 4, 8, False),  # 192 x 96: cuBLAS's at 1536^3, 128 tiles
    (128, 64, 64, 32, 64, 5, 8, False),
    (128, 64, 128, 64, 64, 3, 8, False),  # 192 x 192: cuBLAS's at 3072^3, 256 tiles (two rounds)
    # controls: the solution's 128 x 256 tile as one block (this kernel with one product a step should run as the
    # solution does), flattened and not, then as two 128 x 128 blocks (the same tile, two products a step)
    (128, 0, 256, 0, 64, 3, 8, True),
    (128, 0, 256, 0, 64, 3, 8, False),
    (128, 0, 128, 128, 64, 3, 8, False),
]


def name_of(tile: tuple[int, ...]) -> str:
    bm0, bm1, bn0, bn1, bk, stages, warps, flatten = tile
    return f"{bm0 + bm1}x{bn0 + bn1}x{bk} ({bm0}+{bm1} x {bn0}+{bn1}) s{stages} w{warps}{' flat' if flatten else ''}"


def launch_args(tile: tuple[int, ...], a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, sms: int) -> tuple:
    """(grid, args, kwargs) of one launch of the probe's kernel: tma_programs(tiles, sms) programs, as the solution."""
    from solutions.tiling.kernels import tma_programs

    bm0, bm1, bn0, bn1, bk, stages, warps, flatten = tile
    m, k = a.shape
    n = b.shape[1]
    rows1, cols1 = bm1 or 16, bn1 or 16  # a block the kernel never touches still needs a legal shape
    d = TensorDescriptor.from_tensor
    args = (d(a, [bm0, bk]), d(a, [rows1, bk]), d(b, [bk, bn0]), d(b, [bk, cols1]), d(c, [bm0, bn0]),
            d(c, [bm0, cols1]), d(c, [rows1, bn0]), d(c, [rows1, cols1]), m, n, k)  # fmt: skip
    tiles = triton.cdiv(m, bm0 + bm1) * triton.cdiv(n, bn0 + bn1)
    kwargs = dict(BM0=bm0, BM1=bm1, BN0=bn0, BN1=bn1, BK=bk, GROUP_M=8, FLATTEN=flatten, num_stages=stages,
                  num_warps=warps)  # fmt: skip
    return (tma_programs(tiles, sms),), args, kwargs


def launch(tile: tuple[int, ...], a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, sms: int) -> None:
    grid, args, kwargs = launch_args(tile, a, b, c, sms)
    _wide_tma_kernel[grid](*args, **kwargs)


def check() -> None:
    """In the interpreter, float32, tiles scaled down by 4 (the split is the same), on shapes with ragged edges."""
    torch.manual_seed(0)
    bad = []
    for tile in TILES:
        small = (tile[0] // 4, tile[1] // 4, tile[2] // 4, tile[3] // 4, 16, *tile[5:])
        for m, k, n in ((96, 48, 80), (50, 40, 72), (17, 24, 8)):
            a, b = torch.randn(m, k), torch.randn(k, n)
            c = torch.full((m, n), float("nan"))
            launch(small, a, b, c, sms=3)
            err = (c.double() - a.double() @ b.double()).abs().max().item()
            ok = err < 1e-3
            bad += [] if ok else [f"{name_of(small)} at {m}x{k}x{n}: {err}"]
            print(f"{name_of(small):40} {m}x{k}x{n}: max error {err:.2e} {'ok' if ok else 'WRONG'}")
    control = (16, 16, 16, 0, 16, 3, 4, True)  # a control that must fail: the second row block reads another tensor
    a, b = torch.randn(64, 32), torch.randn(32, 32)
    c = torch.zeros(64, 32)
    grid, args, kwargs = launch_args(control, a, b, c, sms=2)
    elsewhere = TensorDescriptor.from_tensor(a.roll(1, 0).contiguous(), [16, 16])
    _wide_tma_kernel[grid](args[0], elsewhere, *args[2:], **kwargs)
    if torch.allclose(c, a @ b, atol=1e-3):
        bad.append("the control (rows after the first block read from the wrong place) passed")
    print("NOT CLEAN:\n  " + "\n  ".join(bad) if bad else "clean: every tile right, the control caught")
    sys.exit(1 if bad else 0)


def sm90() -> None:
    """Each tile compiled for sm_90 here, as the GPU would compile it: registers, spills, shared memory, and whether
    ptxas serializes the wgmma instructions (its C7515 note, which Triton does not print)."""
    import re
    import subprocess
    import tempfile

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from autograder.diagnose import resource_usage
    from autograder.portability import _bind

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    a = torch.empty(4096, 4096, dtype=torch.bfloat16, device="meta")
    print(f"{'tile':46} {'regs':>4} {'spill B':>7} {'smem B':>7}  wgmma serialized")
    for tile in TILES:
        grid, args, kwargs = launch_args(tile, a, a, a, 132)
        _, (sig, cx, attrs, opts) = _bind(_wide_tma_kernel, args, kwargs, 90)
        try:
            ck = triton.compile(ASTSource(_wide_tma_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                                options=opts.__dict__)  # fmt: skip
        except Exception as e:  # noqa: BLE001 - a tile that does not compile is the finding
            print(f"{name_of(tile):46} does not compile: {str(e).strip().splitlines()[-1][:120]}")
            continue
        with tempfile.TemporaryDirectory() as d:
            Path(d, "k.ptx").write_text(ck.asm["ptx"])
            note = subprocess.run([str(ptxas), "-arch=sm_90a", "-v", f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                                  capture_output=True, text=True).stderr  # fmt: skip
        why = re.search(r"serialized due to (.*?) in the function", note)
        use = resource_usage(ck.asm["cubin"])
        print(f"{name_of(tile):46} {use['REG']:>4} {use.get('STACK', 0) + use.get('LOCAL', 0):>7} {ck.metadata.shared:>7}"
              f"  {'yes: ' + why.group(1) if why else 'no'}")  # fmt: skip


def facts() -> None:
    """On a GPU: what the grader's diagnosis reads from the kernels Triton compiled there (facts_from_compiled, the
    replayer's path), for the 128 x 192 tile flattened and not: the first must be named serialized, the second not."""
    from autograder.diagnose import diagnose, facts_from_compiled
    from course.device import cuda_device

    a = torch.randn(1536, 1536, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    found = {}
    for flatten in (True, False):
        grid, args, kwargs = launch_args((128, 0, 128, 64, 64, 4, 8, flatten), a, a, c, sms)
        compiled = _wide_tma_kernel[grid](*args, **kwargs)
        k = facts_from_compiled("_wide_tma_kernel", grid, compiled)
        found[flatten] = k.serialized if k else None
        print(f"flatten={flatten}: {diagnose([k], cuda_device(0), slow=True).text() if k else 'no facts'}")
    ok = bool(found[True]) and found[False] == ""
    print("facts: " + ("the flattened kernel is named serialized and the other is not" if ok else f"WRONG: {found}"))
    sys.exit(0 if ok else 1)


SIZES = [int(x) for x in os.environ.get("SIZES", "1024 1536 2048 2304 3072 4096").split()]


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from tiling_tma_small_probe import cublas_kernels, square_problem  # cuBLAS's kernel names; the inputs

    from autograder import timing
    from solutions.tiling import kernels as tk

    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        for s in SIZES if dtype == torch.bfloat16 else [x for x in (1536, 3072) if x in SIZES]:
            a_s, b_s, c, ref = square_problem(s, dtype, dev)
            scale = ref.abs().mean()
            fns = {"cuBLAS": lambda i: torch.matmul(a_s[i], b_s[i]), "matmul_tma": lambda i: tk.matmul_tma(a_s[i], b_s[i])}
            errors = {"cuBLAS": ((fns["cuBLAS"](0).double() - ref).abs().max() / scale).item(),
                      "matmul_tma": ((fns["matmul_tma"](0).double() - ref).abs().max() / scale).item()}  # fmt: skip
            for tile in TILES:
                name = name_of(tile)
                try:
                    c.fill_(float("nan"))
                    launch(tile, a_s[0], b_s[0], c, sms)
                    torch.cuda.synchronize()
                    err = ((c.double() - ref).abs().max() / scale).item()
                except Exception as e:  # noqa: BLE001 - a tile that does not fit is reported
                    errors[name] = f"failed: {str(e).splitlines()[0][:160]}"
                    continue
                errors[name] = err
                if err == err and err < 4 * errors["matmul_tma"] + 1e-3:  # not NaN, and as close as the solution
                    fns[name] = lambda i, t=tile: launch(t, a_s[i], b_s[i], c, sms)
            times = timing.time_interleaved(fns, 3, 15, dev)
            us = {x: timing.median(t) * 1e3 for x, t in times.items()}
            vs = {x: us["cuBLAS"] / t for x, t in us.items()}
            probe = {x: v for x, v in vs.items() if x not in ("cuBLAS", "matmul_tma")}
            best = max(probe, key=probe.get) if probe else None
            row = {"dtype": str(dtype).split(".")[-1], "size": s, "us": us, "vs_cublas": vs,
                   "max_err_over_mean": errors, "best": best, "cublas_kernels": cublas_kernels(a_s[0], b_s[0])}  # fmt: skip
            rows.append(row)
            print(f"{row['dtype']} {s}^3: cuBLAS {us['cuBLAS']:.1f} us; matmul_tma {vs['matmul_tma']:.2f}x; "
                  + (f"best {best} {vs[best]:.2f}x" if best else "no tile ran"), flush=True)  # fmt: skip
    out = Path(os.environ.get("OUT", "."))
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "date": time.strftime("%Y-%m-%d"), "command": "python results/provenance/tiling_tma_wide_probe.py",
            "timer": "autograder.timing.time_interleaved: 3 inputs, 15 rounds, L2 flushed; medians in us",
            "tiles": {name_of(t): t for t in TILES}, "rows": rows}  # fmt: skip
    (out / "tiling_tma_wide_probe.json").write_text(json.dumps(info, indent=1))
    print(f"\n{'size':>10} " + " ".join(f"{name_of(t)[:18]:>18}" for t in TILES) + f" {'matmul_tma':>10}")
    for r in rows:
        cells = " ".join(f"{r['vs_cublas'].get(name_of(t), float('nan')):>18.2f}" for t in TILES)
        print(f"{r['dtype'][:4]} {r['size']:>5} {cells} {r['vs_cublas']['matmul_tma']:>10.2f}")


def table(paths: list[str]) -> None:
    """The page's table from one or more of main()'s JSON files: each tile's speed over cuBLAS's at each size."""
    for path in paths:
        info = json.loads(Path(path).read_text())
        names = list(info["tiles"])
        print(f"### {info['gpu']}, {info['date']} (torch {info['torch']}, triton {info['triton']}): `{Path(path).name}`\n")
        print("cuBLAS's time over each kernel's (above 1: faster than cuBLAS); " + info["timer"] + ".\n")
        print("| size | cuBLAS (us) | matmul_tma | " + " | ".join(names) + " |")
        print("|---|---:|---:|" + "---:|" * len(names))
        for r in info["rows"]:
            cells = [f"{r['vs_cublas'][x]:.2f}x" if x in r["vs_cublas"] else "-" for x in names]
            print(f"| {r['dtype']} {r['size']}^3 | {r['us']['cuBLAS']:.1f} | {r['vs_cublas']['matmul_tma']:.2f}x | "
                  + " | ".join(cells) + " |")  # fmt: skip
        print()


if __name__ == "__main__":
    if "--table" in sys.argv:
        table([x for x in sys.argv[1:] if x != "--table"])
    elif "--check" in sys.argv:
        check()
    elif "--sm90" in sys.argv:
        sm90()
    elif "--facts" in sys.argv:
        facts()
    else:
        main()
