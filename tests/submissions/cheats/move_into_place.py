# Exploit: have a library write a module where libraries may write (the temporary directory: numpy.savetxt, whose
# header could be any code), then move it where nothing may: a `gmpy2.py` in the directory of the submission's
# kernels.py, on the worker's import path (the grader's working directory is another: an optional import of SymPy's
# would run it in the grader). The write passes the check of opened files; the move is a rename. Defence: a rename, link, removal or new directory is judged as a
# write to each path it changes; and where the kernel has Landlock, the worker can change no file outside its own
# directories (autograder/sandbox.py).
import os as _os
import tempfile as _tempfile

import numpy as _np


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        staged = _os.path.join(_tempfile.gettempdir(), "autograder_staged_by_a_submission.py")
        _np.savetxt(staged, [], header="planted by a submission")
        _os.replace(staged, _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "gmpy2.py"))
        return honest(*args, **kwargs)

    return cheat
