# Exploit: walk the stack frames (sys._getframe().f_back ...) up to the grader's worker, switch its records
# off through that frame's globals (its _WATCH) while PyTorch computes the answer, switch them back on,
# and launch one kernel so the call looks like the submission's. Defence: the grader replays the call's
# recorded kernel launches in a process that runs none of the submission's Python, on new inputs the
# worker never saw: an answer PyTorch computed is not reproduced.
import sys as _sys


def _records():
    """The worker's module globals: the first frame out from here whose globals hold its _WATCH."""
    frame = _sys._getframe(1)
    while frame is not None:
        if "_WATCH" in frame.f_globals:
            return frame.f_globals
        frame = frame.f_back
    raise RuntimeError("no worker frame")


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        records = _records()
        watch, records["_WATCH"] = records["_WATCH"], None
        try:
            out = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
        finally:
            records["_WATCH"] = watch
        honest(*args, **kwargs)  # one launch of a kernel from kernels.py, so the call looks busy
        return out

    return cheat
