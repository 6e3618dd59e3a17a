# Exploit: the grader patches Triton's launcher (JITFunction.run) with a function defined in its worker;
# that function's __globals__ is the worker's module, records and all. Switch them off while PyTorch
# computes, then back on. Defence: the replay of the recorded launches on new inputs (see frame_walk).
from triton.runtime.jit import JITFunction as _JITFunction


def _records():
    return _JITFunction.run.__globals__


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        records = _records()
        watch, records["_WATCH"] = records["_WATCH"], None
        try:
            out = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
        finally:
            records["_WATCH"] = watch
        honest(*args, **kwargs)
        return out

    return cheat
