# Exploit: forge the record the grader replays. Compute the answer with PyTorch while the worker's records
# are off (reached through the dispatch-mode stack, see dispatch_mode_stack), launch a kernel that does
# nothing, then edit the call's tape: erase every op it lists, and declare the returned tensor to be
# memory the call found ready (as a lookup table kept at module level would be), carried to the replay
# with what it holds. Defence: the tape is untrusted data. The replay runs on new inputs the worker never
# saw, so memory carried from the worker holds the answer to other inputs; only the submission's kernels
# computing from the replay's own inputs can produce the right answer.
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
    def cheat(*args, **kwargs):
        records = _records()
        watch = records["_WATCH"]
        records["_WATCH"] = None
        try:
            answer = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
        finally:
            records["_WATCH"] = watch
        _idle_kernel[(1,)](next(a for a in args if isinstance(a, _torch.Tensor)))
        tape = getattr(watch, "tape", None)
        if tape is not None:
            records["_WATCH"] = None  # the forgery copies memory: keep that out of the records too
            try:
                tape.entries[:] = [e for e in tape.entries if e.get("kind") == "launch"]
                tape.ref(answer, "carried")  # "this memory was there before the call, holding what it holds"
            finally:
                records["_WATCH"] = watch
        else:  # a grader that keeps no tape: its list of refused ops is the record to erase
            watch.forbidden.clear()
        return answer

    return cheat
