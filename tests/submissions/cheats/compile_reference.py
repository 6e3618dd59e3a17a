# Exploit: return torch.compile of the PyTorch reference (its generated kernels are not the student's,
# and TorchInductor's kernels are not PyTorch ops the recorder would see). Defence: the worker switches
# torch.compile off (torch._dynamo.config.disable), so the compiled function runs as eager ops, which
# the recorder refuses.
import torch as _torch


def _cheat(honest, name):
    compiled = _torch.compile(TORCH_IMPL[name])  # noqa: F821  (given by the test)

    def cheat(*args, **kwargs):
        honest(*args, **kwargs)
        return compiled(*args, **kwargs)

    return cheat
