"""Where Triton kernels run: a CUDA GPU, or Triton's CPU interpreter.

Import this module (or call `setup_triton()`) before `import triton` anywhere else: the interpreter
is chosen by the environment variable TRITON_INTERPRET, which Triton reads when it is first imported.
"""

from __future__ import annotations

import os

import torch


_YES = ("1", "true", "yes", "on")
_ASKED: dict[str | bytes | None, bool] = {}  # every launch asks: the answer for each value the variable has held

# Every public call asks several times (each tensor's check, each settings lookup), and os.environ.get costs
# about 1.5 us on a GPU machine's host: a tenth of a launch. CPython's os.environ keeps the variables in a
# dict (`_data`, keys encoded by `encodekey`) that every change made through os.environ updates, and a read
# of it costs a twentieth as much. Where os.environ is not that mapping (replaced, or another Python), the
# ordinary read.
_ENVIRON = type(os.environ)
_FAST = isinstance(getattr(os.environ, "_data", None), dict) and callable(getattr(os.environ, "encodekey", None))
_KEY = os.environ.encodekey("TRITON_INTERPRET") if _FAST else None


def interpreter_requested() -> bool:
    """True when TRITON_INTERPRET asks for Triton's CPU interpreter."""
    environ = os.environ
    if _FAST and type(environ) is _ENVIRON:
        raw = environ._data.get(_KEY)  # type: ignore[attr-defined]
    else:
        raw = environ.get("TRITON_INTERPRET")
    answer = _ASKED.get(raw)
    if answer is None:
        text = os.fsdecode(raw) if isinstance(raw, bytes) else raw
        answer = _ASKED[raw] = text is not None and text.strip().lower() in _YES
    return answer


def _cuda_present() -> bool:
    """Whether a CUDA GPU is visible, asked through NVML where PyTorch can: torch.cuda.is_available() calls
    cuInit, and a process that has called it cannot fork children that use the GPU (the grader forks its
    workers from a process that imported this module)."""
    try:
        count = torch.cuda._device_count_nvml()  # -1 when NVML cannot answer
    except Exception:  # noqa: BLE001 - a private helper: any failure means "ask the usual way"
        count = -1
    return count > 0 if count >= 0 else torch.cuda.is_available()


def setup_triton() -> torch.device:
    """Pick the device kernels run on, turning the CPU interpreter on when there is no GPU.

    Returns the torch device that inputs should live on: `cuda` on a GPU, `cpu` under the interpreter.
    """
    # An explicit TRITON_INTERPRET=0 is kept without a GPU: `python -m autograder portability` compiles
    # kernels for GPU targets on a machine that has none, and must get Triton's compiler, not its interpreter.
    if "TRITON_INTERPRET" not in os.environ and not _cuda_present():
        os.environ["TRITON_INTERPRET"] = "1"
    return torch.device("cpu") if interpreter_requested() else torch.device("cuda")


def describe() -> str:
    """One line saying where kernels will run, for notebooks and the grader's banner."""
    if interpreter_requested():
        return "Triton CPU interpreter (correct results, no speed, float32 arithmetic only)"
    props = torch.cuda.get_device_properties(0)
    return f"{props.name} (compute capability {props.major}.{props.minor}, {props.multi_processor_count} SMs)"


DEVICE: torch.device = setup_triton()
