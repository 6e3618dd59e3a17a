"""Assignment 04, tiling: a tiled matrix multiplication on the tensor cores.

    c = a @ b for a (M, K) and b (K, N): products summed in float32, c rounded once to the inputs' dtype

and, as a bonus, the same product with Hopper's tensor-memory accelerator: `matmul_tma(a, b)`, a persistent
kernel whose tiles move through tensor descriptors.

The handout is README.md beside this file. Fill in the region marked TODO; keep the signature, the
launch wrappers and the configuration as they are: the grader calls `matmul(a, b)` (and `matmul_tma(a, b)`).
Grade yourself with `make grade` (or `python -m autograder grade tiling`).
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from course.configs import ConfigTable, Measurement, SearchSpace, Timer
from course.device import Device, device_of, sm_limits
from course.env import interpreter_requested
from course.launch import cdiv, launch
from course.ops import OpLibrary
from course.validate import CheckedOnce, check_same, check_tensor

# --------------------------------------------------------------------------------------------------
# Kernels: the tiled matmul, and a copy into 16-byte-aligned buffers
# --------------------------------------------------------------------------------------------------


@triton.jit
def _matmul_kernel(
    a_ptr,  # (M, K), rows contiguous
    b_ptr,  # (K, N), rows contiguous
    c_ptr,  # (M, N) output, rows contiguous, in the inputs' dtype
    M,
    N,
    K,
    stride_am,  # elements between consecutive rows of a
    stride_bk,  # elements between consecutive rows of b
    stride_cm,  # elements between consecutive rows of c
    BLOCK_M: tl.constexpr,  # rows of c per program
    BLOCK_N: tl.constexpr,  # columns of c per program
    BLOCK_K: tl.constexpr,  # step along K: a (BLOCK_M, BLOCK_K) tile of a meets a (BLOCK_K, BLOCK_N) tile of b
    GROUP_M: tl.constexpr,  # tile rows per group in the launch order, for L2 reuse
):
    """Program p computes one (BLOCK_M, BLOCK_N) tile of c, walking K in steps of BLOCK_K."""
    # TODO(tiling.matmul)
    #   Program p computes one (BLOCK_M, BLOCK_N) tile of c, with the tiles numbered in groups of GROUP_M
    #   tile rows; accumulate over K in float32 with tl.dot, mask every edge, store c in its dtype.
    #   More, one step at a time: python -m autograder hint tiling.matmul
    raise NotImplementedError("TODO(tiling.matmul): not implemented yet; see README.md")


@triton.jit
def _matmul_tma_kernel(
    a_desc,  # descriptor over a (M, K), in (BLOCK_M, BLOCK_K) tiles
    b_desc,  # descriptor over b (K, N), in (BLOCK_K, BLOCK_N) tiles
    c_desc,  # descriptor over c (M, N), in (BLOCK_M, BLOCK_N // 2) tiles: each output tile is stored in two halves
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # the grouped order of _matmul_kernel
):
    """Persistent: the launch has about one program per SM, and program p computes tiles p, p + P, p + 2P, ...
    of c (P = tl.num_programs(0)), numbered in the grouped order of _matmul_kernel."""
    # TODO(tiling.tma)
    #   Loop over your tiles with tl.range(first, tiles, P, flatten=True); load each step's tiles with
    #   a_desc.load([row, col]) (no masks: the descriptor reads zeros past the edges), accumulate in float32 as in
    #   _matmul_kernel, and store the tile's two halves with c_desc.store (rows and columns past c's edge are dropped).
    #   More, one step at a time: python -m autograder hint tiling.tma
    raise NotImplementedError("TODO(tiling.tma): not implemented yet; see README.md")


@triton.jit
def _copy_pad_kernel(
    src_ptr,  # (R, C) source, rows contiguous
    dst_ptr,  # (R2, C2) destination, rows contiguous
    src_rows,
    src_cols,
    dst_rows,
    dst_cols,
    stride_src,
    stride_dst,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    """dst[i, j] = src[i, j] where src has that element, else 0: pads (dst larger) or crops (dst smaller)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    inside = (rows[:, None] < src_rows) & (cols[None, :] < src_cols)
    v = tl.load(src_ptr + rows.to(tl.int64)[:, None] * stride_src + cols[None, :], mask=inside, other=0)
    keep = (rows[:, None] < dst_rows) & (cols[None, :] < dst_cols)
    tl.store(dst_ptr + rows.to(tl.int64)[:, None] * stride_dst + cols[None, :], v, mask=keep)


