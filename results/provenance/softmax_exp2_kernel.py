"""The solution's PAIRS path written out as one kernel, with switches: EXP2 0 tl.exp(a), 2 tl.exp2((a) * LOG2E),
1 tl.exp2 with the scale folded into one FMA; EVICT an evict_first load; STREAM a .cs store. Timed by
softmax_exp2_variants.py, compiled to SASS by softmax_exp2_sass.py."""
import triton
import triton.language as tl

from solutions.fusion.kernels import _halves, _word_of


@triton.jit
def pairs_var(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr, EXP2: tl.constexpr,
              EVICT: tl.constexpr, STREAM: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    row = tl.program_id(0).to(tl.int64)
    words = tl.arange(0, BLOCK_N // 2)
    wmask = words < n_cols // 2
    neg_inf = tl.full([BLOCK_N // 2], float("-inf"), tl.float32).to(tl.bfloat16)
    both_inf = _word_of(neg_inf, neg_inf)
    xw = (x_ptr + row * stride_x).to(tl.pointer_type(tl.int32))
    if EVICT:
        w = tl.load(xw + words, mask=wmask, other=both_inf, eviction_policy="evict_first")
    else:
        w = tl.load(xw + words, mask=wmask, other=both_inf)
    lo, hi = _halves(w)
    row_max = tl.max(tl.maximum(lo, hi), axis=0)
    lo, hi = _halves(tl.where(wmask, w, both_inf))
    if EXP2 == 1:
        m2 = row_max * LOG2E
        inv_sum = 1.0 / tl.sum(tl.exp2(lo * LOG2E - m2) + tl.exp2(hi * LOG2E - m2), axis=0)
    elif EXP2 == 2:
        inv_sum = 1.0 / tl.sum(tl.exp2((lo - row_max) * LOG2E) + tl.exp2((hi - row_max) * LOG2E), axis=0)
    else:
        inv_sum = 1.0 / tl.sum(tl.exp(lo - row_max) + tl.exp(hi - row_max), axis=0)
    lo, hi = _halves(tl.where(wmask, w, 0))
    if EXP2 == 1:
        y_lo = tl.exp2(lo * LOG2E - m2) * inv_sum
        y_hi = tl.exp2(hi * LOG2E - m2) * inv_sum
    elif EXP2 == 2:
        y_lo = tl.exp2((lo - row_max) * LOG2E) * inv_sum
        y_hi = tl.exp2((hi - row_max) * LOG2E) * inv_sum
    else:
        y_lo = tl.exp(lo - row_max) * inv_sum
        y_hi = tl.exp(hi - row_max) * inv_sum
    y = _word_of(y_lo.to(tl.bfloat16), y_hi.to(tl.bfloat16))
    yw = (y_ptr + row * stride_y).to(tl.pointer_type(tl.int32))
    if STREAM:
        tl.store(yw + words, y, mask=wmask, cache_modifier=".cs")
    else:
        tl.store(yw + words, y, mask=wmask)
