"""The table of results/<gpu>/tiling_tma_small.md, from tiling_tma_small_probe.json (tiling_tma_small_probe.py):
each tile's speed (its work per SM per second over the table's 128 x 256 tile's, both at 4096^3, one program an SM,
rounds counted as the persistent launch makes them), which is what solutions/tiling/configs.json's "tma_small"
holds; then, at each size, the tile that tma_tile's model picks with those speeds beside the fastest tile timed.

    python results/provenance/tiling_tma_small_table.py results/h100/tiling_tma_small_probe.json > results/h100/tiling_tma_small.md
"""

from __future__ import annotations

import json
import sys
from math import ceil

BIG = "128x256x64 s4 w8 x1"
SMALL = ["128x128x64 s5 w4 x1", "64x128x64 s6 w4 x1", "64x64x64 s6 w4 x1"]  # what configs.json's "tma_small" holds


def tile_of(name: str) -> tuple[int, int]:
    bm, bn, _ = name.split()[0].split("x")
    return int(bm), int(bn)


def rounds(name: str, size: int, sms: int) -> int:
    bm, bn = tile_of(name)
    return ceil(ceil(size / bm) * ceil(size / bn) / sms)


def main(path: str, sms: int = 132) -> None:
    data = json.loads(open(path).read())
    print(f"# The TMA bonus's tile by shape: {data['gpu']}, torch {data['torch']}, triton {data['triton']}, {data['date']}\n")
    print(f"`{data['command']}`, then `python results/provenance/tiling_tma_small_table.py` on its JSON. "
          f"{data['timer']}. Ratios are cuBLAS's time over the kernel's.\n")  # fmt: skip
    for dtype in ("bfloat16", "float16"):
        rows = [r for r in data["rows"] if r["dtype"] == dtype]
        big_row = next((r for r in rows if r["size"] == 4096), None)
        if big_row is None:
            continue

        def rate(name: str, row: dict) -> float:  # output elements per SM per us, in rounds of the tile
            bm, bn = tile_of(name)
            return bm * bn * rounds(name, row["size"], sms) / row["us"][name]

        speed = {name: rate(name, big_row) / rate(BIG, big_row) for name in SMALL}
        print(f"## {dtype}\n\nSpeeds at 4096^3 (the table's \"speed\"): "
              + ", ".join(f"{n.split()[0]} {n.split()[1]} {n.split()[2]}: {v:.3f}" for n, v in speed.items()) + "\n")  # fmt: skip
        print("| size | cuBLAS (us) | pointers (task 1) | one 128x256 tile | model's tile | its time | fastest timed | its time |")
        print("|---:|---:|---:|---:|---|---:|---|---:|")
        for row in rows:
            s = row["size"]
            bm, bn = tile_of(BIG)
            cost = {BIG: float(rounds(BIG, s, sms))}
            for name in SMALL:
                m, n = tile_of(name)
                cost[name] = rounds(name, s, sms) * m * n / (bm * bn) / speed[name]
            pick = min([BIG, *SMALL], key=lambda x: cost[x])  # the first on a tie: the table's tile
            vs = row["vs_cublas"]
            print(f"| {s}^3 | {row['us']['cuBLAS']:.1f} | {vs['pointers']:.2f}x | {vs[BIG]:.2f}x | {pick.rsplit(' ', 1)[0]} | "
                  f"{vs[pick]:.2f}x | {row['best']} | {vs[row['best']]:.2f}x |")  # fmt: skip
        print()
    print("cuBLAS's kernel at each size (bf16; its name gives its tile, `nvjet_sm90_tst_<M>x<N>_<K>x<stages>...`):\n")
    for row in data["rows"]:
        if row["dtype"] == "bfloat16":
            print(f"- {row['size']}^3: {', '.join(k for k in row['cublas_kernels'] if 'Memset' not in k)}")


if __name__ == "__main__":
    main(sys.argv[1])