# --------------------------------------------------------------------------------------------------
# Configuration: launch settings per GPU and dtype, from configs.json
# --------------------------------------------------------------------------------------------------


# Rows whose length (in elements) is not a multiple of this are copied into padded buffers first: with
# 16-byte-aligned rows and masks that change only every 16 elements, loads move 16 bytes at a time
# instead of one element (see _padded_copy).
ALIGN = 16


def _smem_bytes(cfg: dict, element_size: int) -> int:  # pragma: no cover - GPU only: a GPU with no measured entry
    """Shared memory a tile configuration keeps: num_stages tiles of a and of b in flight."""
    return (cfg["block_m"] + cfg["block_n"]) * cfg["block_k"] * element_size * cfg["num_stages"]


def _fit(device: Device, kernel: str, bucket: str, reference: object) -> object:  # pragma: no cover - GPU only: a GPU with no measured entry
    """A GPU with no measured entry: the reference GPU's tiles that fit its shared memory, else the smallest
    of them with as few stages as fit (2 at least: the pipeline needs one tile in use and one in flight)."""
    size = 4 if bucket == "float32" else 2
    if kernel == "tma":
        return _fit_tma(device, bucket, reference)
    if kernel == "tma_small":  # the reference's smaller TMA tiles that fit (tma_tile checks the tile their speed is against)
        fits = [t for t in reference or [] if _smem_bytes(t, size) + t["block_m"] * t["block_n"] // 2 * size <= device.smem_per_block]
        return fits or None
    if kernel == "tail":  # the reference's tail tile where it fits (tail_split checks the tile its speed is against)
        return reference if reference is not None and _smem_bytes(reference, size) <= device.smem_per_block else None
    if kernel != "matmul":
        return reference
    fits = [c for c in reference if _smem_bytes(c, size) <= device.smem_per_block]
    if fits:
        return fits
    smallest = min(reference, key=lambda c: _smem_bytes(c, size))
    stages = max(2, device.smem_per_block // _smem_bytes({**smallest, "num_stages": 1}, size))
    return [{**smallest, "num_stages": stages}]


def _fit_tma(device: Device, bucket: str, reference: dict | None) -> dict:  # pragma: no cover - GPU only: a GPU with no measured entry
    """A GPU with no TMA entry of its own or of its architecture: the first of the reference GPU's TMA tile and its
    matmul tiles that fits at least 2 stages beside the buffer that stores half a tile of c, with as many of its
    stages as fit; else the smallest of them with 2 stages."""
    size = 4 if bucket == "float32" else 2
    tiles = ([reference] if reference is not None else []) + list(CONFIGS.reference("matmul", bucket) or [])
    for tile in tiles:
        room = device.smem_per_block - tile["block_m"] * tile["block_n"] // 2 * size
        stages = room // _smem_bytes({**tile, "num_stages": 1}, size)
        if stages >= 2:
            return {**tile, "num_stages": min(tile["num_stages"], stages)}
    smallest = min(tiles, key=lambda t: _smem_bytes({**t, "num_stages": 1}, size))
    return {**smallest, "num_stages": 2}


# solutions/tiling/configs.json, per GPU: "matmul" by input dtype, the tiles the autotuner chooses among
# (one tile: launched as it is, as the interpreter's is), and "pad" for the copy into aligned buffers.
# The H200 entry came from the sweep in results/h200/tune_tiling.json: 128 x 256 x 64 tiles, 8 warps, 3
# stages won at every size from 1792 to 8192 (672 TFLOP/s at 4096^3, against 538 for the best 128 x 128);
# the smaller tiles are there for problems too small to fill the GPU's SMs with 128 x 256 tiles. float32
# tiles take twice the bytes, and tf32x3 three times the tensor-core work. The interpreter runs one program
# after another: small tiles, so that small cases still span several tiles and several steps along K.
CONFIGS = ConfigTable.beside(__file__, "tiling", rules=_fit)


@CONFIGS.cached
def matmul_config(device: Device, dtype: torch.dtype) -> list[dict]:
    """The tile configurations for inputs of this dtype: block_m, block_n, block_k, group_m, num_stages, num_warps."""
    return CONFIGS.pick(device, "matmul", "float32" if dtype == torch.float32 else "16-bit")


@CONFIGS.cached
def tma_config(device: Device, dtype: torch.dtype) -> dict:
    """The TMA kernel's tile for inputs of this dtype: block_m, block_n, block_k, group_m, num_stages, num_warps."""
    return CONFIGS.pick(device, "tma", "float32" if dtype == torch.float32 else "16-bit")


@CONFIGS.cached
def tma_tile(device: Device, dtype: torch.dtype, m: int, n: int) -> dict:
    """The TMA kernel's tile for an (M, N) output: the table's tile, or one of the smaller tiles of "tma_small"
    where the table's tile would leave SMs idle.

    The persistent launch runs ceil(T / S) rounds of tiles for T tiles on S SMs; a round of a tile of area A at
    rate r (its "speed" in the table: work per SM per second over the table's tile's, measured on a problem of
    many rounds against the tile in "against") takes A / r as long as a round of the table's tile per unit area.
    The tile with the least predicted time wins, the table's tile on a tie. At 1024^3 the 128 x 256 tile makes
    32 tiles for 132 SMs (1 round, a quarter of the SMs busy); the 64 x 128 tile makes 128 (1 round, nearly
    all of them): 4x the SMs at 0.68x the rate per SM."""
    bucket = "float32" if dtype == torch.float32 else "16-bit"
    big = tma_config(device, dtype)
    best, best_time = big, float(cdiv(cdiv(m, big["block_m"]) * cdiv(n, big["block_n"]), device.sms))
    for tile in CONFIGS.pick(device, "tma_small", bucket) or []:
        if tile["against"] != [big[k] for k in _TILE_KEYS]:  # pragma: no cover - GPU only: measured against another tile
            continue
        per_round = tile["block_m"] * tile["block_n"] / (big["block_m"] * big["block_n"]) / tile["speed"]
        time = cdiv(cdiv(m, tile["block_m"]) * cdiv(n, tile["block_n"]), device.sms) * per_round
        if time < best_time:
            best, best_time = tile, time
    return best


def _programs_per_sm(device: Device, cfg: dict, element_size: int) -> int:
    """Programs of this tile that one SM holds at once (the interpreter runs one program at a time)."""
    return 1 if device.interpreter else _resident_programs(device, cfg, element_size)


def _resident_programs(device: Device, cfg: dict, element_size: int) -> int:  # pragma: no cover - GPU only
    """Programs of this tile that one of the GPU's SMs holds at once, as its shared memory and warp slots allow."""
    limits = sm_limits(device.capability)
    by_smem = limits.smem // (_smem_bytes(cfg, element_size) + limits.smem_reserved_per_block)
    return max(1, min(by_smem, limits.max_warps // cfg["num_warps"], limits.max_blocks))


def _rounds(device: Device, tiles: int, cfg: dict, element_size: int, alone: float) -> float:
    """The time `tiles` programs of one launch take, in units of one first-table tile alone on an SM, where
    one program of cfg alone takes `alone` of them: full rounds of every SM's resident programs, each round
    as long as its programs share the SM (a last round partly empty costs as much as a full one)."""
    per_sm = _programs_per_sm(device, cfg, element_size)
    return cdiv(tiles, device.sms * per_sm) * per_sm * alone


# A tail entry's "against": the first tile its speed was measured against, as these settings.
_TILE_KEYS = ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps")


@CONFIGS.cached
def tail_split(device: Device, dtype: torch.dtype, m: int, n: int) -> tuple[int, dict | None]:
    """Where one launch of the table's first tile would leave its last wave mostly empty: the rows to launch
    with that tile and the smaller tile for the rows after them; (m, None): one launch as usual.

    With T tiles on S SMs, one launch takes ceil(T / S) waves, the last running T mod S programs while the
    other SMs wait (288 tiles of 128 x 256 at 3072^3 on 132 SMs: 2.18 waves of work in 3). Two launches of the
    same kernel do better: the rows whose tiles fill whole waves with the first tile, then the remaining rows
    with the table's "tail" tile, whose many small programs share one short wave over every SM. The split
    comes from a model of both launches in waves, with the tail tile's measured speed (its rate against the
    first tile's, "speed" in the table, measured by `python -m autograder tune tiling` against the tile in
    "against"), and is taken where it predicts less time than one launch."""
    bucket = "float32" if dtype == torch.float32 else "16-bit"
    tail = CONFIGS.pick(device, "tail", bucket)
    big = matmul_config(device, dtype)[0]
    if tail is None or tail["against"] != [big[k] for k in _TILE_KEYS]:  # pragma: no cover - GPU only
        # No tail tile here (float32 on a GPU; one that does not fit), or its speed was measured against another
        # first tile (a GPU tuned to its own): the model would have no speed to go on. One launch.
        return m, None
    best_rows, best = m, _split_time(device, dtype, m, n, m, None)
    for r in range(cdiv(m, big["block_m"]) - 1, -1, -1):  # r tile rows with the first tile; ties keep the larger r
        cost = _split_time(device, dtype, m, n, r * big["block_m"], tail)
        if cost < best:
            best_rows, best = r * big["block_m"], cost
    return (m, None) if best_rows == m else (best_rows, tail)


def _split_time(device: Device, dtype: torch.dtype, m: int, n: int, rows: int, tail: dict | None) -> float:
    """The model's time, in units of one first-table tile alone on an SM, for the first `rows` rows launched with
    the table's first tile and the rest with `tail` (None: every row with the first tile, one launch)."""
    size = 4 if dtype == torch.float32 else 2
    big = matmul_config(device, dtype)[0]
    first = _rounds(device, cdiv(rows, big["block_m"]) * cdiv(n, big["block_n"]), big, size, 1.0)
    if tail is None:
        return first
    # A tail program's work over a first-tile program's, at the tail tile's measured rate.
    alone = tail["block_m"] * tail["block_n"] / (big["block_m"] * big["block_n"]) / tail["speed"]
    return first + _rounds(device, cdiv(m - rows, tail["block_m"]) * cdiv(n, tail["block_n"]), tail, size, alone)


def pad_config(device: Device) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_C, num_warps) of the padding copy."""
    s = CONFIGS.pick(device, "pad", "all")
    return s["block_r"], s["block_c"], s["num_warps"]


def _tile(block_m: int, block_n: int, block_k: int, num_stages: int, num_warps: int) -> dict:
    return {"block_m": block_m, "block_n": block_n, "block_k": block_k, "group_m": 8, "num_stages": num_stages,
            "num_warps": num_warps}  # fmt: skip


def _measure_tail(device: Device, bucket: str, time: Timer) -> dict | None:  # pragma: no cover - run by the tuner
    """This GPU's "tail" entry: the reference GPU's tail tile, with its speed measured here against the first
    matmul tile this GPU launches (both over a problem of many waves); None where that tile does not fit."""
    tail = CONFIGS.reference("tail", bucket)
    size = 4 if bucket == "float32" else 2
    if tail is None or (not device.interpreter and _smem_bytes(tail, size) > device.smem_per_block):
        return None
    dtype = torch.float32 if bucket == "float32" else torch.bfloat16 if device.bf16_tensor_cores else torch.float16
    m, k, n = 8192, 4096, 8192
    if device.interpreter:  # `tune --smoke`: only the path is checked, on a small float32 product
        dtype, (m, k, n) = torch.float32, (96, 64, 96)
    first = matmul_config(device, dtype)[0]
    where = "cpu" if device.interpreter else "cuda"
    a, b = torch.randn(m, k, device=where, dtype=dtype), torch.randn(k, n, device=where, dtype=dtype)
    c = torch.empty(m, n, device=where, dtype=dtype)
    ms = time({"first": lambda: _launch_tile(a, b, c, first), "tail": lambda: _launch_tile(a, b, c, tail)})
    return {**{key: tail[key] for key in _TILE_KEYS}, "speed": round(ms["first"] / ms["tail"], 3),
            "against": [first[key] for key in _TILE_KEYS]}  # fmt: skip


def _measure_tma_small(device: Device, bucket: str, time: Timer) -> list[dict] | None:  # pragma: no cover - run by the tuner
    """This GPU's "tma_small" entry: the reference GPU's smaller TMA tiles that fit here, each with its speed
    measured against the TMA tile this GPU launches, over a problem of many rounds of both: the work per SM per
    second of a round of each, rounds counted as the launch makes them (ceil(tiles / SMs))."""
    big = tma_config(device, torch.float16)
    tiles = _fit(device, "tma_small", bucket, CONFIGS.reference("tma_small", bucket))
    if not tiles:
        return None
    dtype = torch.bfloat16 if device.bf16_tensor_cores else torch.float16
    m = k = n = 4096
    if device.interpreter:  # `tune --smoke`: only the path is checked, on a small float32 product
        dtype, m, k, n = torch.float32, 96, 64, 96
    where = "cpu" if device.interpreter else "cuda"
    a, b = torch.randn(m, k, device=where, dtype=dtype), torch.randn(k, n, device=where, dtype=dtype)
    c = torch.empty(m, n, device=where, dtype=dtype)
    fns = {"big": lambda: _launch_tma_tile(a, b, c, big)}
    for i, tile in enumerate(tiles):
        fns[f"small {i}"] = lambda t=tile: _launch_tma_tile(a, b, c, t)
    ms = time(fns)

    def rate(tile: dict, spent: float) -> float:  # output elements per SM per millisecond, in rounds of this tile
        return tile["block_m"] * tile["block_n"] * cdiv(cdiv(m, tile["block_m"]) * cdiv(n, tile["block_n"]), device.sms) / spent

    return [{**{key: tile[key] for key in _TILE_KEYS}, "speed": round(rate(tile, ms[f"small {i}"]) / rate(big, ms["big"]), 3),
             "against": [big[key] for key in _TILE_KEYS]} for i, tile in enumerate(tiles)]  # fmt: skip


# Measured, not chosen: the tail tile's speed, against the first tile the same run chose; the smaller TMA tiles'
# speeds, against the TMA tile.
MEASUREMENTS = [Measurement("tail", ("16-bit",), _measure_tail), Measurement("tma_small", ("16-bit",), _measure_tma_small)]


# What `python -m autograder tune tiling` tries: single tiles around the H200's, timed on a large and a
# misaligned size; the table keeps each size's winner and the best of the rest, for the autotuner.
SEARCH_SPACE = [
    SearchSpace("matmul", "tiling.matmul",
                {"16-bit": [{"shape": [4096, 4096, 4096], "dtype": "float16"}, {"shape": [1793, 1793, 1793], "dtype": "float16"}]},
                [[_tile(*t)] for t in ((128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (256, 128, 64, 3, 8), (128, 128, 64, 3, 4),
                                       (128, 128, 64, 4, 8), (64, 256, 64, 4, 4), (64, 128, 64, 4, 4))],
                keep=4),
    SearchSpace("matmul", "tiling.matmul", {"float32": [{"shape": [2048, 2048, 2048], "dtype": "float32"}]},
                [[_tile(*t)] for t in ((128, 128, 32, 3, 8), (64, 128, 32, 4, 4), (128, 64, 32, 3, 4), (64, 64, 32, 4, 4))],
                keep=2),
    # The TMA bonus: one tile per dtype, persistent, so the grid never decides among tiles.
    SearchSpace("tma", "tiling.tma", {"16-bit": [{"shape": [4096, 4096, 4096], "dtype": "float16"}]},
                [{**_tile(*t), "group_m": g} for t, g in (((128, 256, 64, 4, 8), 16), ((128, 256, 64, 4, 8), 8),
                                                           ((128, 256, 64, 3, 8), 8), ((256, 128, 64, 4, 8), 8),
                                                           ((128, 128, 64, 4, 8), 8))]),
    SearchSpace("tma", "tiling.tma", {"float32": [{"shape": [2048, 2048, 2048], "dtype": "float32"}]},
                [_tile(*t) for t in ((128, 64, 32, 4, 4), (128, 128, 32, 3, 8), (128, 64, 32, 3, 4), (64, 64, 32, 4, 4))]),
]  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Launchers: inputs already checked, settings from the configuration
# --------------------------------------------------------------------------------------------------


_autotuned: dict[tuple, triton.runtime.Autotuner] = {}
_chosen: dict[tuple, tuple[list, dict]] = {}  # (id of the configurations' list, M, N, K, dtype) -> (that list, the choice)


def _kernel_for(configs: list[dict]) -> triton.runtime.Autotuner:  # pragma: no cover - GPU only: autotuning among several tiles
    """The kernel autotuned over these configurations, per (M, N, K): built once per list. Triton times each
    configuration on the first call of a new shape and keeps the fastest; every entry costs a compilation."""
    key = tuple(tuple(sorted(c.items())) for c in configs)
    if key not in _autotuned:
        choices = [triton.Config({"BLOCK_M": c["block_m"], "BLOCK_N": c["block_n"], "BLOCK_K": c["block_k"],
                                  "GROUP_M": c["group_m"]}, num_stages=c["num_stages"], num_warps=c["num_warps"])
                   for c in configs]  # fmt: skip
        _autotuned[key] = triton.autotune(configs=choices, key=["M", "N", "K"])(_matmul_kernel)
    return _autotuned[key]


def _launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    """c = a @ b with the kernel, for contiguous 2-D tensors of agreeing shapes."""
    m, k = a.shape
    n = b.shape[1]
    device = device_of(a)
    configs = matmul_config(device, a.dtype)
    rows, tail = tail_split(device, a.dtype, m, n)
    if tail is not None:
        # Two launches of the same kernel: the rows of whole waves with the first tile, the rest with the tail tile.
        if rows:
            _launch_tile(a[:rows], b, c[:rows], configs[0])
        _launch_tile(a[rows:], b, c[rows:], tail)
        return
    if len(configs) > 1:  # pragma: no cover - GPU only: autotuning among several tiles
        # Triton's Autotuner rebuilds its key from the arguments on every call (tens of microseconds on the
        # host); once it has chosen for a shape, that choice is launched directly.
        args = (a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))
        shape = (id(configs), m, n, k, a.dtype)
        among, chosen = _chosen.get(shape, (None, None))
        if among is not configs:  # the entry keeps its list alive, so an id is never another list's
            tuner = _kernel_for(configs)
            launch(tuner, lambda meta: (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]),), *args)
            best = getattr(tuner, "best_config", None)  # None where the launch was only recorded (portability, a trace)
            if best is not None:
                _chosen[shape] = (configs, best.all_kwargs())
            return
        launch(_matmul_kernel, (cdiv(m, chosen["BLOCK_M"]) * cdiv(n, chosen["BLOCK_N"]),), *args, **chosen)
        return
    _launch_tile(a, b, c, configs[0])  # one choice: no timing on the first call (and the interpreter cannot time)


def _launch_tile(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, cfg: dict) -> None:
    """c = a @ b with one tile configuration; a and c may be row slices of larger tensors."""
    m, k = a.shape
    n = b.shape[1]
    grid = (cdiv(m, cfg["block_m"]) * cdiv(n, cfg["block_n"]),)
    launch(_matmul_kernel, grid,
        a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
        BLOCK_M=cfg["block_m"], BLOCK_N=cfg["block_n"], BLOCK_K=cfg["block_k"], GROUP_M=cfg["group_m"],
        num_stages=cfg["num_stages"], num_warps=cfg["num_warps"],
    )  # fmt: skip


def _padded_copy(src: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """A new contiguous (rows, cols) tensor holding src in its top-left corner and zeros elsewhere."""
    dst = torch.empty((rows, cols), dtype=src.dtype, device=src.device)
    block_r, block_c, num_warps = pad_config(device_of(src))
    grid = (cdiv(rows, block_r), cdiv(cols, block_c))
    launch(_copy_pad_kernel, grid,
        src, dst, src.shape[0], src.shape[1], rows, cols, src.stride(0), dst.stride(0),
        BLOCK_R=block_r, BLOCK_C=block_c, num_warps=num_warps,
    )  # fmt: skip
    return dst


def _round_up(n: int, multiple: int) -> int:
    return (n + multiple - 1) // multiple * multiple


def _new_product(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """c (M, N) for a @ b, and whether it already holds the answer: an empty c, or zeros when K = 0 (an empty sum)."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    if m == 0 or n == 0:  # pragma: no cover - empty input, no launch
        return c, True
    if k == 0:  # pragma: no cover - K = 0, no launch
        return c.zero_(), True
    return c, False


def needs_padding(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the rows of a or b (K and N elements long) miss 16-element alignment, on a GPU.

    Such rows start at addresses that are not 16-byte aligned, and the K and N masks change at any
    element, so the kernel's loads fall back to one element at a time. Padding costs three copies
    (a, b in; c out), a few microseconds; it pays off several times over when K or N is like 1793.
    """
    k, n = b.shape
    return not interpreter_requested() and (k % ALIGN != 0 or n % ALIGN != 0)


def matmul_launch(a: torch.Tensor, b: torch.Tensor, pad: bool | None = None) -> torch.Tensor:
    """c = a @ b for contiguous 2-D a (M, K) and b (K, N); pad=None pads only where needs_padding says so."""
    c, done = _new_product(a, b)
    if done:  # pragma: no cover - empty input or K = 0, no launch
        return c
    if needs_padding(a, b) if pad is None else pad:  # pragma: no cover - GPU only: padding
        return _padded_matmul(a, b, c)
    _launch(a, b, c)
    return c


def _padded_matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:  # pragma: no cover - GPU only: padding
    """c = a @ b through copies of a and b whose rows are padded to ALIGN elements with zeros.

    Zero padding along K adds nothing to the dot products; the padded columns of c are cropped off.
    """
    (m, k), n = a.shape, b.shape[1]
    kp, np_ = _round_up(k, ALIGN), _round_up(n, ALIGN)
    a_p = a if kp == k else _padded_copy(a, m, kp)  # (M, Kp)
    b_p = b if (kp, np_) == (k, n) else _padded_copy(b, kp, np_)  # (Kp, Np)
    if np_ == n:
        _launch(a_p, b_p, c)
        return c
    c_p = torch.empty((m, np_), dtype=a.dtype, device=a.device)  # (M, Np)
    _launch(a_p, b_p, c_p)
    return _padded_copy(c_p, m, n)


def _tma_ready(t: torch.Tensor) -> bool:
    """Whether a descriptor can be made over t as it is: rows and base 16-byte aligned (the copy engine's rule)."""
    return t.stride(0) * t.element_size() % 16 == 0 and t.data_ptr() % 16 == 0


def matmul_tma_launch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """c = a @ b for contiguous 2-D a (M, K) and b (K, N) with the TMA kernel. Rows that a descriptor cannot take
    (K or N elements that are not a multiple of 16 bytes) are copied into padded buffers first, as in matmul."""
    m, k = a.shape
    n = b.shape[1]
    c, done = _new_product(a, b)
    if done:  # pragma: no cover - empty input or K = 0, no launch
        return c
    if _tma_ready(a) and _tma_ready(b) and _tma_ready(c):
        _launch_tma(a, b, c)
        return c
    multiple = 16 // a.element_size()  # elements in 16 bytes
    kp, np_ = _round_up(k, multiple), _round_up(n, multiple)
    a_p = a if kp == k and _tma_ready(a) else _padded_copy(a, m, kp)  # (M, Kp): zeros past K add nothing to the sums
    b_p = b if (kp, np_) == (k, n) and _tma_ready(b) else _padded_copy(b, kp, np_)  # (Kp, Np)
    if np_ == n and _tma_ready(c):
        _launch_tma(a_p, b_p, c)
        return c
    c_p = torch.empty((m, np_), dtype=a.dtype, device=a.device)  # (M, Np)
    _launch_tma(a_p, b_p, c_p)
    return _padded_copy(c_p, m, n)


def tma_programs(tiles: int, sms: int) -> int:
    """Programs of the persistent TMA launch: one per SM at most, and no more than keep the fewest rounds of tiles,
    so that every program takes the same number of tiles or one fewer.

    512 tiles on 132 SMs take 4 rounds whether 132 programs share them (116 taking 4, 16 taking 3) or 128 (4 each);
    measured on an H100, the 128 ran 1% faster at 4096^3 and 1.3-2% at 8192^3, and 124 or fewer, which need a fifth
    round, 0.82x (results/h100/tiling_tma_probe_programs.json)."""
    return cdiv(tiles, cdiv(tiles, sms))


def _launch_tma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    """c = a @ b with the TMA kernel, every operand's rows 16-byte aligned, with the tile tma_tile chooses for the
    output's shape."""
    _launch_tma_tile(a, b, c, tma_tile(device_of(a), a.dtype, a.shape[0], b.shape[1]))


def _launch_tma_tile(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, cfg: dict) -> None:
    """c = a @ b with the TMA kernel and this tile, on tma_programs(tiles, SMs) programs."""
    m, k = a.shape
    n = b.shape[1]
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
    b_desc = TensorDescriptor.from_tensor(b, [bk, bn])
    c_desc = TensorDescriptor.from_tensor(c, [bm, bn // 2])
    tiles = cdiv(m, bm) * cdiv(n, bn)
    launch(_matmul_tma_kernel, (tma_programs(tiles, device_of(a).sms),),
        a_desc, b_desc, c_desc, m, n, k,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=cfg["group_m"], num_stages=cfg["num_stages"], num_warps=cfg["num_warps"],
    )  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Custom ops: the launchers as PyTorch operators (course/ops.py), so torch.compile and CUDA graphs take them whole
# --------------------------------------------------------------------------------------------------


OPS = OpLibrary(__file__)

def _matmul_fake(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return a.new_empty((a.shape[0], b.shape[1]))


@OPS.op("matmul", "(Tensor a, Tensor b) -> Tensor", _matmul_fake)
def matmul_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return matmul_launch(a, b)


@OPS.op("matmul_tma", "(Tensor a, Tensor b) -> Tensor", _matmul_fake)
def matmul_tma_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return matmul_tma_launch(a, b)


# --------------------------------------------------------------------------------------------------
# Module: the public API
# --------------------------------------------------------------------------------------------------


def _check_matmul(a: torch.Tensor, b: torch.Tensor, fn: str = "matmul") -> None:
    """The checks of `matmul` (and `matmul_tma`, named by fn): a TypeError or ValueError that says what to pass."""
    check_tensor(fn, "a", a, ndim=2)
    check_tensor(fn, "b", b, ndim=2)
    check_same(fn, "dtype", a=a, b=b)
    check_same(fn, "device", a=a, b=b)
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"{fn}: the inner dimensions must agree, but a is {tuple(a.shape)} and b is {tuple(b.shape)}: "
            f"a.shape[1] ({a.shape[1]}) must equal b.shape[0] ({b.shape[0]})."
        )


def _check_matmul_tma(a: torch.Tensor, b: torch.Tensor) -> None:
    _check_matmul(a, b, "matmul_tma")


_CHECKED_MATMUL = CheckedOnce(_check_matmul)
_CHECKED_MATMUL_TMA = CheckedOnce(_check_matmul_tma)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b with float32 accumulation, returned in the inputs' dtype.

    a: (M, K), b: (K, N), both float32, float16 or bfloat16, the same dtype and device, contiguous.
    Returns a new (M, N) tensor. float32 inputs get float32 accuracy (three tf32 products per step).
    """
    _CHECKED_MATMUL(a, b)  # the checks, once per signature (CheckedOnce)
    return matmul_op(a, b)


def matmul_tma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """matmul(a, b) with the persistent TMA kernel (bonus): the same contract, the same result.

    On Hopper (sm_90) and newer GPUs the descriptors' tiles move through the tensor-memory accelerator; on older
    GPUs and the CPU interpreter Triton turns the same descriptor loads into ordinary loads.
    """
    _CHECKED_MATMUL_TMA(a, b)
    return matmul_tma_op(a, b)
