# Exploit: "try my kernel, and if it fails, fall back to PyTorch": the answer comes from the op the
# assignment replaces. Defence: the op recorder (TorchDispatchMode) refuses every op but allocation,
# views and copies in a graded call.
def _cheat(honest, name):
    def cheat(*args, **kwargs):
        try:
            raise RuntimeError("pretend the Triton kernel failed to compile")
        except RuntimeError:
            honest(*args, **kwargs)  # a launch, so the "no kernel of yours ran" check is not what catches it
            return TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)

    return cheat
