# Exploit: end the graded call with sys.exit(0), hoping a harness reads "exit code 0" as success.
# Defence: the worker catches SystemExit like any exception; the case fails and grading goes on.
import sys as _sys


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        _sys.exit(0)

    return cheat
