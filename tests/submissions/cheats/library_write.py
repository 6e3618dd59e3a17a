# Exploit: have a library write a file for the submission (numpy.savetxt writes any text, a header included), where
# the worker's guards see NumPy's frame open it: a file outside the libraries' caches could be the grader's own code,
# or its results. Defence: a write opened while the submission's code is anywhere on the stack must go to Triton's
# cache, dump or override directories or to the temporary directory; anything else is the submission's doing.
import os as _os

import numpy as _np

_np.savetxt(_os.path.expanduser("~/.autograder_forged_by_a_submission"), [], header="written for a submission")


def _cheat(honest, name):
    return honest
