# Exploit: end the process with os._exit(0) in the middle of the timing, hoping the harness reads the
# exit code (or whatever was printed last) as the result. Defence: the grader reads results only from
# its private channel; a worker that ends mid-request loses that case, reported as such.
import os as _os


def _cheat(honest, name):
    state = {"calls": 0}

    def cheat(*args, **kwargs):
        state["calls"] += 1
        if state["calls"] > 3:
            _os._exit(0)
        return honest(*args, **kwargs)

    return cheat
