# Exploit: reach the grader through sys.modules, switch off its records (its _WATCH), compute with
# PyTorch, and put the records back. Defence: the worker takes its own modules out of sys.modules
# before the submission is imported, so what this finds is a fresh copy, not the running grader: the
# recorder still sees the PyTorch ops.
import sys as _sys


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        grader = _sys.modules.get("autograder.worker")
        saved = getattr(grader, "_WATCH", None)
        if grader is not None:
            grader._WATCH = None
        try:
            out = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
        finally:
            if grader is not None:
                grader._WATCH = saved
        honest(*args, **kwargs)
        return out

    return cheat
