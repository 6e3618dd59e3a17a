# Exploit: give a kernel's constexpr parameters the input tensors. Triton hands a constexpr to the kernel body
# untouched, so inside the "kernel" they are PyTorch tensors, and their methods that share names with Triton's
# (sum, rsqrt, reshape ...) compute the answer with PyTorch, while the kernel compiles and, under the interpreter,
# while it runs, with no recorder watching; the kernel only stores the numbers. The worker's note on its tape is
# erased, as a forged tape would (see forged_tape). Found by a red team on 2026-12-06: 60/60 on rmsnorm's forward.
# Defence: a launch whose constexpr parameter holds anything but a number, a bool, a string, None or a dtype is
# refused, in the worker's tape and again in the replay, before anything compiles the kernel. Written for RMSNorm
# (the first assignment, where the suite runs it): the defence does not depend on what the kernel computes.
import inspect as _inspect

import torch as _torch
import triton as _triton
import triton.language as tl
from torch.utils._python_dispatch import _get_current_dispatch_mode as _current_mode


@_triton.jit
def _store_each(y_ptr, R: tl.constexpr, N: tl.constexpr):
    for i in tl.static_range(N):
        tl.store(y_ptr + i, float(R[i]))


@_triton.jit
def _torch_in_constexprs(y_ptr, X: tl.constexpr, W: tl.constexpr, EPS: tl.constexpr, N: tl.constexpr):
    # passed on rather than assigned: an assignment would make the code generator turn it into a Triton value
    _store_each(y_ptr, (X * ((X * X).sum(-1, True) / X.shape[-1] + EPS).rsqrt() * W).reshape(N), N)


def _cheat(honest, name):
    assert SLUG == "rmsnorm", "written for RMSNorm's forward"  # noqa: F821  (given by the test)

    def cheat(x, weight, eps=1e-6):
        y = _torch.empty_like(x)
        _torch_in_constexprs[(1,)](y, X=x, W=weight, EPS=float(eps), N=x.numel())
        mode = _current_mode()
        watch = _inspect.unwrap(type(mode).__torch_dispatch__).__globals__["_WATCH"] if mode is not None else None
        tape = getattr(watch, "tape", None)
        if tape is not None:  # erase the worker's note, and record the launch it refused, as a forger would
            tape.unrecorded.clear()
            tape.launch(_torch_in_constexprs.fn, [y], {"X": x, "W": weight, "EPS": float(eps), "N": x.numel()})
            tape.set_grid(tape.entries[-1], (1,))
        return y

    return cheat
