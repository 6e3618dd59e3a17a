# Exploit: compile code under the file name of a library the worker's guards trust (PyTorch's), so that every
# check that asks "whose frame is this?" takes what it does (here searching the interpreter's objects with gc, to
# reach the grader's) for PyTorch's own work. Defence: the audit hook refuses compile() and code objects made by
# the submission's own lines under the name of a trusted file (and marshal's loads of code).
import gc as _gc
import torch as _torch

_namespace = {"gc": _gc}
exec(compile("found = len(gc.get_objects())", _torch.__file__, "exec"), _namespace)


def _cheat(honest, name):
    return honest
