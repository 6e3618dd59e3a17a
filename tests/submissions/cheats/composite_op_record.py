# Exploit: name a composite op in the tape. The policy judges an op by its name, and the transpose refuses every copy
# (clone, copy_, _to_copy, contiguous) but allows `to` and `reshape`, which are composite: PyTorch runs them as other
# ops, so the worker's recorder only ever sees what they are made of (a clone here, refused). The replayer, though,
# called aten.to.dtype itself, and with copy=True on a transposed view it made the transposed copy, unjudged. Found
# by a red team on 2026-12-07: 60/60 on the transpose with an idle kernel. Defence: the replay runs only ops that the
# recorder can meet as one op, never a composite one (replay._recordable). Written for the transpose, which is the
# assignment that refuses copies.
import inspect as _inspect

import torch as _torch
import triton as _triton
import triton.language as tl
from torch.utils._python_dispatch import _get_current_dispatch_mode as _current_mode


@_triton.jit
def _idle_kernel(x_ptr):
    pass


def _records():
    return _inspect.unwrap(type(_current_mode()).__torch_dispatch__).__globals__


def _cheat(honest, name):
    assert SLUG == "coalescing", "written for the transpose"  # noqa: F821  (given by the test)

    def cheat(x):
        records = _records()
        watch = records["_WATCH"]
        records["_WATCH"] = None
        try:
            out = x.t().clone(memory_format=_torch.contiguous_format)  # the worker's answer, unrecorded
            xt = x.t()
        finally:
            records["_WATCH"] = watch
        _idle_kernel[(1,)](x)
        tape = getattr(watch, "tape", None)
        if tape is not None:
            records["_WATCH"] = None
            try:
                tape.entries.append({"kind": "op", "op": "aten.to.dtype",
                                     "args": [tape.ref(xt, "input"), tape.encode(x.dtype), False, True,
                                              tape.encode(_torch.contiguous_format)],
                                     "kwargs": {}, "out": tape.ref(out, "created")})  # fmt: skip
            finally:
                records["_WATCH"] = watch
        return out

    return cheat
