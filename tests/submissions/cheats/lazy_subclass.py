# Exploit: return a torch.Tensor subclass (named Tensor) whose methods run code when the grader reads
# it, e.g. to compute the real answer outside the graded call. Defence: outputs must be exactly
# torch.Tensor; a subclass is refused without calling any of its methods.
import torch as _torch


class Tensor(_torch.Tensor):
    pass


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        out = honest(*args, **kwargs)
        return out.as_subclass(Tensor) if isinstance(out, _torch.Tensor) else out

    return cheat
