"""Which PyTorch ops a graded call may run besides the submission's Triton kernels.

One policy, read by three processes: the worker's op recorder (the first, friendliest refusal), the
grader (which checks the call's recorded tape as data) and the replayer (which runs only these ops,
from PyTorch's own implementations, when it replays a tape).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

_OVERLOAD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # "default", "dim", "Tensor_out" ...: never a dunder

# Allocation, views, copies and constant fills. Anything else (pow, mean, rsqrt, mm, softmax ...)
# computes the answer in PyTorch.
ALLOWED_OPS = frozenset(
    """
    empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros full full_like
    new_full ones ones_like new_ones fill_ zero_ scalar_tensor lift_fresh
    view _unsafe_view view_as reshape _reshape_alias as_strided expand expand_as t transpose permute
    unsqueeze squeeze select slice narrow unbind split split_with_sizes chunk flatten unflatten movedim
    detach alias set_ diagonal unfold
    copy_ clone _to_copy to contiguous _local_scalar_dense resize_
    sym_size sym_stride sym_numel sym_storage_offset is_contiguous is_same_size stride size numel dim
    """.split()
)
COPY_OPS = frozenset({"_to_copy", "copy_", "to"})
SCALAR_READ = "_local_scalar_dense"  # Tensor.item(): a value read into Python
MAX_SCALAR_READS = 64  # .item() calls per graded call; more is the answer computed in Python, value by value


def op_name(qualified: object) -> str:
    """'mean' for aten.mean.dim (its str is "aten.mean.dim"): the overload is not part of the policy."""
    parts = str(qualified).split(".")
    return parts[1] if len(parts) >= 2 else str(qualified)


def op_namespace(qualified: object) -> str:
    return str(qualified).split(".")[0]


def is_course_op(qualified: object) -> bool:
    """A course op (course/ops.py: `course::NAME`, `course_student::NAME`, `course_<n>::NAME`): not an op
    the call may run as one step, but a launcher the recorder runs under its watch, so that its
    allocations and launches are recorded and judged like the rest of the call."""
    namespace = op_namespace(qualified)
    return namespace == "course" or namespace.startswith("course_")


def is_allowed(qualified: object, refused: Collection[str] = ()) -> bool:
    """Whether a graded call may run this op: aten's allocation, view and copy ops, less the assignment's refusals.

    The name must be an op overload's as PyTorch writes it, `aten.<op>.<overload>`, and nothing else: the replayer
    looks the overload up on the op, and a name like `aten.unfold.__init__` would reach the op's own Python methods
    (a forged tape re-pointed an allowed op at any operator that way: replay.Replay._op checks the overload too)."""
    parts = str(qualified).split(".")
    if len(parts) != 3 or not _OVERLOAD.fullmatch(parts[2]) or parts[0] != "aten":
        return False
    name = op_name(qualified)
    if name in refused or name.rstrip("_") in refused:
        return False
    if not (name in ALLOWED_OPS or name.rstrip("_") in ALLOWED_OPS):
        return False
    # An assignment that refuses copies refuses every overload that copies, whatever its name says.
    return not (refuses_copies(refused) and copies_values(str(qualified)))


def refuses_copies(refused: Collection[str]) -> bool:
    return any(name in refused for name in COPY_OPS)


@lru_cache(maxsize=None)
def copies_values(qualified: str) -> bool:
    """Whether an allowed overload writes `self` with values it reads from another tensor it is given: `copy_`'s
    `src`, `fill_.Tensor`'s `value` (a red team filled a transpose's output element by element from one-element views
    of the input), `set_`'s `source`. Read from the overload's schema, so that a copy under another op's name is
    still a copy. (An overload that writes another argument, `out=`, is refused in every assignment by the replay,
    replay._written_arguments.) An overload PyTorch does not have counts as one (the replayer refuses it anyway)."""
    import torch

    _, name, overload = qualified.split(".")
    packet = getattr(torch.ops.aten, name, None)
    if packet is None or overload not in packet.overloads():
        return True
    arguments = getattr(packet, overload)._schema.arguments
    written = {a.name for a in arguments if a.alias_info is not None and a.alias_info.is_write}
    return "self" in written and any("Tensor" in str(a.type) and a.name not in written for a in arguments)


def shown(qualified: object) -> str:
    """'aten.mean' for aten.mean.dim: how a refusal names an op."""
    return str(qualified).rsplit(".", 1)[0] if str(qualified).count(".") >= 2 else str(qualified)
