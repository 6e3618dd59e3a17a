"""The worker process: imports one submission and runs the grader's requests on it, one at a time.

It never sees a reference output. For each case it receives parameters and a seed, builds the inputs,
calls the submission under watch (fresh memory poisoned with NaN, every PyTorch op recorded, every
Triton launch counted, inputs compared before and after) and sends the outputs back as bytes.
"""

from __future__ import annotations

import inspect
import io
import linecache
import os
import re
import sys
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import Any

# Ops a graded call may run besides the submission's Triton kernels: allocation, views, copies and
# constant fills. Anything else (pow, mean, rsqrt, mm, softmax ...) computes the answer in PyTorch.
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


# Ops whose new tensors are fenced during a graded call: each result is carved from the middle of a
# larger buffer whose ends hold a byte pattern, so a store past either end of it (a missing mask on the
# last block) changes the pattern and is reported, instead of landing in memory nobody checks.
FENCED_OPS = frozenset(
    """
    empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros full full_like
    new_full ones ones_like new_ones clone _to_copy
    """.split()
)
FENCE_BYTES = 1 << 17  # each side; more than one block of any kernel in the course runs past an end
FENCE_PATTERN = 0xA5


def _op_name(func: Any) -> str:
    # str(aten.mean.dim) == "aten.mean.dim"; the overload name is not part of the policy.
    parts = str(func).split(".")
    return parts[1] if len(parts) >= 2 else str(func)


