"""The course's 4-bit weight format (W4A16, module 09): two codes a byte, even k in the low nibble.

    w_packed (N, K // 2) uint8: byte j of row n holds q[n, 2j] in bits 0..3 and q[n, 2j + 1] in bits 4..7

A code q in 0..15 stands for (q - 8) * scales[n, k // group_size]. The grader's inputs, the capstone's
quantized weights and the notebooks all pack and unpack with these two functions.
"""

from __future__ import annotations

import torch


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    """(N, K) codes in 0..15 -> (N, K // 2) uint8: even k in the low nibble, odd k in the high nibble."""
    q = q.to(torch.uint8)
    return q[:, 0::2] | (q[:, 1::2] << 4)


def unpack_int4(w_packed: torch.Tensor) -> torch.Tensor:
    """(N, K // 2) uint8 -> (N, K) codes in 0..15, as int16."""
    lo, hi = w_packed & 0xF, w_packed >> 4
    return torch.stack((lo, hi), dim=-1).reshape(w_packed.shape[0], -1).to(torch.int16)
