# Exploit (or accident): allocate far more memory than any case needs. Defence: a CPU worker's address
# space is capped (RLIMIT_AS), a GPU worker's share of the GPU too (set_per_process_memory_fraction);
# the refusal is reported as a sentence, and the worker goes on grading.
import torch as _torch


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        _torch.empty(1 << 42, dtype=_torch.uint8)  # 4 TiB
        return honest(*args, **kwargs)

    return cheat
