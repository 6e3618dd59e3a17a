# Exploit: read the tensors into NumPy (or Python lists) and compute there, where no recorder sees
# the arithmetic; the result goes back with an allowed copy. Defence: reading tensor data into Python
# (Tensor.numpy, tolist, __array__; on a GPU any device-to-host copy) during a graded call is refused.
import torch as _torch


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        out = honest(*args, **kwargs)
        if isinstance(out, _torch.Tensor):
            return _torch.from_numpy(out.detach().numpy().copy())  # stands for "computed in NumPy"
        return out

    return cheat
