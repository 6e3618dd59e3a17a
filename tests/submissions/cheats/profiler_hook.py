# Exploit: install a profiler (sys.setprofile, and threading.setprofile for any thread started later): it
# is handed every frame that runs, from which f_back leads to the worker's globals; switch the records off
# while PyTorch computes, then back on. Defence: the worker's audit hook refuses sys.setprofile and
# sys.settrace when the submission asks (and, were it let through, the replay of the recorded launches
# on new inputs would still fail it, see frame_walk).
import sys as _sys
import threading as _threading


def _records():
    found = {}

    def profiler(frame, event, arg):
        while frame is not None and "records" not in found:
            if "_WATCH" in frame.f_globals:
                found["records"] = frame.f_globals
            frame = frame.f_back

    _threading.setprofile(profiler)
    _sys.setprofile(profiler)
    try:
        (lambda: None)()  # one call event is enough
    finally:
        _sys.setprofile(None)
        _threading.setprofile(None)
    return found["records"]


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
