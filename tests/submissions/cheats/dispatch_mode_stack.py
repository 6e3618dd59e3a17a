# Exploit: ask PyTorch for the dispatch mode that is recording the call (the grader's op recorder), and
# follow its __torch_dispatch__'s __globals__ to the worker's records; switch them off while PyTorch
# computes, then back on. No frame is touched. Defence: the replay of the recorded launches on new
# inputs (see frame_walk).
import inspect as _inspect

from torch.utils._python_dispatch import _get_current_dispatch_mode as _current_mode


def _records():
    recorder = _current_mode()
    # PyTorch wraps a mode's __torch_dispatch__ (to keep Dynamo out of it): unwrap to the grader's function.
    return _inspect.unwrap(type(recorder).__torch_dispatch__).__globals__


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
