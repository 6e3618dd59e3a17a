# Exploit: swap the code of a function the grader calls (here torch.cuda.synchronize's) instead of
# replacing the attribute, which a check of identities alone would miss. Defence: the audit hook refuses
# assignments to __code__ (and __closure__, __defaults__ ...) when the submission asks; a lasting swap
# would also show in the snapshot, which records each function's code.
import torch as _torch

_torch.cuda.synchronize.__code__ = (lambda device=None: None).__code__


def _cheat(honest, name):
    return honest
