# Exploit: write only part of the output (say, the rows a block covers) and hope the rest already
# holds the answer. Defence: memory handed out during a graded call is filled with NaN first, so
# every element never written shows up as NaN.
import torch as _torch


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        out = honest(*args, **kwargs)
        if not isinstance(out, _torch.Tensor):
            return out
        half = _torch.empty_like(out)
        n = out.numel() // 2
        half.view(-1)[:n].copy_(out.reshape(-1)[:n])
        return half

    return cheat
