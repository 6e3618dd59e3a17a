"""How the grader's child processes end with it, whatever ends the grader.

Two mechanisms, either enough: the parent-death signal (prctl PR_SET_PDEATHSIG: the kernel sends
SIGKILL when the thread that created the process exits), set first thing in every child; and a
lifeline, a pipe whose only write end the grader holds, watched by a thread that ends the child's
process group when the pipe closes. Linux only; elsewhere both are skipped and the grader's own
cleanup (killing each child's process group) is what remains.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent() -> None:
    """SIGKILL this process when the thread that created it exits; and now, if that already happened."""
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def refuse_ptrace() -> None:
    """Make this process (and what it forks) non-dumpable: another process of the same user, a
    submission's worker included, can then neither ptrace it nor read its memory through /proc."""
    _prctl(_PR_SET_DUMPABLE, 0)


def watch_lifeline(lifeline: Any) -> None:
    """End this process's group as soon as the grader's end of `lifeline` closes (a daemon thread)."""

    def wait() -> None:
        try:
            while True:
                lifeline.recv_bytes()
        except (EOFError, OSError):
            pass
        try:
            if os.getpgrp() == os.getpid():
                os.killpg(os.getpid(), signal.SIGKILL)
        finally:
            os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=wait, name="autograder-lifeline", daemon=True).start()
