# Exploit: switch off the grader's op recorder (a TorchDispatchMode) while PyTorch computes the answer.
# Defence: the worker wraps the escape hatches (_disable_current_modes and friends) and refuses the
# submission's use of them during a graded call.
from torch.utils._python_dispatch import _disable_current_modes as _off


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        honest(*args, **kwargs)
        with _off():
            return TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)

    return cheat
