# Exploit: reach the grader's frames through a generator's frame: while it runs, gi_frame.f_back is the
# frame that resumed it, and f_back from there leads out to the worker's globals; switch its records off
# while PyTorch computes, then back on. Defence: the replay of the recorded launches on new inputs (see
# frame_walk).
def _records():
    def climb():
        yield running.gi_frame.f_back  # set only while the generator runs: the frame that called next()

    running = climb()
    frame = next(running)
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
