# Exploit: use the inspect module (inspect.currentframe, inspect.stack) to find the worker's frame and its
# globals; switch its records off while PyTorch computes, then back on. Defence: the replay of the
# recorded launches on new inputs (see frame_walk).
import inspect as _inspect


def _records():
    for info in _inspect.stack(context=0):
        if "_WATCH" in info.frame.f_globals:
            return info.frame.f_globals
    raise RuntimeError("no worker frame")


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
