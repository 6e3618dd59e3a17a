"""Rows longer than a tile (1024x128256): keep the first HOLD columns in registers as 32-bit words (bfloat16 pairs)
and walk only the rest twice. Traffic 1 + (N - HOLD)/N reads + 1 write instead of 2 reads + 1 write."""
import triton
import triton.language as tl


@triton.jit
def _halves(w):
    lo = (w << 16).to(tl.float32, bitcast=True)
    hi = (w & -65536).to(tl.float32, bitcast=True)
    return lo, hi


@triton.jit
def _word_of(lo, hi):
    lo_bits = lo.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi_bits = hi.to(tl.int16, bitcast=True).to(tl.int32) << 16
    return hi_bits | lo_bits


@triton.jit
def sm_hold(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, HOLD: tl.constexpr, TILE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * stride_x
    yr = y_ptr + row * stride_y
    words = tl.arange(0, HOLD // 2)
    wmask = words < n_cols // 2  # always true here (n_cols > HOLD), which the compiler cannot know
    neg_inf = tl.full([HOLD // 2], float("-inf"), tl.float32).to(tl.bfloat16)
    both_inf = _word_of(neg_inf, neg_inf)
    w = tl.load(xr.to(tl.pointer_type(tl.int32)) + words, mask=wmask, other=both_inf)
    lo, hi = _halves(w)
    held_max = tl.max(tl.maximum(lo, hi), axis=0)
    cols = tl.arange(0, TILE)
    m = tl.full([TILE], -float("inf"), dtype=tl.float32)
    s = tl.zeros([TILE], dtype=tl.float32)
    for start in range(HOLD, n_cols, TILE):
        c = start + cols
        x = tl.load(xr + c, mask=c < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_sub = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - m_sub) + tl.exp(x - m_sub)
        m = m_new
    row_max = tl.maximum(tl.max(m, axis=0), held_max)
    lo, hi = _halves(tl.where(wmask, w, both_inf))
    total = tl.sum(tl.exp(lo - row_max) + tl.exp(hi - row_max), axis=0) + tl.sum(s * tl.exp(m - row_max), axis=0)
    inv_sum = 1.0 / total
    lo, hi = _halves(tl.where(wmask, w, 0))
    y = _word_of((tl.exp(lo - row_max) * inv_sum).to(tl.bfloat16), (tl.exp(hi - row_max) * inv_sum).to(tl.bfloat16))
    tl.store(yr.to(tl.pointer_type(tl.int32)) + words, y, mask=wmask)
    for start in range(HOLD, n_cols, TILE):
        c = start + cols
        mask = c < n_cols
        x = tl.load(xr + c, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(yr + c, (tl.exp(x - row_max) * inv_sum).to(tl.bfloat16), mask=mask)
