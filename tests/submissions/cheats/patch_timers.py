# Exploit: patch the timers and synchronize at import, so timed calls look fast. Defence: the timing
# module binds its own references before the submission is imported, and every reply compares a
# snapshot of what the grader relies on: a patch fails the case, naming what was replaced.
import time as _time

import torch as _torch

_real = _time.perf_counter
_time.perf_counter = lambda: _real() / 100.0
_torch.cuda.synchronize = lambda *a, **k: None
_torch.cuda.Event.elapsed_time = lambda self, end: 1e-3


def _cheat(honest, name):
    return honest
