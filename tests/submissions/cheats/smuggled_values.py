# Exploit: compute the answer with PyTorch where the recorder is off (a launch's grid callable, see
# launcher_window), then write it into a fresh output one element at a time with fill_, an allowed op:
# every op the recorder sees is allowed, a kernel of kernels.py was launched, and a replay of the record
# on the same inputs would reproduce the answer (the values travel inside the record, as fill_'s scalars).
# Defence: the grader replays the record on new inputs the worker never saw: the smuggled values answer
# other inputs.
import torch as _torch
import triton as _triton
import triton.language as tl


@_triton.jit
def _idle_kernel(x_ptr):
    pass


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        first = next(a for a in args if isinstance(a, _torch.Tensor))
        box = {}

        def grid(meta):
            answer = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
            box["shape"], box["dtype"], box["values"] = answer.shape, answer.dtype, answer.reshape(-1).tolist()
            return (1,)

        _idle_kernel[grid](first)
        out = _torch.empty(box["shape"], dtype=box["dtype"], device=first.device)
        flat = out.view(-1)
        for i, value in enumerate(box["values"]):
            flat[i].fill_(value)
        return out

    return cheat
