# Exploit: switch torch.compile back on at import (to call a compiled reference later). Defence: every
# reply checks that torch._dynamo.config.disable is still set, and that TorchInductor never compiled.
import torch._dynamo as _dynamo

_dynamo.config.disable = False


def _cheat(honest, name):
    return honest
