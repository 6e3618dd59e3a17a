"""Integer arithmetic for a launch's grid and tile sizes, in plain Python.

`triton.cdiv` and `triton.next_power_of_2` are Triton `constexpr_function`s: they work inside a kernel and
on the host alike, and on the host each call pays for that (about 3 us on Triton 3.7, an import and the
unwrapping of its arguments), which is a good part of a decode-sized launch when a launcher calls them a
handful of times. These give the same answers for the non-negative ints a launcher passes.
"""

from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """ceil(a / b): the programs needed to cover a elements with tiles of b."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n, as triton.next_power_of_2 (which also answers 0 for 0)."""
    return 1 << (n - 1).bit_length() if n > 0 else 0
