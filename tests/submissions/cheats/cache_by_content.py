# Exploit: remember each answer by the inputs' contents (a hash), and skip the work when they repeat:
# a harness that cycles over a small pool of inputs, or warms up on the inputs it then times, pays for
# nothing. Defence: no two calls the grader makes (correctness, warm-up or timed) share a seed, so the
# cache never hits: the cheat gains nothing and is graded like the honest solution. On a GPU the contents
# are out of reach before that: a PyTorch copy to the host is refused, and so is the driver's copy through
# ctypes (native code), which is the route this file takes there.
import ctypes as _ctypes
import hashlib as _hashlib

import torch as _torch


def _contents(a):
    n = a.numel() * a.element_size()
    if a.device.type != "cuda":
        return _ctypes.string_at(a.data_ptr(), n)
    # On a GPU through the driver's own copy, which no PyTorch dispatch sees.
    buf = _ctypes.create_string_buffer(n)
    cuda = _ctypes.CDLL("libcuda.so.1")
    cuda.cuCtxSynchronize()  # every stream's work on the inputs done
    cuda.cuMemcpyDtoH_v2(buf, _ctypes.c_uint64(a.data_ptr()), _ctypes.c_size_t(n))
    return buf.raw


def _cheat(honest, name):
    cache = {}

    def cheat(*args, **kwargs):
        digest = _hashlib.sha1()
        for a in args:
            if isinstance(a, _torch.Tensor):
                # Read the bytes without a PyTorch op (the grader would refuse one), as C code would.
                digest.update(_contents(a))
            else:
                digest.update(repr(a).encode())
        key = digest.hexdigest()
        if key not in cache:
            cache[key] = honest(*args, **kwargs)
        return cache[key]

    return cheat