class _Watch:
    """Records, during one graded call, the PyTorch ops run and the submission's kernel launches."""

    def __init__(self, submission_file: str, refused: frozenset[str] = frozenset()) -> None:
        self.submission_file = submission_file
        self.refused = refused  # allowed ops that this assignment refuses all the same
        self.forbidden: list[str] = []
        self.launches = 0
        self.fences: list[tuple] = []

    def saw_op(self, func: Any) -> None:
        name = _op_name(func)
        refused = name in self.refused or name.rstrip("_") in self.refused
        if refused or (name.rstrip("_") not in ALLOWED_OPS and name not in ALLOWED_OPS):
            qualified = str(func).rsplit(".", 1)[0]
            if qualified not in self.forbidden:
                self.forbidden.append(qualified)

    def saw_launch(self, fn: Any) -> None:
        code = getattr(fn, "__code__", None)
        if code is not None and os.path.realpath(code.co_filename) == self.submission_file:
            self.launches += 1

    def fence(self, func: Any, out: Any) -> Any:
        """The new tensor `out`, moved into the middle of a buffer with a fence of FENCE_BYTES on each side."""
        import torch

        if _op_name(func) not in FENCED_OPS or type(out) is not torch.Tensor or out.layout != torch.strided:
            return out
        if out.numel() == 0 or not out.is_contiguous() or out.device.type == "meta":
            return out
        itemsize, nbytes = out.element_size(), out.numel() * out.element_size()
        buf = torch.empty(FENCE_BYTES + nbytes + FENCE_BYTES, dtype=torch.uint8, device=out.device)
        buf[:FENCE_BYTES].fill_(FENCE_PATTERN)
        buf[FENCE_BYTES + nbytes :].fill_(FENCE_PATTERN)
        # set_ shares the buffer's storage without making the result a view (autograd sees a fresh tensor).
        fenced = torch.empty(0, dtype=out.dtype, device=out.device)
        fenced.set_(buf.untyped_storage(), FENCE_BYTES // itemsize, out.shape, out.stride())
        fenced.copy_(out)  # keep what the op put there: NaN poison for empty, zeros for zeros ...
        self.fences.append((buf, nbytes, _op_name(func), tuple(out.shape), str(out.dtype).replace("torch.", ""), itemsize))
        return fenced

    def broken_fences(self) -> list[str]:
        """A sentence for each fenced tensor whose fence was written: a store outside the tensor."""
        import torch

        problems = []
        for buf, nbytes, op, shape, dtype, itemsize in self.fences:
            before = torch.nonzero(buf[:FENCE_BYTES] != FENCE_PATTERN).flatten()
            after = torch.nonzero(buf[FENCE_BYTES + nbytes :] != FENCE_PATTERN).flatten()
            spans = []
            if after.numel():
                reach = -(-(int(after.max()) + 1) // itemsize)  # elements, rounded up
                spans.append(f"up to {reach:,} elements past its last element")
            if before.numel():
                reach = -(-(FENCE_BYTES - int(before.min())) // itemsize)
                spans.append(f"up to {reach:,} elements before its first element")
            if spans:
                problems.append(
                    f"Your code wrote outside a tensor allocated during the call (`{op}`, shape {shape}, {dtype}): "
                    f"memory {' and '.join(spans)} was overwritten. Every store whose offsets can run past the "
                    "end needs a mask (offsets < size): the last block of a flat kernel, the edge of a tile "
                    "wider than the data. Unmasked, it writes into memory that belongs to something else."
                )
        return problems


_WATCH: _Watch | None = None


def _install_launch_hooks() -> None:
    """Count launches of Triton kernels, compiled or interpreted, and keep our op recorder out of them."""
    from torch.utils._python_dispatch import _disable_current_modes
    from triton.runtime.jit import JITFunction

    classes = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:
        pass
    for cls in classes:
        original = cls.run

        def run(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            watch = _WATCH
            if watch is None:
                return __original(self, *args, **kwargs)
            if not kwargs.get("warmup", False):
                watch.saw_launch(getattr(self, "fn", None))
            with _disable_current_modes():  # the launcher's own tensor bookkeeping is not the submission's
                return __original(self, *args, **kwargs)

        cls.run = run


def _make_recorder() -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            if _WATCH is not None:
                _WATCH.saw_op(func)
                out = _WATCH.fence(func, out)
            return out

    return Recorder()


# --------------------------------------------------------------------------------------------------
# Turning exceptions into sentences
# --------------------------------------------------------------------------------------------------


def _where(exc: BaseException, submission_file: str) -> str:
    """' (kernels.py line N: `code`)' for the deepest frame inside the submission, or ''."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.realpath(frame.filename) == submission_file:
            found = frame
    if found is None:
        return ""
    code = (found.line or linecache.getline(found.filename, found.lineno or 0)).strip()
    return f" (kernels.py line {found.lineno}: `{code}`)" if code else f" (kernels.py line {found.lineno})"


def _first_lines(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def describe_call_error(exc: BaseException, task: str, submission_file: str) -> tuple[str, str]:
    """(status, sentence) for an exception raised by a graded call."""
    text = f"{type(exc).__name__}: {exc}"
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 5:
        chain.append(chain[-1].__cause__)
    if any(isinstance(e, NotImplementedError) for e in chain) or "NotImplementedError" in text:
        # The stubs raise NotImplementedError("TODO(<task>): ..."); on a GPU, Triton reports it as a
        # compilation error that quotes that line, so the task is read from the text either way.
        found = re.search(r"TODO\(([\w.]+)\)", " ".join(str(e) for e in chain))
        named = found.group(1) if found else task
        return "not_implemented", f"Not implemented yet: fill in the TODO marked {named} in kernels.py."
    if isinstance(exc, SystemExit):
        return "error", f"Your code called sys.exit({exc.code!r}) during the call{_where(exc, submission_file)}."
    kind = type(exc).__name__
    if kind in ("CompilationError", "InterpreterError"):
        return "error", f"Triton could not run your kernel{_where(exc, submission_file)}:\n{_first_lines(str(exc))}"
    return "error", f"The call raised {kind}: {_first_lines(str(exc), 3)}{_where(exc, submission_file)}"


def describe_import_error(exc: BaseException, submission_file: str) -> str:
    if isinstance(exc, SyntaxError) and os.path.realpath(exc.filename or "") == submission_file:
        return (
            f"kernels.py has a syntax error on line {exc.lineno}: {exc.msg}. "
            "Fix it (python -m py_compile kernels.py shows it too) and grade again."
        )
    if isinstance(exc, ModuleNotFoundError):
        return (
            f"kernels.py could not be imported: there is no module named '{exc.name}'"
            f"{_where(exc, submission_file)}. Check the spelling of the import, or run the grader "
            "from the course's virtual environment (make grade)."
        )
    if isinstance(exc, SystemExit):
        return f"kernels.py called sys.exit() while being imported{_where(exc, submission_file)}: remove that call."
    return (
        f"kernels.py raised {type(exc).__name__} while being imported{_where(exc, submission_file)}: "
        f"{_first_lines(str(exc), 3)}"
    )


def check_api(module: ModuleType, api: dict[str, str]) -> str:
    """A sentence about the first public function that is missing or has the wrong signature, or ''."""
    for name, signature in api.items():
        fn = getattr(module, name, None)
        if fn is None:
            return f"kernels.py does not define `{name}`: the grader calls {signature}. Keep the starter code's function."
        if not callable(fn):
            return f"`{name}` in kernels.py is a {type(fn).__name__}, not a function: the grader calls {signature}."
        args = [a.strip() for a in signature[signature.index("(") + 1 : signature.rindex(")")].split(",") if a.strip()]
        positional = [a.split("=")[0] for a in args]
        try:
            inspect.signature(fn).bind(*positional)
        except TypeError:
            return (
                f"`{name}` in kernels.py has the signature {name}{inspect.signature(fn)}, but the grader calls "
                f"{signature}: keep the starter code's signature."
            )
        except ValueError:
            pass  # builtins and some wrappers have no inspectable signature; the call will tell
    return ""


# --------------------------------------------------------------------------------------------------
# The request loop
# --------------------------------------------------------------------------------------------------


def _to_bytes(tensors: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    import torch

    torch.save({k: (v.detach().cpu() if isinstance(v, torch.Tensor) else v) for k, v in tensors.items()}, buf)
    return buf.getvalue()


def _redirect_output(log_path: str) -> None:
    """Send the submission's prints (and crash reports) to a log file the grader can quote from."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)


def main(conn: Connection, slug: str, submission: str, device_name: str, log_path: str) -> None:
    _redirect_output(log_path)
    if device_name == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from autograder import timing  # binds the CUDA timing entry points before the submission loads
    from autograder.spec import generator
    from autograder.specs import load_spec

    global _WATCH
    spec = load_spec(slug)
    device = torch.device(device_name)
    submission_file = os.path.realpath(submission)
    _install_launch_hooks()
    recorder = _make_recorder()

    sys.path.insert(0, str(Path(submission_file).parent))
    from course.loader import load_module

    module: ModuleType | None = None
    try:
        module = load_module(Path(submission_file), name=f"submission_{slug}")
    except BaseException as exc:  # noqa: BLE001  (a SystemExit at import time must not end the worker)
        conn.send({"ok": False, "error": describe_import_error(exc, submission_file)})
    else:
        problem = check_api(module, spec.api)
        conn.send({"ok": not problem, "error": problem})

    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request["op"] == "stop":
            return
        if module is None:
            conn.send({"status": "error", "message": "kernels.py did not import."})
            continue
        if request["op"] == "case":
            conn.send(_run_case(spec, module, request, device, recorder, submission_file, generator))
        elif request["op"] == "speed":
            conn.send(_run_speed(spec, module, request, device, generator, timing))


def _run_case(spec: Any, module: ModuleType, request: dict, device: Any, recorder: Any, submission_file: str, generator: Any) -> dict:
    import torch

    global _WATCH
    part = spec.part(request["task"])
    params = request["params"]
    inputs = part.make_inputs(params, generator(request["seed"], device), device)
    before = {k: v.clone() for k, v in inputs.items()}
    watch = _Watch(submission_file, frozenset(getattr(spec, "forbidden_ops", ())))
    try:
        prepared = part.setup(module, inputs, params) if part.setup is not None else {}
    except BaseException as exc:  # noqa: BLE001
        status, message = describe_call_error(exc, part.task, submission_file)
        return {"status": status, "message": message}
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # torch.empty hands out NaN
    if device.type == "cuda":
        # Blocks the caching allocator hands out next hold NaN too, not a stale answer.
        poison = torch.full((64 << 20,), float("nan"), device=device)
        del poison
    _WATCH = watch
    try:
        with recorder:
            outputs = part.call(module, {**inputs, **prepared}, params)
        if device.type == "cuda":
            torch.cuda.synchronize()
    except BaseException as exc:  # noqa: BLE001  (sys.exit in a submission must not end the worker)
        _WATCH = None
        torch.use_deterministic_algorithms(False)
        status, message = describe_call_error(exc, part.task, submission_file)
        return {"status": status, "message": message}
    finally:
        _WATCH = None
        torch.use_deterministic_algorithms(False)
    changed = [k for k in inputs if not torch.equal(inputs[k].detach(), before[k])]
    out_of_bounds = watch.broken_fences()
    watch.fences.clear()
    meta = {
        k: {"type": type(v).__name__, "device": v.device.type if isinstance(v, torch.Tensor) else ""}
        for k, v in outputs.items()
    }
    return {
        "status": "ok",
        "outputs": _to_bytes({k: v for k, v in outputs.items() if isinstance(v, torch.Tensor)}),
        "meta": meta,
        "forbidden_ops": watch.forbidden,
        "launches": watch.launches,
        "inputs_changed": changed,
        "out_of_bounds": out_of_bounds,
    }


def _run_speed(spec: Any, module: ModuleType, request: dict, device: Any, generator: Any, timing: Any) -> dict:
    params = request["params"]
    sc = spec.speed[request["index"]]
    part = spec.part(request["task"])
    call = sc.call or spec.speed_call
    baseline = sc.baseline or spec.baseline
    check = request["check_index"]
    kept: dict[str, Any] = {}
    try:
        pool = [part.make_inputs(params, generator(s, device), device) for s in request["seeds"]]
        if part.setup is not None:  # the submission's offline step, outside the timed region
            pool = [{**inputs, **part.setup(module, inputs, params)} for inputs in pool]
    except BaseException as exc:  # noqa: BLE001
        status, message = describe_call_error(exc, request["task"], "")
        return {"status": status, "message": message}

    def submission(i: int) -> None:
        out = call(module, pool[i], params)
        if i == check:
            kept["out"] = out

    try:
        times = timing.time_interleaved(
            {"submission": submission, "baseline": lambda i: baseline(pool[i], params)},
            len(pool), request["reps"], device,
        )  # fmt: skip
        copy_gbps = timing.copy_bandwidth_gbps(device)
    except BaseException as exc:  # noqa: BLE001
        status, message = describe_call_error(exc, request["task"], "")
        return {"status": status, "message": message}
    return {"status": "ok", "times": times, "copy_gbps": copy_gbps, "outputs": _to_bytes(kept)}
