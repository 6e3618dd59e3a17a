# Exploit: forge the record of what the call returned. Compute the answer with PyTorch while the worker's
# records are off (see dispatch_mode_stack), launch a kernel that does nothing, and make the tape say the
# returned tensor is a view of the first input, laid out as the answer's shape with the strides of its
# transpose: for a transpose, the replay would read exactly the right values out of its own new input,
# with no kernel and no copy. Defence: the tape is untrusted data, and the grader checks it as such: an
# output in an input's memory is refused, as it is for the worker's own outputs; and the replay binds
# every new storage the record names to memory no other name holds.
import inspect as _inspect

import torch as _torch
import triton as _triton
import triton.language as tl
from torch.utils._python_dispatch import _get_current_dispatch_mode as _current_mode


@_triton.jit
def _idle_kernel(x_ptr):
    pass


def _records():
    return _inspect.unwrap(type(_current_mode()).__torch_dispatch__).__globals__


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        records = _records()
        watch = records["_WATCH"]
        records["_WATCH"] = None
        try:
            answer = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
        finally:
            records["_WATCH"] = watch
        first = next(a for a in args if isinstance(a, _torch.Tensor))
        _idle_kernel[(1,)](first)
        tape = getattr(watch, "tape", None)
        if tape is None:  # a grader that keeps no tape: its list of refused ops is the record to erase
            watch.forbidden.clear()
            return answer
        source = next(iter(tape.inputs.values()))["T"]  # the first input: [storage, offset, shape, strides, ...]
        # (M, N) read as its transpose: shape (N, M), strides (1, N); any other answer, read in place.
        strides = [1, answer.shape[0]] if answer.dim() == 2 else list(answer.stride())
        fake = {"T": [source[0], 0, list(answer.shape), strides, str(answer.dtype).replace("torch.", ""), answer.device.type]}

        def forged_outputs(outputs):
            for key in outputs:
                tape.outputs[key] = fake

        tape.set_outputs = forged_outputs
        tape.entries[:] = [e for e in tape.entries if e.get("kind") == "launch"]
        return answer

    return cheat
