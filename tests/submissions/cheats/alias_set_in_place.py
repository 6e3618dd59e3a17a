# Exploit: no forgery, no frames: an in-place change of a tensor's memory, recorded faithfully. Compute the answer
# with PyTorch inside a launch's grid callable (see launcher_window), allocate the returned tensor `out`, and re-point
# an alias of it (`out[:]`: the same memory, offset, shape and strides) at the first input with `set_`, an allowed op
# that allocates and computes nothing, laid out as the answer's shape with the strides of its transpose. The worker's
# `out` keeps its memory (the alias is a tensor object of its own) and gets the answer in a second grid callable. A
# replay that gave every op the one view it keeps for a recorded tensor would re-point `out` itself, and for a
# transpose read the right answer out of its own new input, with no kernel. Defence: in the replay every op is given
# tensor objects of its own, so an in-place change of shape, strides or memory reaches only what the op's record says
# it changes; the idle kernels write nothing.
import torch as _torch
import triton as _triton
import triton.language as tl


@_triton.jit
def _idle_kernel(x_ptr):
    pass


def _in_a_grid_callable(first, fn):
    """fn() run by Triton's launcher, where the grader records no op."""
    box = {}

    def grid(meta):
        box["value"] = fn()
        return (1,)

    _idle_kernel[grid](first)
    return box["value"]


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        first = next(a for a in args if isinstance(a, _torch.Tensor))
        answer = _in_a_grid_callable(first, lambda: TORCH_IMPL[name](*args, **kwargs))  # noqa: F821  (given by the test)
        out = _torch.empty(answer.shape, dtype=answer.dtype, device=answer.device)
        # (M, N) read as its transpose: shape (N, M), strides (1, N); any other answer read in place; only where it fits.
        strides = (1, answer.shape[0]) if answer.dim() == 2 else out.stride()
        if first.dtype == answer.dtype and first.numel() >= answer.numel():
            out[:].set_(first.untyped_storage(), first.storage_offset(), answer.shape, strides)
        _in_a_grid_callable(first, lambda: out.copy_(answer))
        return out

    return cheat
