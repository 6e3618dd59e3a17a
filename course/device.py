"""What a kernel's launch settings depend on: the GPU (or Triton's CPU interpreter), as plain data.

A `Device` can describe a GPU that is not in this machine, so that a tool can ask which settings a
wrapper would pick on it (and compile them for its architecture) without having one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from course.env import interpreter_requested


@dataclass(frozen=True)
class Device:
    name: str  # as torch.cuda.get_device_name() says it, e.g. "NVIDIA H200"; "interpreter" for the CPU interpreter
    capability: tuple[int, int]  # (major, minor): (9, 0) is sm_90
    sms: int  # streaming multiprocessors (the interpreter runs programs one after another: a few stand in)
    smem_per_block: int  # bytes of shared memory one program may use: the opt-in maximum
    interpreter: bool = False

    @property
    def arch(self) -> int:
        """The capability as Triton's targets write it: 90 for sm_90."""
        return 10 * self.capability[0] + self.capability[1]

    @property
    def tma(self) -> bool:
        """The tensor memory accelerator (bulk tile copies through descriptors): Hopper (sm_90) and newer."""
        return not self.interpreter and self.capability >= (9, 0)

    @property
    def dependent_launch(self) -> bool:
        """Programmatic dependent launch: a kernel launched while the one before it in the stream finishes, which
        waits on the GPU (`griddepcontrol.wait`) before it reads that kernel's results. Hopper (sm_90) and newer."""
        return not self.interpreter and self.capability >= (9, 0)

    @property
    def bf16_tensor_cores(self) -> bool:
        """bfloat16 matrix instructions: Ampere (sm_80) and newer."""
        return not self.interpreter and self.capability >= (8, 0)


# The interpreter has no shared memory to run out of; 4 "SMs" keep persistent and split-K grids small
# enough to run quickly and large enough to exercise their reductions on the CPU tier's small cases.
INTERPRETER = Device("interpreter", (0, 0), sms=4, smem_per_block=1 << 30, interpreter=True)

KB = 1024
# Opt-in shared memory per block by compute capability (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability"), for a PyTorch that does not report it.
SMEM_PER_BLOCK: dict[tuple[int, int], int] = {
    (7, 5): 64 * KB, (8, 0): 163 * KB, (8, 6): 99 * KB, (8, 7): 163 * KB, (8, 9): 99 * KB,
    (9, 0): 227 * KB, (10, 0): 227 * KB, (12, 0): 99 * KB,
}  # fmt: skip



@dataclass(frozen=True)
class ArchLimits:
    """What one program (a CUDA block) may use on an architecture, beyond its shared memory."""

    registers_per_block: int  # 32-bit registers shared by the block's threads
    registers_per_thread: int
    threads_per_block: int


@dataclass(frozen=True)
class SmLimits:
    """What one streaming multiprocessor holds at once: the ceilings that bound occupancy."""

    registers: int  # 32-bit registers per SM
    max_warps: int  # resident warps per SM
    max_blocks: int  # resident programs (thread blocks) per SM
    smem: int  # bytes of shared memory per SM (what resident programs share)
    smem_reserved_per_block: int = 1 * KB  # the driver keeps this much of it per program (sm_80 and newer)
    register_unit: int = 256  # registers are handed to a warp in multiples of this
    max_registers_per_thread: int = 255


# Per compute capability, from the CUDA C++ Programming Guide, "Technical Specifications per Compute
# Capability", and the occupancy calculator's allocation rules (CUDA Occupancy Calculator / cudaOccupancy.h).
SM_LIMITS: dict[tuple[int, int], SmLimits] = {
    (7, 5): SmLimits(65536, 32, 16, 64 * KB, smem_reserved_per_block=0),
    (8, 0): SmLimits(65536, 64, 32, 164 * KB),
    (8, 6): SmLimits(65536, 48, 16, 100 * KB),
    (8, 7): SmLimits(65536, 48, 16, 164 * KB),
    (8, 9): SmLimits(65536, 48, 24, 100 * KB),
    (9, 0): SmLimits(65536, 64, 32, 228 * KB),
    (10, 0): SmLimits(65536, 64, 32, 228 * KB),
    (12, 0): SmLimits(65536, 48, 32, 100 * KB),
}  # fmt: skip


# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": 64 K registers and 1024
# threads per block on every architecture from sm_75 to sm_120; registers per thread as the SM table says.
ARCH_LIMITS: dict[int, ArchLimits] = {
    major * 10 + minor: ArchLimits(64 * 1024, limits.max_registers_per_thread, 1024)
    for (major, minor), limits in SM_LIMITS.items()
}

# GPUs students and instructors have, one or two per architecture, as their drivers describe them.
KNOWN_GPUS: dict[str, Device] = {
    d.name: d
    for d in (
        Device("Tesla T4", (7, 5), 40, 64 * KB),
        Device("NVIDIA A100-SXM4-80GB", (8, 0), 108, 163 * KB),
        Device("NVIDIA A10", (8, 6), 72, 99 * KB),
        Device("NVIDIA L4", (8, 9), 58, 99 * KB),
        Device("NVIDIA GeForce RTX 4090", (8, 9), 128, 99 * KB),
        Device("NVIDIA H100 80GB HBM3", (9, 0), 132, 227 * KB),
        Device("NVIDIA H200", (9, 0), 132, 227 * KB),
        Device("NVIDIA B200", (10, 0), 148, 227 * KB),
        Device("NVIDIA GeForce RTX 5090", (12, 0), 170, 99 * KB),
    )
}


@functools.lru_cache(maxsize=None)
def cuda_device(index: int) -> Device:
    """The GPU at this index, described from its properties."""
    props = torch.cuda.get_device_properties(index)
    capability = (props.major, props.minor)
    smem = getattr(props, "shared_memory_per_block_optin", 0) or SMEM_PER_BLOCK.get(capability, 48 * KB)
    return Device(props.name, capability, props.multi_processor_count, smem)


def not_gradeable(device: Device, dtype_name: str) -> str:
    """Why cases of this dtype cannot be graded on this device, as a sentence; "" when they can."""
    if dtype_name == "bfloat16" and not device.interpreter and not device.bf16_tensor_cores:
        return (
            f"not gradeable on this GPU: the {device.name} (sm_{device.arch}) has no bfloat16 tensor cores, which "
            "need compute capability 8.0 (Ampere) or newer; its float32 and float16 cases are graded. Grade the "
            "bfloat16 cases on an A100, L4, H100 or newer."
        )
    return ""


def lacks_tma(device: Device) -> str:
    """Why a speed case about the tensor-memory accelerator is not timed on this device, as a sentence; "" when it is."""
    if device.interpreter or device.tma:
        return ""
    return (
        f"not gradeable on this GPU: the {device.name} (sm_{device.arch}) has no tensor-memory accelerator, which needs "
        "compute capability 9.0 (Hopper) or newer; there Triton turns the descriptors' loads into ordinary loads, so "
        "the time would not be that of the kernel this case is about. Its correctness cases are graded. Time it on an "
        "H100, H200 or newer."
    )


_CUDA_DEVICES: dict[int, Device] = {}  # a GPU's properties do not change while a process runs


def device_of(t: torch.Tensor) -> Device:
    """Where kernels launched on this tensor run: its GPU, or the CPU interpreter. Every launch asks, so a
    GPU is described once per process."""
    where = t.device
    if where.type != "cuda" or interpreter_requested():
        return INTERPRETER
    index = where.index if where.index is not None else torch.cuda.current_device()
    found = _CUDA_DEVICES.get(index)
    if found is None:
        found = _CUDA_DEVICES[index] = cuda_device(index)
    return found


def sm_limits(capability: tuple[int, int]) -> SmLimits:
    """The SM's ceilings for this capability; an unknown one takes those of the nearest older architecture."""
    known = [c for c in SM_LIMITS if c <= capability]
    return SM_LIMITS[max(known)] if known else SM_LIMITS[min(SM_LIMITS)]
