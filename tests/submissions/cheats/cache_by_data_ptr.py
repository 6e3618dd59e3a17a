# Exploit: remember each answer by the inputs' addresses (data_ptr) and shapes, and skip the work when
# they repeat: a harness that times the same input tensors over and over times nothing. Defence: every
# timed call gets new contents (new seeds, made outside the timed region), each timed call must launch
# a kernel, and timed outputs are checked, so a stale answer at a reused address is caught.
import torch as _torch


def _cheat(honest, name):
    cache = {}

    def cheat(*args, **kwargs):
        key = tuple((a.data_ptr(), tuple(a.shape)) for a in args if isinstance(a, _torch.Tensor))
        if key not in cache:
            cache[key] = honest(*args, **kwargs)
        return cache[key]

    return cheat
