# Exploit: reach the grader's frames without sys._getframe: raise and catch an exception and walk its
# traceback (tb_frame.f_back ...) to the worker's globals, switch its records off while PyTorch computes,
# then switch them back. Defence: the replay of the recorded launches on new inputs (see frame_walk).
def _records():
    try:
        raise LookupError
    except LookupError as exc:
        frame = exc.__traceback__.tb_frame
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
        honest(*args, **kwargs)
        return out

    return cheat
