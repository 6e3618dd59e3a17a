# Exploit: hand back memory the grader gave it (a view of an input) instead of a new output. Defence:
# outputs that share storage with an input, or with another output, are refused before any value is
# compared.
import torch as _torch


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        honest(*args, **kwargs)
        first = next(a for a in args if isinstance(a, _torch.Tensor))
        return first.view(first.shape)

    return cheat
