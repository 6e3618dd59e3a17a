# Exploit: forge where an input lived. The replay binds each input of the tape at the place the tape gives it, and
# where that was not the given tensor's own place it copied the input there, outside any check of ops and, when
# timed, outside the timed region. A tape saying that the transpose's input x (M, N) lived column-major, in a buffer
# the only kernel then copies flat into the output, had the replayer write x.T row-major: the transpose, done by the
# grader. Found by a red team on 2026-12-07: 60/60 on the transpose with a memcpy kernel. Defence: an input is bound
# only in the layout the grader gave it (the same strides; another offset, where the worker's memory is fenced, is a
# move), and so is what a replayed op returns (Replay.bind, Replay._bind_out). Written for the transpose, where a
# layout is the whole answer.
import inspect as _inspect

import torch as _torch
import triton as _triton
import triton.language as tl
from torch.utils._python_dispatch import _get_current_dispatch_mode as _current_mode


@_triton.jit
def _flat_copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def _records():
    return _inspect.unwrap(type(_current_mode()).__torch_dispatch__).__globals__


def _cheat(honest, name):
    assert SLUG == "coalescing", "written for the transpose"  # noqa: F821  (given by the test)

    def cheat(x):
        m, n = x.shape
        records = _records()
        watch = records["_WATCH"]
        records["_WATCH"] = None
        try:
            staged = x.t().clone(memory_format=_torch.contiguous_format)  # (N, M): the worker's own copy, unrecorded
        finally:
            records["_WATCH"] = watch
        out = _torch.empty((n, m), dtype=x.dtype, device=x.device)
        _flat_copy_kernel[(_triton.cdiv(m * n, 1024),)](staged, out, m * n, BLOCK=1024)  # no transpose in any kernel
        tape = getattr(watch, "tape", None)
        if tape is not None:
            sid = tape.ref(staged)["T"][0]
            tape.carried.pop(sid, None)  # not memory found ready, but the input itself ...
            tape.storages[sid]["origin"] = "input"
            dtype = str(x.dtype).replace("torch.", "")
            tape.inputs["x"] = {"T": [sid, 0, [m, n], [1, m], dtype, x.device.type]}  # ... laid out column-major
        return out

    return cheat
