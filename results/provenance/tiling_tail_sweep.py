"""Wave quantization in module 04's matmul: one launch of the table's first tile against two launches of the
same student kernel (the rows of whole waves with the first tile, the rest with a smaller "tail" tile).

For every shape: cuBLAS, the solution as it launches today with the tail split off (autotuned among the table's
tiles), and each candidate tail tile at each candidate split row (the rows of the last whole wave or two of
the first tile; 0 = the smaller tile everywhere). Each variant is checked against a float32 product first.
Also the "speed" of each candidate tail tile: its rate over the first tile's on a problem of many waves.

    python results/provenance/tiling_tail_sweep.py --out DIR          # on a GPU
    TRITON_INTERPRET=1 python results/provenance/tiling_tail_sweep.py --dry   # the same code on tiny shapes
    python results/provenance/tiling_tail_sweep.py --table results/h200/tiling_tail_sweep.json   # its table (no GPU)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton  # noqa: E402

from course.device import device_of  # noqa: E402
from solutions.tiling import kernels as tk  # noqa: E402


def tile(bm: int, bn: int, bk: int, stages: int, warps: int) -> dict:
    return {"block_m": bm, "block_n": bn, "block_k": bk, "group_m": 8, "num_stages": stages, "num_warps": warps}


TAILS = {
    "64x128": tile(64, 128, 64, 4, 4),
    "128x64": tile(128, 64, 64, 4, 4),
    "64x64": tile(64, 64, 64, 4, 4),
    "128x128": tile(128, 128, 64, 3, 4),
    "64x256": tile(64, 256, 64, 4, 4),
}
SQUARES = [1024, 1536, 2048, 2304, 2560, 3072, 3584, 4096, 5120, 6144, 8192]
RECTS = [[4096, 4096, 14336], [4096, 14336, 4096], [2048, 4096, 14336], [2048, 14336, 4096], [8192, 4096, 1024],
         [1024, 4096, 4096], [3072, 4096, 4096]]  # fmt: skip


def bench(fn, dry: bool) -> float:
    if dry:
        fn()
        return float("nan")
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3  # us, L2 cleared each call


def split_rows(m: int, n: int, big: dict, sms: int) -> list[int]:
    """Candidate rows for the first launch: whole tile rows inside the last whole wave or two, and 0."""
    rt, ct = tk.cdiv(m, big["block_m"]), tk.cdiv(n, big["block_n"])
    waves = rt * ct // sms
    rows = {0}
    for w in (waves, waves - 1):
        if w > 0:
            rows.add((w * sms) // ct)
    return sorted(r * big["block_m"] for r in rows if 0 <= r < rt)


def table(path: Path) -> str:
    """The sweep as markdown: per shape, one launch, the best measured split, and the split tail_split chooses
    with the measured speed of the 64 x 128 tail tile (the table's)."""
    from course.device import KNOWN_GPUS

    d = json.loads(path.read_text())
    device = KNOWN_GPUS[d["gpu"]]
    first = tk.matmul_config(device, torch.bfloat16)[0]
    tail = {**TAILS["64x128"], "speed": round(d["speed"]["64x128"], 3), "against": [first[k] for k in tk._TILE_KEYS]}
    out = [f"Measured on {d['gpu']} ({d['date']}; torch {d['torch']}, triton {d['triton']}) by "
           f"`python results/provenance/tiling_tail_sweep.py`; `--table` wrote this. Median of do_bench, L2 cleared "
           "before each call. Speed of each candidate tail tile (its rate over the 128 x 256 tile's, 8192 x 4096 x 8192 "
           "bf16): " + ", ".join(f"{k} {v:.3f}" for k, v in d["speed"].items()) + ".", "",
           "| shape (M x K x N) | dtype | cuBLAS (us) | one launch (us) | vs cuBLAS | best split measured | tail_split's choice "
           "| its time (us) | vs cuBLAS |", "|---|---|---:|---:|---:|---|---|---:|---:|"]  # fmt: skip
    for row in d["rows"]:
        if row["kind"] != "shape":
            continue
        m, k, n = row["shape"]
        dtype = getattr(torch, row["dtype"])
        with tk.CONFIGS.forcing("tail", "16-bit", tail):
            rows, chosen = tk.tail_split(device, dtype, m, n)
        mine = {s["rows"]: s["us"] for s in row["splits"] if s["tail"] == "64x128"}
        t = row["one_launch_us"] if chosen is None else mine[rows]
        best = min(row["splits"], key=lambda s: s["us"])
        best_text = f"{best['tail']} from row {best['rows']}: {best['us']:.1f}" if best["us"] < row["one_launch_us"] else "one launch"
        out.append(f"| {m}x{k}x{n} | {row['dtype']} | {row['cublas_us']:.1f} | {row['one_launch_us']:.1f} | "
                   f"{row['cublas_us'] / row['one_launch_us']:.2f}x | {best_text} | "
                   f"{'one launch' if chosen is None else f'64x128 from row {rows}'} | {t:.1f} | {row['cublas_us'] / t:.2f}x |")  # fmt: skip
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--dry", action="store_true")
    ap.add_argument("--table", type=Path, help="print the markdown table of a sweep's JSON and stop")
    args = ap.parse_args()
    if args.table:
        print(table(args.table), end="")
        return
    dev = torch.device("cpu" if args.dry else "cuda")
    squares, rects = ([96, 160], [[70, 64, 200]]) if args.dry else (SQUARES, RECTS)
    probe = torch.empty(1, device=dev)
    device = device_of(probe)
    sms = device.sms
    tk.tail_split = lambda *a, **k: (0, None)  # the solution as it launches without the split
    rows_out: list[dict] = []
    info = {"gpu": torch.cuda.get_device_name() if not args.dry else "interpreter", "sms": sms,
            "torch": torch.__version__, "triton": triton.__version__, "date": time.strftime("%Y-%m-%d")}  # fmt: skip
    print(json.dumps(info), flush=True)

    # The candidates' speed against the first tile, on a problem of many waves of each.
    dtype = torch.bfloat16 if not args.dry else torch.float32
    big = tk.matmul_config(device, dtype)[0] if not args.dry else tile(32, 32, 16, 3, 4)
    tails = TAILS if not args.dry else {"16x32": tile(16, 32, 16, 3, 4)}
    s = 8192 if not args.dry else 128
    a = torch.randn(s, 4096 if not args.dry else 64, device=dev, dtype=dtype)
    b = torch.randn(a.shape[1], s, device=dev, dtype=dtype)
    c = torch.empty(s, s, device=dev, dtype=dtype)
    t_big = bench(lambda: tk._launch_tile(a, b, c, big), args.dry)
    speed = {}
    for name, t in tails.items():
        tt = bench(lambda t=t: tk._launch_tile(a, b, c, t), args.dry)
        speed[name] = t_big / tt
        rows_out.append({"kind": "speed", "tail": name, "shape": [s, a.shape[1], s], "us": tt, "big_us": t_big})
        print(f"speed {name}: {t_big / tt:.3f} of the first tile's rate ({tt:.1f} against {t_big:.1f} us)", flush=True)
    del a, b, c

    shapes = [[q, q, q] for q in squares] + rects
    dtypes = [torch.bfloat16, torch.float16] if not args.dry else [torch.float32]
    for dtype in dtypes:
        for m, k, n in shapes:
            if dtype == torch.float16 and [m, k, n] not in ([1536] * 3, [3072] * 3, [2304] * 3, [4096, 4096, 14336]):
                continue
            g = torch.Generator(device=dev).manual_seed(m * 7 + n)
            a = torch.randn(m, k, device=dev, dtype=dtype, generator=g)
            b = torch.randn(k, n, device=dev, dtype=dtype, generator=g)
            ref = a.float() @ b.float()
            scale = ref.abs().mean().item()
            c = torch.empty(m, n, device=dev, dtype=dtype)

            def err(fn) -> float:
                c.fill_(float("nan"))
                fn()
                return ((c.float() - ref).abs().max() / scale).item()

            base = lambda: tk._launch(a, b, c)  # noqa: E731
            e0 = err(base)
            t_base = bench(base, args.dry)
            t_cublas = bench(lambda: torch.matmul(a, b), args.dry) if not args.dry else float("nan")
            row = {"kind": "shape", "shape": [m, k, n], "dtype": str(dtype).split(".")[-1], "cublas_us": t_cublas,
                   "one_launch_us": t_base, "one_launch_err": e0, "splits": []}  # fmt: skip
            best = (t_base, "one launch")
            for name, t in tails.items():
                for r in split_rows(m, n, big, sms):

                    def two(r=r, t=t) -> None:
                        if r:
                            tk._launch_tile(a[:r], b, c[:r], big)
                        tk._launch_tile(a[r:], b, c[r:], t)

                    e = err(two)
                    tt = bench(two, args.dry)
                    row["splits"].append({"tail": name, "rows": r, "us": tt, "err": e})
                    if tt < best[0]:
                        best = (tt, f"{name} from row {r}")
            rows_out.append(row)
            worst = max([e0] + [x["err"] for x in row["splits"]])
            print(f"{m}x{k}x{n} {row['dtype']}: cuBLAS {t_cublas:.1f} one {t_base:.1f} ({t_cublas / t_base:.2f}x) "
                  f"best {best[0]:.1f} ({t_cublas / best[0]:.2f}x, {best[1]}) max err {worst:.1e}", flush=True)  # fmt: skip
            del a, b, c, ref
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tiling_tail_sweep.json").write_text(json.dumps({**info, "speed": speed, "rows": rows_out}, indent=1))


if __name__ == "__main__":
    main()
