# Exploit (or accident): crash the process (an unmasked load past the end of a buffer on a GPU does the
# same). Defence: the worker is a separate process; its death is reported with the signal, and the next
# case gets a fresh worker.
import os as _os
import signal as _signal


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        _os.kill(_os.getpid(), _signal.SIGSEGV)

    return cheat
