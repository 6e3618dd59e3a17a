"""Assignment 02, operator fusion: GeLU (tanh approximation) and a row softmax, each one Triton kernel.

    gelu(x)    = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))     as F.gelu(x, approximate="tanh")
    softmax(x) = exp(x - max(x)) / sum(exp(x - max(x)))                       over the last dimension

The handout is README.md beside this file. Fill in every region marked TODO; keep the signatures and
the launch wrappers as they are: the grader calls `gelu(x)` and `softmax(x)`.
Grade yourself with `python -m autograder grade fusion`.
"""

from __future__ import annotations

import course.env  # noqa: F401  (turns the CPU interpreter on when there is no GPU, before triton loads)
import torch
import triton
import triton.language as tl

from course.configs import ConfigTable, SearchSpace, ceil_bucket, grid
from course.device import Device, device_of
from course.launch import aligned, cdiv, launch, next_power_of_2
from course.ops import OpLibrary
from course.validate import check_tensor

# --------------------------------------------------------------------------------------------------
# Kernels: GeLU, and softmax over the last dimension
# --------------------------------------------------------------------------------------------------

# exp(a) = 2^(a * log2(e)). The softmax writes its exponentials as tl.exp2((a) * LOG2E): that compiles to one
# `ex2.approx.ftz` (results under 2^-126 flush to 0, far below any tolerance), where tl.exp compiles to
# `ex2.approx` without ftz, whose handling of subnormal results adds instructions to every exponential:
# 1.1x on the H200 for rows of 32000 bfloat16 (results/h200/softmax_exp2.md).
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _gelu_kernel(
    x_ptr,  # (n_elements,) input, contiguous
    y_ptr,  # (n_elements,) output, same dtype as x
    n_elements,
    BLOCK: tl.constexpr,  # elements per program (a power of two)
):
    """Each program maps BLOCK consecutive elements; float32 inside, rounded once on the store."""
    ### BEGIN SOLUTION fusion.gelu
    #> Program p owns elements p*BLOCK .. p*BLOCK + BLOCK - 1, masked at n_elements; compute
    #> y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))) in float32 and store it in y's dtype.
    #> More, one step at a time: python -m autograder hint fusion.gelu
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2/pi) * (x + 0.044715 x^3)
    y = x / (1.0 + tl.exp(-2.0 * u))  # 0.5 * (1 + tanh(u)) == sigmoid(2u)
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)
    ### END SOLUTION


@triton.jit
def _halves(w):  # pragma: no cover - the softmax's PAIRS path
    """The two bfloat16 values in each 32-bit word of w, low half first, widened to float32.

    A bfloat16 is the top half of the float32 of the same value, so widening one is a shift: integer
    instructions, which an SM issues four times as fast as the conversions a float16 would need."""
    lo = (w << 16).to(tl.float32, bitcast=True)
    hi = (w & -65536).to(tl.float32, bitcast=True)  # -65536 == 0xFFFF0000: the high half, in place
    return lo, hi


@triton.jit
def _word_of(lo, hi):  # pragma: no cover - the softmax's PAIRS path
    """32-bit words holding the 16-bit values lo (low half) and hi (high half): what _halves unpacks."""
    lo_bits = lo.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi_bits = hi.to(tl.int16, bitcast=True).to(tl.int32) << 16
    return hi_bits | lo_bits


