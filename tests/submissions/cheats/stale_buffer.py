# Exploit: make the output come out of a Triton kernel after all: PyTorch fills a buffer the submission
# keeps (allocated at import on the CPU, in an earlier call on a GPU) while the recorder is off (inside
# a launch's grid callable, see launcher_window), and a copy kernel of kernels.py moves it into a fresh
# output. Every op the recorder sees is allowed, and the answer was written by a kernel. Defence: the
# replay runs the recorded launches on new inputs the worker never saw: the kept buffer holds the answer
# to other inputs, so the copy is wrong.
import torch as _torch
import triton as _triton
import triton.language as tl

_STASH = {"cpu": _torch.empty(1 << 18, dtype=_torch.float32)}  # at import: lives across calls


@_triton.jit
def _idle_kernel(x_ptr):
    pass


@_triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask).to(dst_ptr.dtype.element_ty), mask=mask)


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        first = next(a for a in args if isinstance(a, _torch.Tensor))
        box = {}

        def fill(meta):  # runs inside the launcher, where the op recorder is off
            answer = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
            key = str(answer.device)
            if key not in _STASH or _STASH[key].numel() < answer.numel():
                _STASH[key] = _torch.empty(max(answer.numel(), 1 << 18), dtype=_torch.float32, device=answer.device)
            _STASH[key][: answer.numel()].copy_(answer.reshape(-1))
            box["shape"], box["dtype"], box["stash"] = answer.shape, answer.dtype, _STASH[key]
            return (1,)

        _idle_kernel[fill](first)
        out = _torch.empty(box["shape"], dtype=box["dtype"], device=first.device)
        n = out.numel()
        _copy_kernel[(_triton.cdiv(n, 1024),)](box["stash"], out, n, BLOCK=1024)
        return out

    return cheat
