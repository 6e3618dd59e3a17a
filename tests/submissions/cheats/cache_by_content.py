# Exploit: remember each answer by the inputs' contents (a hash), and skip the work when they repeat:
# a harness that cycles over a small pool of inputs, or warms up on the inputs it then times, pays for
# nothing. Defence: no two calls the grader makes (correctness, warm-up or timed) share a seed, so the
# cache never hits: the cheat gains nothing and is graded like the honest solution.
import ctypes as _ctypes
import hashlib as _hashlib

import torch as _torch


def _cheat(honest, name):
    cache = {}

    def cheat(*args, **kwargs):
        digest = _hashlib.sha1()
        for a in args:
            if isinstance(a, _torch.Tensor):
                # Read the bytes without a PyTorch op (the grader would refuse one), as C code would.
                digest.update(_ctypes.string_at(a.data_ptr(), a.numel() * a.element_size()))
            else:
                digest.update(repr(a).encode())
        key = digest.hexdigest()
        if key not in cache:
            cache[key] = honest(*args, **kwargs)
        return cache[key]

    return cheat