@triton.jit
def _softmax_kernel(
    x_ptr,  # (M, N) input, rows contiguous
    y_ptr,  # (M, N) output, same dtype as x
    part_ptr,  # (M, cdiv(N, BLOCK_N), 2) float32, rows longer than a tile only: each chunk's (max, sum of exp)
    count_ptr,  # (M + 1,) int32, zeros, rows longer than a tile only: chunks counted in per row, then a ticket counter
    n_rows,
    n_cols,
    stride_x,  # elements between consecutive rows of x
    stride_y,  # elements between consecutive rows of y
    BLOCK_M: tl.constexpr,  # rows per program (1 for rows longer than a tile)
    BLOCK_N: tl.constexpr,  # columns per tile (a power of two)
    SINGLE_TILE: tl.constexpr,  # BLOCK_N >= n_cols: the whole row fits in one tile
    PAIRS: tl.constexpr,  # SINGLE_TILE, bfloat16 x, n_cols and strides even: the row may be read as 32-bit words
    CHUNKS: tl.constexpr,  # not SINGLE_TILE: a power of two >= cdiv(n_cols, BLOCK_N), the chunks of one row
    WAIT: tl.constexpr,  # not SINGLE_TILE: the programs of a row may wait for each other (a GPU, not the interpreter)
):
    """Each program computes the softmax of BLOCK_M rows, or of one BLOCK_N-column chunk of a longer row; all
    arithmetic is float32, rounded once on the store."""
    ### BEGIN SOLUTION fusion.softmax
    #> One program owns BLOCK_M rows (mask rows past n_rows and columns past n_cols); subtract the row's
    #> max before exp. SINGLE_TILE false: a row is split into chunks of BLOCK_N, one program each, which
    #> exchange (max, sum) through part_ptr and count_ptr (README.md, "Rows longer than a tile"). PAIRS and
    #> WAIT are speed-ups you may ignore (the result is the same; README.md says what they allow).
    #> More, one step at a time: python -m autograder hint fusion.softmax
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < n_rows
    rows = rows.to(tl.int64)  # row * stride overflows int32 past 2**31 elements
    cols = tl.arange(0, BLOCK_N)
    x_rows = x_ptr + rows[:, None] * stride_x
    y_rows = y_ptr + rows[:, None] * stride_y
    if SINGLE_TILE and PAIRS:  # pragma: no cover - bfloat16 rows only; tests/test_softmax_pairs.py runs it
        # A register holds 32 bits, and a 16-bit value kept alone fills one: held that way (or widened to
        # float32) a row of 32768 columns takes so many registers that one program fills an SM, which then
        # waits on each row's load before it reduces and stores. Held as 32-bit words, two values each, it
        # takes half, two programs share an SM, and one's load overlaps the other's arithmetic. Each step
        # below widens the words afresh, from a copy filled differently, so that the compiler keeps only the
        # words alive across a reduction and not their float32 halves (it would merge identical widenings).
        words = tl.arange(0, BLOCK_N // 2)
        wmask = row_mask[:, None] & (words[None, :] < n_cols // 2)
        neg_inf = tl.full([BLOCK_M, BLOCK_N // 2], float("-inf"), tl.float32).to(tl.bfloat16)
        both_inf = _word_of(neg_inf, neg_inf)  # a word whose two values are -inf
        w = tl.load(x_rows.to(tl.pointer_type(tl.int32)) + words[None, :], mask=wmask, other=both_inf)
        lo, hi = _halves(w)
        row_max = tl.max(tl.maximum(lo, hi), axis=1)
        lo, hi = _halves(tl.where(wmask, w, both_inf))
        e_sum = tl.sum(tl.exp2((lo - row_max[:, None]) * LOG2E) + tl.exp2((hi - row_max[:, None]) * LOG2E), axis=1)
        inv_sum = 1.0 / e_sum
        lo, hi = _halves(tl.where(wmask, w, 0))
        y_lo = tl.exp2((lo - row_max[:, None]) * LOG2E) * inv_sum[:, None]
        y_hi = tl.exp2((hi - row_max[:, None]) * LOG2E) * inv_sum[:, None]
        y = _word_of(y_lo.to(tl.bfloat16), y_hi.to(tl.bfloat16))
        tl.store(y_rows.to(tl.pointer_type(tl.int32)) + words[None, :], y, mask=wmask)
    elif SINGLE_TILE:
        # The row stays in registers between the reductions and the store: one read of x.
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_rows + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
        row_max = tl.max(x, axis=1)
        e = tl.exp2((x - row_max[:, None]) * LOG2E)  # in (0, 1]; the masked lanes give 2^-inf = 0
        y = e * (1.0 / tl.sum(e, axis=1))[:, None]
        tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # The row is longer than one program holds, so it is split: program (row, chunk) holds columns
        # chunk * BLOCK_N .. + BLOCK_N in registers, publishes the chunk's max m_c and sum s_c of exp(x - m_c),
        # and counts itself in. Once every chunk of the row is in, the pairs merge as in the online softmax
        # (m = max m_c, s = sum s_c exp(m_c - m)) and the chunk is written from registers: x read once.
        n_chunks = tl.cdiv(n_cols, BLOCK_N)
        if WAIT:  # pragma: no cover - GPU only: the interpreter runs the form below, where nobody waits
            # Work is handed out by a ticket taken as the program starts, not by program_id: a program then
            # waits only for chunks whose tickets were taken before its own (started already) or after (by
            # programs that start later, which they can: the launcher keeps a row's chunks within the SM count).
            pid = tl.atomic_add(count_ptr + n_rows, 1, sem="relaxed")
        else:
            pid = tl.program_id(0)
        row = pid // n_chunks
        c = (pid - row * n_chunks) * BLOCK_N + cols
        mask = c < n_cols
        x_row = x_ptr + row.to(tl.int64) * stride_x
        y_row = y_ptr + row.to(tl.int64) * stride_y
        x = tl.load(x_row + c, mask=mask, other=-float("inf")).to(tl.float32)  # (BLOCK_N,)
        m_c = tl.max(x, axis=0)
        m_sub = tl.where(m_c == -float("inf"), 0.0, m_c)  # a chunk of only -inf sums to 0, not NaN
        e = tl.exp2((x - m_sub) * LOG2E)  # exp(x - m_c), kept in place of x: one exponential per element
        s_c = tl.sum(e, axis=0)
        tl.store(part_ptr + pid.to(tl.int64) * 2, m_c)  # part[row, chunk] = (m_c, s_c)
        tl.store(part_ptr + pid.to(tl.int64) * 2 + 1, s_c)
        tl.debug_barrier()  # every thread's stores before the count that announces them
        arrived = tl.atomic_add(count_ptr + row, 1, sem="acq_rel") + 1
        if WAIT:  # pragma: no cover - GPU only
            while arrived < n_chunks:
                arrived = tl.atomic_add(count_ptr + row, 0, sem="acquire")
        # The interpreter runs programs one after another, where a wait would never end: there the last
        # program of a row to count itself in writes the whole row, reading x again.
        if arrived == n_chunks:
            k = tl.arange(0, CHUNKS)
            parts = part_ptr + (row.to(tl.int64) * n_chunks + k) * 2
            m_k = tl.load(parts, mask=k < n_chunks, other=-float("inf"), volatile=True)  # (CHUNKS,)
            s_k = tl.load(parts + 1, mask=k < n_chunks, other=0.0, volatile=True)
            row_max = tl.max(m_k, axis=0)
            inv_sum = 1.0 / tl.sum(s_k * tl.exp2((m_k - row_max) * LOG2E), axis=0)
            if WAIT:  # pragma: no cover - GPU only
                # exp(x - row_max) / sum = exp(x - m_c) * (exp(m_c - row_max) / sum): one factor for the chunk.
                # (m_c, not m_sub: a chunk of only -inf gets the factor 0, its e is 0, and 0 * 0 is no NaN.)
                y = e * (tl.exp2((m_c - row_max) * LOG2E) * inv_sum)
                tl.store(y_row + c, y.to(y_ptr.dtype.element_ty), mask=mask)
            else:
                for start in range(0, n_cols, BLOCK_N):
                    c = start + cols
                    mask = c < n_cols
                    x = tl.load(x_row + c, mask=mask, other=-float("inf")).to(tl.float32)
                    y = tl.exp2((x - row_max) * LOG2E) * inv_sum
                    tl.store(y_row + c, y.to(y_ptr.dtype.element_ty), mask=mask)
    ### END SOLUTION


# --------------------------------------------------------------------------------------------------
# Configuration: launch settings per GPU and shape, from configs.json
# --------------------------------------------------------------------------------------------------


# A softmax row this long or shorter is held in registers whole by one program; longer rows are split into
# chunks of the table's "tile", one program each, held in registers too (results/<gpu>/softmax_split.md).
MAX_FUSED_COLS = 32768

# solutions/fusion/configs.json, per GPU: "gelu" (one bucket: the call is elementwise) and "softmax" by
# row length (short rows packed `elements` to a program). The H200 entry came from the sweeps in
# results/h200/fusion_tune.json (4 warps and 1024 to 4096 elements per GeLU program all reached 97-98% of
# copy bandwidth); long rows' chunks from results/<gpu>/softmax_split_probe.json (8192 columns and 4 warps a
# program: the fastest or within 2% of it at 1024 x 128256 on both GPUs).
CONFIGS = ConfigTable.beside(__file__, "fusion")
SOFTMAX_BUCKETS = (1024, 2048, 4096, 8192, 16384, MAX_FUSED_COLS)


@CONFIGS.cached
def gelu_config(device: Device, n_elements: int) -> tuple[int, int]:
    """(BLOCK, num_warps) of the GeLU kernel."""
    s = CONFIGS.pick(device, "gelu", "all")
    return s["block"], s["num_warps"]


@CONFIGS.cached
def softmax_config(device: Device, n_rows: int, n_cols: int) -> tuple[int, int, int, bool]:
    """(BLOCK_M, BLOCK_N, num_warps, pairs) of the softmax kernel for an (n_rows, n_cols) input; pairs: the
    table measured bfloat16 rows of this length faster held as 32-bit words (the kernel's PAIRS), where they can be."""
    block_n = next_power_of_2(n_cols)
    s = CONFIGS.pick(device, "softmax", ceil_bucket(block_n, SOFTMAX_BUCKETS, "cols", f"cols>{MAX_FUSED_COLS}"))
    if block_n > MAX_FUSED_COLS:
        return 1, s["tile"], s["num_warps"], False
    # Short rows are packed several to a program so that each program moves enough bytes.
    block_m = max(1, min(s["elements"] // block_n, s["max_rows"]))
    return min(block_m, next_power_of_2(n_rows)), block_n, s["num_warps"], s.get("pairs", False)


# What `python -m autograder tune fusion` tries, around the H200's choices.
def _bf16(*shapes: list[int]) -> list[dict]:
    return [{"shape": s, "dtype": "bfloat16"} for s in shapes]


def _rows_of(n_cols: int, warps: list[int], pairs: tuple[bool, ...] = (False,)) -> SearchSpace:
    return SearchSpace("softmax", "fusion.softmax", {f"cols<={n_cols}": _bf16([(64 << 20) // n_cols, n_cols])},
                       grid(elements=[n_cols], max_rows=[64], num_warps=warps, pairs=list(pairs)))


SEARCH_SPACE = [
    SearchSpace("gelu", "fusion.gelu", {"all": _bf16([8192, 8192])}, grid(block=[1024, 2048, 4096], num_warps=[4, 8])),
    SearchSpace("softmax", "fusion.softmax", {"cols<=1024": _bf16([65536, 1024])},
                grid(elements=[2048, 4096, 8192], max_rows=[64], num_warps=[4, 8])),
    _rows_of(2048, [4, 8]),
    _rows_of(4096, [4, 8, 16]),
    _rows_of(8192, [8, 16, 32]),
    _rows_of(16384, [8, 16, 32]),
    _rows_of(MAX_FUSED_COLS, [16, 32], pairs=(False, True)),
    SearchSpace("softmax", "fusion.softmax", {f"cols>{MAX_FUSED_COLS}": _bf16([1024, 128256])},
                grid(tile=[4096, 8192], num_warps=[2, 4, 8]) + grid(tile=[16384], num_warps=[4, 8])),
]  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Launchers: inputs already checked, settings from the configuration
# --------------------------------------------------------------------------------------------------


def gelu_forward(x: torch.Tensor) -> torch.Tensor:
    """Launch the GeLU kernel on x viewed as one flat vector; returns a new tensor shaped like x."""
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:  # pragma: no cover - empty input, no launch
        return y
    block, num_warps = gelu_config(device_of(x), n)
    launch(_gelu_kernel, (cdiv(n, block),), x, y, n, BLOCK=block, num_warps=num_warps)
    return y


def chunks_may_wait(device: Device, n_chunks: int) -> bool:
    """Whether the n_chunks programs of one split row may wait for each other (the kernel's WAIT).

    A program that waits holds its SM until the rest of its row has started. All the chunks of a row can run at
    once when there are no more of them than SMs (an SM holds at least one program), so every wait ends. Longer
    rows take the form in which nobody waits, and so does the interpreter, which runs programs one at a time."""
    return not device.interpreter and n_chunks <= device.sms


def softmax_forward(x: torch.Tensor) -> torch.Tensor:
    """Launch the softmax kernel on x viewed as (M, N); returns a new tensor shaped like x."""
    n_cols = x.shape[-1]
    y = torch.empty_like(x)
    if x.numel() == 0:  # pragma: no cover - empty input, no launch
        return y
    x2 = x.view(-1, n_cols)  # (M, N)
    y2 = y.view(-1, n_cols)
    n_rows = x2.shape[0]
    device = device_of(x)
    block_m, block_n, num_warps, pairs = softmax_config(device, n_rows, n_cols)
    if block_n >= n_cols:
        # Words of two bfloat16 (a float16 would need conversions to widen, which cost more than the words save:
        # 0.94x on the H100, results/h100/softmax_pairs.md): the row's length even, its start 4-byte aligned.
        pairs = pairs and x.dtype == torch.bfloat16 and n_cols % 2 == 0 and aligned(x2, 4)
        launch(_softmax_kernel, (cdiv(n_rows, block_m),),
            x2, y2, y2, y2, n_rows, n_cols, x2.stride(0), y2.stride(0),  # part_ptr and count_ptr are not read
            BLOCK_M=block_m, BLOCK_N=block_n, SINGLE_TILE=True, PAIRS=pairs, CHUNKS=1, WAIT=False,
            num_warps=num_warps,
        )  # fmt: skip
        return y
    n_chunks = cdiv(n_cols, block_n)
    part = torch.empty((n_rows, n_chunks, 2), dtype=torch.float32, device=x.device)
    count = torch.zeros((n_rows + 1,), dtype=torch.int32, device=x.device)
    launch(_softmax_kernel, (n_rows * n_chunks,),
        x2, y2, part, count, n_rows, n_cols, x2.stride(0), y2.stride(0),
        BLOCK_M=1, BLOCK_N=block_n, SINGLE_TILE=False, PAIRS=False, CHUNKS=next_power_of_2(n_chunks),
        WAIT=chunks_may_wait(device, n_chunks), num_warps=num_warps,
    )  # fmt: skip
    return y


# --------------------------------------------------------------------------------------------------
# Custom ops: the launchers as PyTorch operators (course/ops.py), so torch.compile and CUDA graphs take them whole
# --------------------------------------------------------------------------------------------------


OPS = OpLibrary(__file__)

def _like_x(x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - run by torch.compile and opcheck (tests/test_custom_ops.py)
    return torch.empty_like(x)


@OPS.op("gelu", "(Tensor x) -> Tensor", _like_x)
def gelu_op(x: torch.Tensor) -> torch.Tensor:
    return gelu_forward(x)


@OPS.op("softmax", "(Tensor x) -> Tensor", _like_x)
def softmax_op(x: torch.Tensor) -> torch.Tensor:
    return softmax_forward(x)


# --------------------------------------------------------------------------------------------------
# Module: the public API
# --------------------------------------------------------------------------------------------------


def gelu(x: torch.Tensor) -> torch.Tensor:
    """GeLU with the tanh approximation, elementwise: equals F.gelu(x, approximate="tanh").

    x: any shape, float32, float16 or bfloat16, contiguous. Returns a new tensor shaped like x, in x's dtype.
    """
    check_tensor("gelu", "x", x)
    return gelu_op(x)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, numerically stable: equals torch.softmax(x, dim=-1).

    x: (..., N) float32, float16 or bfloat16, contiguous, N >= 1. Returns a new tensor shaped like x,
    in x's dtype.
    """
    check_tensor("softmax", "x", x, min_ndim=1)
    return softmax_op(x)
