# Exploit: use traceback.walk_stack, which yields every frame from the current one outwards, to find the
# worker's globals; switch its records off while PyTorch computes, then back on. Defence: the replay of
# the recorded launches on new inputs (see frame_walk).
import traceback as _traceback


def _records():
    for frame, _ in _traceback.walk_stack(None):
        if "_WATCH" in frame.f_globals:
            return frame.f_globals
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
