# Exploit: start a process through a library function that raises no audit event of its own
# (multiprocessing.util.spawnv_passfds, which multiprocessing's spawn start method and PyTorch's multiprocessing use;
# it calls _posixsubprocess.fork_exec). The new interpreter has none of the worker's guards: it could write a module
# onto the grader's import path (its working directory), which the grader would import, and run, later. Here it only
# computes nothing and exits. Defence: a process started while the submission's code is on the stack is refused,
# through a library or not, unless Triton is compiling a kernel; and where the kernel has Landlock, the worker and
# every process it starts may write only beneath the worker's own directories (autograder/sandbox.py).
import multiprocessing.util as _mp_util
import os as _os
import sys as _sys


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        exe = _os.fsencode(_sys.executable)
        pid = _mp_util.spawnv_passfds(exe, [exe, b"-c", b"pass"], ())
        _os.waitpid(pid, 0)
        return honest(*args, **kwargs)

    return cheat
