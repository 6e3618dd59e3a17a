# Exploit: the grader wraps PyTorch's escape hatch from dispatch modes (_disable_current_modes) in a
# function that refuses it during a graded call; the wrapper's closure holds the grader's guard object.
# Read it from __closure__ (cell_contents), tell it no call is running, and compute with PyTorch under
# _disable_current_modes, where the op recorder sees nothing. Defence: the replay of the recorded launches
# on new inputs (see frame_walk).
from torch.utils import _python_dispatch as _dispatch


def _guard():
    for cell in _dispatch._disable_current_modes.__closure__ or ():
        if hasattr(cell.cell_contents, "in_call"):
            return cell.cell_contents
    raise RuntimeError("no guard in the closure")


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        guard = _guard()
        guard.in_call = False
        try:
            with _dispatch._disable_current_modes():
                out = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
        finally:
            guard.in_call = True
        honest(*args, **kwargs)
        return out

    return cheat
