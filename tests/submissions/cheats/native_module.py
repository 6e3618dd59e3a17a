# Exploit: load native code, which no guard in the worker sees run: have a library copy an extension module (any:
# here one of Python's own) into the temporary directory, where libraries may write (numpy.memmap opens the file),
# and import it from there by path, as a precompiled payload written out of kernels.py would be. Defence: a native module loaded while the submission's code
# is on the stack must come from the installed packages, unless Triton is loading the launcher it built for a kernel.
import importlib.machinery as _ilm
import importlib.util as _ilu
import os as _os
import sys as _sys
import tempfile as _tempfile

import numpy as _np


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        # an extension module already loaded (Python's own where there is one), copied under its own file name
        files = {m.__name__: m.__file__ for m in list(_sys.modules.values())
                 if str(getattr(m, "__file__", "")).endswith(tuple(_ilm.EXTENSION_SUFFIXES))}
        name = min(files, key=lambda n: ("lib-dynload" not in files[n], n))
        copy = _os.path.join(_tempfile.gettempdir(), _os.path.basename(files[name]))
        data = _np.fromfile(files[name], dtype=_np.uint8)
        out = _np.memmap(copy, dtype=_np.uint8, mode="w+", shape=data.shape)
        out[:] = data
        out.flush()
        spec = _ilu.spec_from_file_location(name, copy)
        _ilu.module_from_spec(spec)
        return honest(*args, **kwargs)

    return cheat
