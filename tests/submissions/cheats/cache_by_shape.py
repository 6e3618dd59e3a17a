# Exploit: remember the answer by the inputs' shapes (or by the call count) and skip the work on later
# calls: a harness that checks one call and times the rest pays for nothing. Defence: every timed call
# must launch at least one of the submission's kernels, and the outputs of timed calls are checked.
import torch as _torch


def _cheat(honest, name):
    cache = {}

    def cheat(*args, **kwargs):
        key = tuple(tuple(a.shape) for a in args if isinstance(a, _torch.Tensor))
        if key not in cache:
            cache[key] = honest(*args, **kwargs)
        return cache[key]

    return cheat
