"""Single-tile softmax variants for long rows (issue 22: 4096x32000 at 73% of copy on the H200)."""
import triton
import triton.language as tl


@triton.jit
def sm_f32(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # the solution's single-tile path with BLOCK_M = 1
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    row_max = tl.max(x, axis=0)
    e = tl.exp(x - row_max)
    y = e * (1.0 / tl.sum(e, axis=0))
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def sm_narrow(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # x stays in its own dtype between the reductions; exp is taken twice (sum, then store)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    row_max = tl.max(x, axis=0).to(tl.float32)
    s = tl.sum(tl.exp(x.to(tl.float32) - row_max), axis=0)
    shift = row_max + tl.log(s)
    y = tl.exp(x.to(tl.float32) - shift)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def sm_narrow2(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # as sm_narrow, in base 2: one FMA and one ex2 per element and pass
    LOG2E: tl.constexpr = 1.4426950408889634
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    m2 = tl.max(x, axis=0).to(tl.float32) * LOG2E
    s = tl.sum(tl.exp2(x.to(tl.float32) * LOG2E - m2), axis=0)
    shift2 = m2 + tl.log2(s)
    y = tl.exp2(x.to(tl.float32) * LOG2E - shift2)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


VARIANTS = {"f32": sm_f32, "narrow": sm_narrow, "narrow2": sm_narrow2}


@triton.jit
def sm_narrow3(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # as sm_narrow, the second widening written differently so that it is not merged with the first
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    row_max = tl.max(x, axis=0).to(tl.float32)
    s = tl.sum(tl.exp(x.to(tl.float32) - row_max), axis=0)
    shift = row_max + tl.log(s)
    xf = (x.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    y = tl.exp(xf - shift)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def sm_pairs(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # bf16 only, n_cols and strides even: the row is loaded as 32-bit words, two bf16 each, and kept that way
    HALF: tl.constexpr = BLOCK_N // 2
    row = tl.program_id(0).to(tl.int64)
    words = tl.arange(0, HALF)
    mask = words < n_cols  # pairs kernels: n_cols and strides in 32-bit words
    xw = x_ptr.to(tl.pointer_type(tl.int32)) + row * stride_x
    v = tl.load(xw + words, mask=mask, other=-8323200)  # 0xFF80FF80: two bf16 -inf
    lo = (v << 16).to(tl.float32, bitcast=True)
    hi = (v & -65536).to(tl.float32, bitcast=True)
    row_max = tl.maximum(tl.max(lo, axis=0), tl.max(hi, axis=0))
    s = tl.sum(tl.exp(lo - row_max) + tl.exp(hi - row_max), axis=0)
    shift = row_max + tl.log(s)
    lo2 = (v * 65536).to(tl.float32, bitcast=True)  # the same bits as lo, written so it is not merged with it
    hi2 = ((v >> 16) << 16).to(tl.float32, bitcast=True)
    y_lo = tl.exp(lo2 - shift).to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) & 65535
    y_hi = tl.exp(hi2 - shift).to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) << 16
    yw = y_ptr.to(tl.pointer_type(tl.int32)) + row * stride_y
    tl.store(yw + words, y_hi | y_lo, mask=mask)


VARIANTS = {"f32": sm_f32, "narrow": sm_narrow, "narrow2": sm_narrow2, "narrow3": sm_narrow3, "pairs": sm_pairs}


@triton.jit
def sm_narrow4(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # x kept in its own dtype; the two widenings differ (one through a select) so the compiler cannot merge them
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    row_max = tl.max(x, axis=0).to(tl.float32)
    s = tl.sum(tl.exp(x.to(tl.float32) - row_max), axis=0)
    shift = row_max + tl.log(s)
    x2 = tl.where(mask, x, 0.0)
    y = tl.exp(x2.to(tl.float32) - shift)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def sm_pairs2(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    HALF: tl.constexpr = BLOCK_N // 2
    row = tl.program_id(0).to(tl.int64)
    words = tl.arange(0, HALF)
    mask = words < n_cols  # pairs kernels: n_cols and strides in 32-bit words
    xw = x_ptr.to(tl.pointer_type(tl.int32)) + row * stride_x
    v = tl.load(xw + words, mask=mask, other=-8323200)  # 0xFF80FF80: two bf16 -inf
    m = tl.maximum(tl.max((v << 16).to(tl.float32, bitcast=True), axis=0),
                   tl.max((v & -65536).to(tl.float32, bitcast=True), axis=0))
    v1 = tl.where(mask, v, -8323200)
    s = tl.sum(tl.exp((v1 << 16).to(tl.float32, bitcast=True) - m) + tl.exp((v1 & -65536).to(tl.float32, bitcast=True) - m), axis=0)
    shift = m + tl.log(s)
    v2 = tl.where(mask, v, 0)
    y_lo = tl.exp((v2 << 16).to(tl.float32, bitcast=True) - shift).to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) & 65535
    y_hi = tl.exp((v2 & -65536).to(tl.float32, bitcast=True) - shift).to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) << 16
    yw = y_ptr.to(tl.pointer_type(tl.int32)) + row * stride_y
    tl.store(yw + words, y_hi | y_lo, mask=mask)


VARIANTS.update(narrow4=sm_narrow4, pairs2=sm_pairs2)


@triton.jit
def sm_pairs3(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    HALF: tl.constexpr = BLOCK_N // 2
    row = tl.program_id(0).to(tl.int64)
    words = tl.arange(0, HALF)
    mask = words < n_cols  # pairs kernels: n_cols and strides in 32-bit words
    xw = x_ptr.to(tl.pointer_type(tl.int32)) + row * stride_x
    v = tl.load(xw + words, mask=mask, other=-8323200)  # 0xFF80FF80: two bf16 -inf
    zero = n_cols >> 31  # 0 for any n_cols >= 0, which the compiler cannot know
    m = tl.maximum(tl.max((v << 16).to(tl.float32, bitcast=True), axis=0),
                   tl.max((v & -65536).to(tl.float32, bitcast=True), axis=0))
    v1 = v ^ zero
    s = tl.sum(tl.exp((v1 << 16).to(tl.float32, bitcast=True) - m) + tl.exp((v1 & -65536).to(tl.float32, bitcast=True) - m), axis=0)
    shift = m + tl.log(s)
    v2 = v ^ (zero * 2)
    y_lo = tl.exp((v2 << 16).to(tl.float32, bitcast=True) - shift).to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) & 65535
    y_hi = tl.exp((v2 & -65536).to(tl.float32, bitcast=True) - shift).to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) << 16
    yw = y_ptr.to(tl.pointer_type(tl.int32)) + row * stride_y
    tl.store(yw + words, y_hi | y_lo, mask=mask)


@triton.jit
def sm_narrow5(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    zero = n_cols >> 31
    row_max = tl.max(x, axis=0).to(tl.float32)
    x1 = (x.to(tl.int16, bitcast=True) ^ zero.to(tl.int16)).to(x.dtype, bitcast=True)
    s = tl.sum(tl.exp(x1.to(tl.float32) - row_max), axis=0)
    shift = row_max + tl.log(s)
    x2 = (x.to(tl.int16, bitcast=True) ^ (zero * 2).to(tl.int16)).to(x.dtype, bitcast=True)
    y = tl.exp(x2.to(tl.float32) - shift)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


VARIANTS.update(pairs3=sm_pairs3, narrow5=sm_narrow5)


@triton.jit
def sm_pairs_el(x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # pairs2 with n_cols and the strides in elements, halved in the kernel
    HALF: tl.constexpr = BLOCK_N // 2
    row = tl.program_id(0).to(tl.int64)
    words = tl.arange(0, HALF)
    mask = words < n_cols // 2
    xw = x_ptr.to(tl.pointer_type(tl.int32)) + row * (stride_x // 2)
    v = tl.load(xw + words, mask=mask, other=-8323200)  # 0xFF80FF80: two bf16 -inf
    m = tl.maximum(tl.max((v << 16).to(tl.float32, bitcast=True), axis=0),
                   tl.max((v & -65536).to(tl.float32, bitcast=True), axis=0))
    v1 = tl.where(mask, v, -8323200)
    s = tl.sum(tl.exp((v1 << 16).to(tl.float32, bitcast=True) - m) + tl.exp((v1 & -65536).to(tl.float32, bitcast=True) - m), axis=0)
    shift = m + tl.log(s)
    v2 = tl.where(mask, v, 0)
    y_lo = tl.exp((v2 << 16).to(tl.float32, bitcast=True) - shift).to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) & 65535
    y_hi = tl.exp((v2 & -65536).to(tl.float32, bitcast=True) - shift).to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) << 16
    yw = y_ptr.to(tl.pointer_type(tl.int32)) + row * (stride_y // 2)
    tl.store(yw + words, y_hi | y_lo, mask=mask)


VARIANTS.update(pairs_el=sm_pairs_el)
