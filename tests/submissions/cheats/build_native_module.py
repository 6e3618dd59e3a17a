# Exploit: ask Triton itself to build native code: triton.runtime.build.compile_module_from_src takes any C source
# (Triton's driver utilities with a payload added, say), runs the C compiler and loads the module, and every frame
# between the submission and the compiler is Triton's. Stored in Triton's cache under the key of Triton's own driver,
# the module would have run in the replayer at its first launch on a GPU (found by a red team on 2026-12-06). Defence:
# a process started while the submission's code is on the stack is refused unless Triton's launch of a kernel lies
# between; and the worker's Triton cache is its own, never the replayer's (autograder/sandbox.py).
import os as _os
import shutil as _shutil
import sys as _sys

from triton.runtime import build as _build

_SOURCE = """#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "payload", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_payload(void) { return PyModule_Create(&def); }
"""


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        if _shutil.which("gcc") is None and _shutil.which("clang") is None and "CC" not in _os.environ:
            _os.environ["CC"] = _sys.executable  # no compiler here: what matters is that a process would start
        _build.compile_module_from_src(_SOURCE, "payload")
        return honest(*args, **kwargs)

    return cheat
