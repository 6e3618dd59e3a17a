# Exploit: change an input in place (e.g. zero it, so a reference computed afterwards agrees with a
# zero output). Defence: the grader's reference never sees the worker's tensors, and the worker checks
# every input is unchanged after the call.
import torch as _torch


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        out = honest(*args, **kwargs)
        first = next(a for a in args if isinstance(a, _torch.Tensor))
        first.view(-1)[:1].fill_(0.0)
        return out

    return cheat
