# Exploit: behave when the grader checks (it poisons fresh memory then), and during timing return fresh
# memory without writing it, hoping the allocator hands back a block that already holds the answer (the
# baseline's freed output, computed on the same inputs just before). Defence: after every timed call,
# the grader fills what the baseline and the submission returned with NaN before it is freed, and checks
# timed outputs: unwritten memory holds no answer.
import torch as _torch


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        out = honest(*args, **kwargs)
        if _torch.are_deterministic_algorithms_enabled() or not isinstance(out, _torch.Tensor):
            return out  # the grader is checking: behave
        return _torch.empty_like(out)

    return cheat
