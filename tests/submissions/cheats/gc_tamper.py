# Exploit: search the interpreter's objects with gc for the grader's (its op recorder, its copy of the
# inputs, its reply) and edit them. Defence: the worker's audit hook refuses gc.get_objects /
# get_referrers / get_referents when the submission asks.
import gc as _gc


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        for obj in _gc.get_objects():
            if type(obj).__name__ == "_Watch":
                obj.forbidden.clear()
        return honest(*args, **kwargs)

    return cheat
