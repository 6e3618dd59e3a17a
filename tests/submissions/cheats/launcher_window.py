# Exploit: no frames, no grader objects: Triton evaluates a launch's grid callable inside its launcher,
# which the grader runs with its op recorder switched off (the launcher's own tensor bookkeeping is not
# the submission's). Compute the answer with PyTorch inside the grid callable of a kernel that does
# nothing: the recorder sees no op, and a kernel of kernels.py was launched. Defence: the replay of the
# recorded launches on new inputs, which runs no grid callable and no PyTorch but the allowed ops: the
# idle kernel writes nothing.
import torch as _torch
import triton as _triton
import triton.language as tl


@_triton.jit
def _idle_kernel(x_ptr):
    pass


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        box = {}

        def grid(meta):
            box["out"] = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
            return (1,)

        first = next(a for a in args if isinstance(a, _torch.Tensor))
        _idle_kernel[grid](first)
        return box["out"]

    return cheat
