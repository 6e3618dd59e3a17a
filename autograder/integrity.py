"""Guards that run inside the worker process, around the untrusted submission.

They share an interpreter with the submission, so none of them is proof against a determined attacker
with native code (docs/integrity.md says what remains possible). Each makes one family of cheats fail
with a sentence that names it, and none is needed for the grade to be right about *what* a submission
computed: outputs are checked, and every point computed, in the grader's own process. These guards are
about *how* it was computed and how long it took, which only the worker can see.

- An audit hook (which Python does not let anyone remove) refuses, when the submission itself asks:
  signals to other processes, writing, moving or removing files, ctypes, searching objects with gc, reading
  other threads' frames, tracers, and swapping a function's code; and, whenever the submission's code is on
  the stack unless Triton is compiling one of its kernels: processes (also those started through
  `_posixsubprocess`, which raises no event) and native modules from outside the installed packages.
  The kernel's confinement of the worker's writes (autograder/sandbox.py) does not depend on any of this.
- Thread starts are refused the same way: a thread would run outside the grader's watch (the op
  recorder is per thread) and outside its timing.
- Escapes from the op recorder (`_disable_current_modes` and friends) are noted.
- A snapshot of every function the grader, PyTorch's timing and the spec rely on is compared after
  each request: a submission that patched one of them fails with the name of what it patched.

"Asked by the submission" means: walking out from the event, a frame of the submission's file comes
before any frame of PyTorch, Triton, NumPy or the course's own code. Triton compiling a kernel
(which starts compilers and writes its cache) is therefore not the submission's doing.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# Audit events that start a process or run another program, with what the submission tried, in words. Refused
# whenever the submission's code is on the stack, through a library or not (PyTorch's multiprocessing, say), unless
# Triton is compiling one of its kernels (its compilers): a process has none of the guards of this one.
PROCESS_EVENTS: dict[str, str] = {
    "os.system": "ran a shell command",
    "os.exec": "replaced the worker process with another program",
    "os.fork": "forked the worker process",
    "os.forkpty": "forked the worker process",
    "os.posix_spawn": "started another process",
    "os.spawn": "started another process",
    "subprocess.Popen": "started another process",
}
# Audit events that create, move or remove files: (what it did, in words; which arguments are paths it changes).
# Judged as a write to each path (see Guard._audit's "open").
# Each path comes with the index of its dir_fd argument (a path relative to an open directory: shutil.rmtree's), or None.
PATH_EVENTS: dict[str, tuple[str, tuple[tuple[int, int | None], ...]]] = {
    "os.rename": ("moved a file", ((0, 2), (1, 3))),  # os.rename and os.replace
    "os.link": ("made a hard link", ((1, 3),)),
    "os.symlink": ("made a symbolic link", ((1, 2),)),
    "os.truncate": ("truncated a file", ((0, None),)),
    "os.remove": ("removed a file", ((0, 1),)),
    "os.rmdir": ("removed a directory", ((0, 1),)),
    "os.mkdir": ("made a directory", ((0, 2),)),
}


def _event_path(args: tuple, index: int, dir_fd_index: int | None) -> Any:
    """The path an event's argument names: relative to its dir_fd where it has one, else as given (an int is a file
    descriptor already open)."""
    path = args[index] if index < len(args) else None
    dir_fd = args[dir_fd_index] if dir_fd_index is not None and dir_fd_index < len(args) else None
    if isinstance(path, (str, bytes)) and isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(os.fsdecode(path)):
        try:
            return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), os.fsdecode(path))
        except OSError:
            return path
    return path
# The files of Triton's launch of a kernel: a process started, or a native module loaded, with one of them between
# the submission's code and the event is Triton compiling the submission's kernel.
_KERNEL_PATH_FILES = (os.path.join("triton", "runtime", "jit.py"), os.path.join("triton", "runtime", "autotuner.py"))
# Audit events refused when the submission asks for them, with what it tried, in words.
REFUSED_EVENTS: dict[str, str] = {
    "os.kill": "sent a signal to another process",
    "os.killpg": "sent a signal to other processes",
    "gc.get_objects": "searched the interpreter's objects with gc (to reach the grader's)",
    "gc.get_referrers": "searched the interpreter's objects with gc (to reach the grader's)",
    "gc.get_referents": "searched the interpreter's objects with gc (to reach the grader's)",
    "sys._current_frames": "read other threads' stack frames",
    "sys.settrace": "installed a tracer",
    "sys.setprofile": "installed a profiler hook",
    "ctypes.dlopen": "loaded native code with ctypes",
    "ctypes.dlsym": "looked up native functions with ctypes",
    "ctypes.cdata": "read raw memory with ctypes",
    "ctypes.call_function": "called native code with ctypes",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# Audit events that make code objects. Code named after a file of PyTorch, Triton, NumPy or the grader would pass
# for theirs in every check here (which trust those files), so the submission may not make such code.
_CODE_EVENTS = ("compile", "code.__new__")
# Setting these swaps what a function or object is; __defaults__ is left out (namedtuple sets it), a
# swapped default of a function the grader relies on shows in the snapshot instead.
_SWAPPED_ATTRIBUTES = {"__code__", "__class__", "__closure__", "__globals__"}

# Escape hatches from a TorchDispatchMode: using one hides PyTorch ops from the grader's recorder.
_MODE_ESCAPES = [
    ("torch.utils._python_dispatch", "_disable_current_modes"),
    ("torch.utils._python_dispatch", "_pop_mode_temporarily"),
    ("torch.utils._python_dispatch", "_pop_mode"),
    ("torch._C", "_DisableTorchDispatch"),
    ("torch._C", "_pop_torch_dispatch_stack"),
    ("torch._C", "_unset_dispatch_mode"),
    ("torch._C", "_set_dispatch_mode"),
]

# Tensor methods that read a tensor's data into Python or NumPy, where no recorder sees what is done
# with it: a graded call that uses them computes (part of) the answer outside its Triton kernels.
HOST_READS = ("numpy", "tolist", "__array__")


def _library_write_dirs() -> tuple[str, ...]:
    """Where PyTorch's and Triton's machinery writes while a submission's call is on the stack: Triton's cache,
    dump and override directories (compiling a kernel), the temporary directory (its compilers' files), and PyTorch's
    compile cache. In a worker, each is the worker's own (autograder/sandbox.py)."""
    import tempfile

    dirs = [tempfile.gettempdir(), os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")]
    try:
        from triton import knobs

        dirs += [knobs.cache.dir, knobs.cache.dump_dir, knobs.cache.override_dir]
    except (ImportError, AttributeError):  # pragma: no cover - an older Triton: its default cache
        dirs.append(os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton"))
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


def _installed_dirs() -> tuple[str, ...]:
    """Python's own library and the environment's and the user's packages: where native modules that were installed,
    not written by the worker, live."""
    import site

    names = ("stdlib", "platstdlib", "purelib", "platlib")
    dirs = [sysconfig.get_paths().get(n) for n in names]
    try:
        dirs += [*site.getsitepackages(), site.getusersitepackages()]
    except AttributeError:  # pragma: no cover - a virtualenv's old site.py
        pass
    return tuple(sorted({os.path.realpath(d) + os.sep for d in dirs if d}))


def _package_dir(name: str) -> str | None:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.realpath(os.path.dirname(path)) + os.sep if path else None


class Guard:
    """The worker's guards; `problems` holds a sentence for each thing the submission was caught doing."""

    def __init__(self, submission_file: str) -> None:
        self.submission_file = os.path.realpath(submission_file)
        self.problems: list[str] = []
        self.in_call = False  # a graded call is running: host reads of tensors are refused
        self.inside_triton: Callable[[], bool] = lambda: False  # Triton's machinery is running (set by the worker)
        self.host_reads: list[str] = []
        self._trusted: tuple[str, ...] = ()
        self._snapshot: list[tuple[str, Any, str, Any]] = []
        self._modules: dict[str, Any] = {}
        self._default_dtype: Any = None  # torch's, when the snapshot was taken
        self._real_files: dict[str, str] = {}
        self._installed = False

    # ----------------------------------------------------------------------------------------------
    # Whose doing is it?
    # ----------------------------------------------------------------------------------------------

    def _realpath(self, filename: str) -> str:
        path = self._real_files.get(filename)
        if path is None:
            path = self._real_files[filename] = os.path.realpath(filename)
        return path

    def _submission_frame(self, frame: Any, stop: Callable[[str], bool]) -> str | None:
        """Walking out from `frame`: 'kernels.py line N' at the first frame of the submission's file, None at a frame
        whose file `stop` names first, or at the end of the stack."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith("<"):
                path = self._realpath(filename)
                if path == self.submission_file:
                    return f"kernels.py line {frame.f_lineno}"
                if stop(path):
                    return None
            frame = frame.f_back
        return None

    def culprit(self, depth: int = 2) -> str | None:
        """'kernels.py line N' when the submission caused what is happening now (no frame of PyTorch, Triton, NumPy,
        the course or the grader in between), else None."""
        return self._submission_frame(sys._getframe(depth), lambda path: path.startswith(self._trusted))

    def direct_caller(self, depth: int = 2) -> str | None:
        """'kernels.py line N' when the frame that raised the event is the submission's own, else None."""
        frame = sys._getframe(depth)
        if frame.f_code.co_filename.startswith("<") or self._realpath(frame.f_code.co_filename) != self.submission_file:
            return None
        return f"kernels.py line {frame.f_lineno}"

    def submission_not_via_a_kernel(self, depth: int = 2) -> str | None:
        """'kernels.py line N' for the innermost frame of the submission's file on the stack, unless Triton's launch of
        a kernel (`_KERNEL_PATH_FILES`) lies between it and the event: for what a library does on the submission's
        behalf only when it compiles a kernel (start compilers, load the launcher it built)."""
        return self._submission_frame(
            sys._getframe(depth), lambda path: path.endswith(_KERNEL_PATH_FILES) and path.startswith(self._trusted)
        )

    def submission_on_stack(self, depth: int = 2) -> str | None:
        """'kernels.py line N' for the innermost frame of the submission's file anywhere on the stack, trusted frames
        in between or not: for what no library does on its own behalf (writing outside its caches)."""
        return self._submission_frame(sys._getframe(depth), lambda path: False)

    def _writable(self, target: Any) -> bool:
        """Whether a write to `target` (a path, or a file descriptor) is one a library makes while the submission's
        code is on the stack: Triton's cache, dumps and overrides, the temporary directory (Triton's compilers'
        files), /dev/null, or a descriptor already open."""
        if isinstance(target, int):
            return True
        try:
            path = os.path.realpath(os.fsdecode(target))
        except (TypeError, ValueError):
            return False
        if path.startswith(self._trusted):  # a library's or the grader's own files, wherever they are (a venv in /tmp)
            return False
        return path == os.devnull or (path + os.sep).startswith(self._write_dirs)  # a directory itself: O_TMPFILE

    def refuse(self, what: str, where: str) -> None:
        sentence = (
            f"Your code {what} ({where}). A submission may only compute with its own Triton kernels: "
            "this is refused, and the grader gives no points to a submission that tries it."
        )
        if sentence not in self.problems:
            self.problems.append(sentence)

    # ----------------------------------------------------------------------------------------------
    # Installation (before the submission is imported)
    # ----------------------------------------------------------------------------------------------

    def install(self, watched: dict[str, Any]) -> None:
        """Arm every guard, then take the snapshot of `watched` (label -> module, class or object)."""
        if self._installed:
            return
        self._installed = True
        trusted = [_package_dir(n) for n in ("torch", "triton", "numpy", "course")]
        trusted.append(os.path.realpath(os.path.dirname(__file__)) + os.sep)  # the grader's own code
        self._trusted = tuple(t for t in trusted if t)
        self._write_dirs = _library_write_dirs()
        self._native_suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
        self._installed_dirs = _installed_dirs()
        self._wrap_thread_starts()
        self._wrap_process_starts()
        self._wrap_mode_escapes()
        self._wrap_host_reads()
        sys.addaudithook(self._audit)
        self.take_snapshot(watched)

    def _audit(self, event: str, args: tuple) -> None:
        if event == "open":
            mode, flags = args[1], args[2]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if not writing:
                return
            # Its own open, or a library's (numpy.savetxt, torch.save ...) called from its code to write elsewhere
            # than the libraries' own caches: a file written for the submission is the submission's doing.
            where = self.culprit() or (None if self._writable(args[0]) else self.submission_on_stack())
            if where:
                self.refuse(f"opened {args[0]!r} for writing", where)
                raise PermissionError(f"the autograder refuses to let a submission write {args[0]!r}")
            return
        if event in PATH_EVENTS:
            what, which = PATH_EVENTS[event]
            for index, dir_fd_index in which:
                target = _event_path(args, index, dir_fd_index)
                if target is None:
                    continue
                where = self.culprit() or (None if self._writable(target) else self.submission_on_stack())
                if where:
                    self.refuse(f"{what} ({target!r})", where)
                    raise PermissionError(f"the autograder refuses to let a submission change {target!r}")
            return
        if event in PROCESS_EVENTS:
            where = self.culprit() or self.submission_not_via_a_kernel()
            if where:
                self.refuse(PROCESS_EVENTS[event], where)
                raise PermissionError(f"the autograder refuses to let a submission do this: it {PROCESS_EVENTS[event]}")
            return
        if event == "import":
            # A native module (code no guard here sees run) from anywhere but the installed packages: a library's own
            # extensions load as usual, and Triton loads the launcher it built for a kernel from its cache.
            filename = args[1] if len(args) > 1 else None
            if not isinstance(filename, str) or not filename.endswith(self._native_suffixes):
                return
            if os.path.realpath(filename).startswith(self._installed_dirs + self._trusted):
                return
            where = self.culprit() or self.submission_not_via_a_kernel()
            if where:
                self.refuse(f"loaded native code ({filename!r})", where)
                raise PermissionError("the autograder refuses to let a submission load native code")
            return
        if event in _CODE_EVENTS or event == "marshal.loads":
            # Made by the submission's own line (not by the import system loading a library's module for it):
            # compile() or a code object under a trusted file's name, or code objects from marshal's bytes.
            where = self.direct_caller()
            if not where:
                return
            if event == "marshal.loads":
                what = "loaded code objects with marshal"
            else:
                filename = args[1] if len(args) > 1 else None
                try:
                    path = os.path.realpath(os.fsdecode(filename)) if filename is not None else ""
                except (TypeError, ValueError):
                    path = ""
                if not path.startswith(self._trusted):
                    return
                what = f"made code that claims to come from {os.fsdecode(filename)!r}"
            self.refuse(what, where)
            raise PermissionError("the autograder refuses to let a submission make code named after another file")
        if event == "object.__setattr__":
            if len(args) >= 2 and args[1] in _SWAPPED_ATTRIBUTES and not isinstance(args[0], type):
                where = self.culprit()
                if where:
                    self.refuse(f"replaced `{args[1]}` of {getattr(args[0], '__qualname__', type(args[0]).__name__)}", where)
                    raise PermissionError("the autograder refuses to let a submission swap a function's code")
            return
        what = REFUSED_EVENTS.get(event)
        if what is None:
            return
        if event in ("os.kill", "os.killpg") and args and args[0] in (os.getpid(), 0):
            return  # signalling itself is a crash, reported as one
        where = self.culprit()
        if where:
            self.refuse(what, where)
            raise PermissionError(f"the autograder refuses to let a submission do this: it {what}")

    def _wrap_thread_starts(self) -> None:
        import _thread

        guard = self

        def wrap(original: Callable) -> Callable:
            def start(*args: Any, **kwargs: Any) -> Any:
                where = guard.culprit()
                if where:
                    guard.refuse("started a thread (its work would run outside the grader's watch and timing)", where)
                    raise PermissionError("the autograder refuses to let a submission start threads")
                return original(*args, **kwargs)

            start.__wrapped_original__ = original  # type: ignore[attr-defined]
            return start

        for module in (_thread, threading):
            for name in ("start_new_thread", "start_joinable_thread", "_start_new_thread", "_start_joinable_thread", "start_new"):
                original = getattr(module, name, None)
                if callable(original) and not hasattr(original, "__wrapped_original__"):
                    setattr(module, name, wrap(original))

    def _wrap_process_starts(self) -> None:
        """multiprocessing's spawn and fork servers start programs through _posixsubprocess.fork_exec, which raises
        no audit event (subprocess.Popen raises its own first, and keeps a reference of its own): both references are
        judged here as the process events are. A Python wrapper can be got round; the kernel's confinement of the
        worker (autograder/sandbox.py) binds every process it starts."""
        import subprocess

        try:
            import _posixsubprocess
        except ImportError:  # pragma: no cover - not POSIX
            return
        guard = self
        for module, name in ((_posixsubprocess, "fork_exec"), (subprocess, "_fork_exec")):
            original = getattr(module, name, None)
            if not callable(original) or getattr(original, "_autograder_guarded", False):
                continue

            def fork_exec(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
                where = guard.culprit() or guard.submission_not_via_a_kernel()
                if where:
                    guard.refuse("started another process", where)
                    raise PermissionError("the autograder refuses to let a submission start a process")
                return __original(*args, **kwargs)

            fork_exec._autograder_guarded = True  # type: ignore[attr-defined]
            setattr(module, name, fork_exec)

    def _wrap_mode_escapes(self) -> None:
        import importlib

        guard = self
        for module_name, name in _MODE_ESCAPES:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            original = getattr(module, name, None)
            if original is None or hasattr(original, "__wrapped_original__"):
                continue

            def escape(*args: Any, __original: Any = original, __name: str = name, **kwargs: Any) -> Any:
                if guard.in_call:
                    where = guard.culprit()
                    if where:
                        guard.refuse(f"switched off the grader's record of PyTorch ops (`{__name}`)", where)
                return __original(*args, **kwargs)

            escape.__wrapped_original__ = original  # type: ignore[attr-defined]
            setattr(module, name, escape)

    def _wrap_host_reads(self) -> None:
        import torch

        guard = self
        for name in HOST_READS:
            original = torch.Tensor.__dict__.get(name) or getattr(torch.Tensor, name, None)
            if original is None or hasattr(original, "__wrapped_original__"):
                continue

            def read(self: Any, *args: Any, __original: Any = original, __name: str = name, **kwargs: Any) -> Any:
                if guard.in_call and not guard.inside_triton():
                    where = guard.culprit()
                    if where and f"Tensor.{__name}" not in guard.host_reads:
                        guard.host_reads.append(f"Tensor.{__name}")
                return __original(self, *args, **kwargs)

            read.__wrapped_original__ = original  # type: ignore[attr-defined]
            setattr(torch.Tensor, name, read)

    # ----------------------------------------------------------------------------------------------
    # The snapshot of what the grader relies on
    # ----------------------------------------------------------------------------------------------

    def take_snapshot(self, watched: dict[str, Any]) -> None:
        """Remember, by identity, every function, class and module reachable as an attribute of `watched`,
        each Python function's code, defaults and closure, and the modules in sys.modules."""
        entries: list[tuple[str, Any, str, Any]] = []  # (what to call it, owner, attribute, value)
        for label, owner in watched.items():
            for name, value in list(_members(owner)):
                if not _worth_watching(value):
                    continue
                shown = f"{label}.{name}"
                entries.append((shown, owner, name, value))
                if isinstance(value, types.FunctionType):
                    for attr in ("__code__", "__defaults__", "__kwdefaults__"):
                        entries.append((shown, value, attr, getattr(value, attr)))
                    for i, cell in enumerate(value.__closure__ or ()):
                        try:
                            entries.append((shown, cell, "cell_contents", cell.cell_contents))
                        except ValueError:  # an empty cell
                            pass
        self._snapshot = entries
        self._modules = {name: sys.modules.get(name) for name in list(sys.modules) if _is_watched_module(name)}
        import torch

        self._default_dtype = torch.get_default_dtype()

    def changed(self) -> list[str]:
        """Names of the watched functions and modules that are no longer what they were."""
        found: list[str] = []
        for shown, owner, name, value in self._snapshot:
            if name in ("__code__", "__defaults__", "__kwdefaults__", "cell_contents"):
                try:
                    current = getattr(owner, name)
                except ValueError:
                    current = _MISSING
            else:
                current = _member(owner, name)
            if current is not value:
                found.append(shown)
        for name, module in self._modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}]")
        return list(dict.fromkeys(found))

    def check(self) -> list[str]:
        """Every problem found so far, after comparing the snapshot and the threads left running."""
        import torch

        changed = self.changed()
        if self._default_dtype is not None and torch.get_default_dtype() != self._default_dtype:
            # torch.set_default_dtype swaps torch.Storage for its dtype's class: say what was done, not "patched"
            changed = [c for c in changed if c != "torch.Storage"]
            sentence = (
                f"Your code changed PyTorch's default dtype to {torch.get_default_dtype()} (torch.set_default_dtype), "
                "and left it changed; the grader's own tensors rely on the default. Give the tensors you make their "
                "dtype instead (torch.zeros(..., dtype=x.dtype)), or restore the default before your code returns."
            )
            if sentence not in self.problems:
                self.problems.append(sentence)
        if changed:
            shown = ", ".join(f"`{c}`" for c in changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
            sentence = (
                f"Your code replaced {shown}, which the grader relies on. A submission may not patch PyTorch, "
                "Triton, Python or the grader: the grader gives no points to a submission that does."
            )
            if sentence not in self.problems:
                self.problems.append(sentence)
        for sentence in self._threads_running_submission():
            if sentence not in self.problems:
                self.problems.append(sentence)
        return list(self.problems)

    def _threads_running_submission(self) -> list[str]:
        found = []
        me = threading.get_ident()
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            while frame is not None:
                if self._realpath(frame.f_code.co_filename) == self.submission_file:
                    found.append(
                        f"A thread is running your code (kernels.py line {frame.f_lineno}) after the call returned: "
                        "graded work must be done, on the grader's thread, by the time the call returns."
                    )
                    break
                frame = frame.f_back
        return found


_MISSING = object()


def _members(owner: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(owner, dict):
        return owner.items()
    if isinstance(owner, (types.ModuleType, type)):
        return vars(owner).items()
    return vars(owner).items() if hasattr(owner, "__dict__") else ()


def _member(owner: Any, name: str) -> Any:
    if isinstance(owner, dict):
        return owner.get(name, _MISSING)
    try:
        return vars(owner).get(name, _MISSING)
    except TypeError:
        return getattr(owner, name, _MISSING)


def _worth_watching(value: Any) -> bool:
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
                              types.ModuleType, staticmethod, classmethod, property)) or callable(value)


def _is_watched_module(name: str) -> bool:
    return name in ("torch", "triton", "time", "os", "threading", "_thread", "gc", "builtins", "io", "pickle") or name.startswith(
        ("torch.cuda", "torch.utils._python_dispatch", "autograder", "course", "triton.runtime", "multiprocessing")
    )


def stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if k in paths)


def watched_objects(spec_module: Any, spec: Any, extra: dict[str, Any]) -> dict[str, Any]:
    """Label -> module, class or instance whose functions the grader relies on while a submission runs."""
    import builtins
    import io
    import multiprocessing.connection as connection
    import time

    import torch
    import torch.nn.functional
    import torch.utils._python_dispatch

    watched: dict[str, Any] = {
        "builtins": builtins, "time": time, "os": os, "io": io, "threading": threading, "sys": sys,
        "torch": torch, "torch._C": torch._C, "torch.cuda": torch.cuda, "torch.nn.functional": torch.nn.functional,
        "torch.Tensor": torch.Tensor, "torch.cuda.Event": torch.cuda.Event, "torch.cuda.Stream": torch.cuda.Stream,
        "torch.utils._python_dispatch": torch.utils._python_dispatch, "torch._ops": torch._ops,
        "torch._ops.OpOverload": torch._ops.OpOverload, "torch.serialization": torch.serialization,
        "multiprocessing.connection": connection, "Connection": connection.Connection,
        "spec module": spec_module,
    }  # fmt: skip
    base = getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase", None)
    if base is not None:
        watched["torch.Tensor (C methods)"] = base
    event_base = getattr(torch._C, "_CudaEventBase", None)
    if event_base is not None:
        watched["torch.cuda.Event (C methods)"] = event_base
    for name in ("_thread",):
        watched[name] = sys.modules[name]
    watched["spec"] = spec
    for i, part in enumerate(getattr(spec, "parts", [])):
        watched[f"spec.parts[{i}]"] = part
    for i, sc in enumerate(getattr(spec, "speed", [])):
        watched[f"spec.speed[{i}]"] = sc
    watched.update(extra)
    return watched


def memory_problem(exc: BaseException, limit_bytes: int | None, host_limit_bytes: int | None = None) -> str:
    """A sentence for an allocation the limits refused, or '' when `exc` is something else.

    `limit_bytes` is the cap of the memory the graded call runs on; `host_limit_bytes`, where it differs (the GPU
    tier), the cap of host memory, named when the host allocator is the one that refused."""
    text = f"{type(exc).__name__}: {exc}"
    if host_limit_bytes is not None and (isinstance(exc, MemoryError) or "CPUAllocator" in text):
        limit_bytes = host_limit_bytes
    if not (isinstance(exc, MemoryError) or "out of memory" in text.lower() or "can't allocate memory" in text
            or "Cannot allocate memory" in text):  # fmt: skip
        return ""
    import re

    asked = ""
    found = re.search(r"tried to allocate (\d+) bytes", text) or re.search(r"Tried to allocate ([\d.]+ [KMGT]i?B)", text)
    if found:
        value = found.group(1)
        asked = f" {_gib(int(value))}" if value.isdigit() else f" {value}"
    cap = f", more than the {_gib(limit_bytes)} a graded call may use" if limit_bytes else ""
    return (
        f"Your code tried to allocate{asked or ' more memory than it may'}{cap}. Allocate only the output "
        "and the small buffers your kernels need."
    )


def _gib(n: int | None) -> str:
    if not n:
        return "?"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def limit_host_memory(budget_bytes: int, gpu: bool = False) -> int | None:
    """Cap the host memory this process may add to what it holds now; the budget granted, or None.

    On the CPU tier the cap is on the address space (RLIMIT_AS). A CUDA process reserves far more address space
    than it uses (the device's unified virtual addresses), so on the GPU tier the cap is on the data segment
    instead (RLIMIT_DATA: the heap and private anonymous mappings, where torch's CPU allocator and pinned host
    buffers live, but not the driver's reservations). Without it, a 4 TiB `torch.empty` on the host is filled
    with NaN page by page and takes the machine's memory before anything refuses it.
    """
    import resource

    which, field = (resource.RLIMIT_DATA, "VmData:") if gpu else (resource.RLIMIT_AS, "VmSize:")
    try:
        with open("/proc/meminfo") as f:
            ram = next((int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:")), 0)
        if ram:
            budget_bytes = min(budget_bytes, ram // 2)
        with open("/proc/self/status") as f:
            held = next((int(line.split()[1]) * 1024 for line in f if line.startswith(field)), 0)
        limit = held + budget_bytes
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(which, (limit, hard))
        return budget_bytes
    except (OSError, ValueError, StopIteration):
        return None


def submission_dir(submission_file: str) -> Path:
    return Path(submission_file).resolve().parent
