"""A grader-owned process that imports PyTorch, Triton and the grader once, then forks the grader's
children (workers and replayers) on request: a child starts in milliseconds instead of the seconds an
interpreter takes to import PyTorch.

The zygote runs nothing but imports: no tensor op, no CUDA (a process that initialised CUDA cannot
fork a usable child), no kernel; TRITON_INTERPRET is fixed in its environment before Triton is
imported. Every child sets the parent-death signal before anything else runs in it, and the zygote
ends when its control socket closes, which happens whenever the grader ends, SIGKILL included: so
the children die with the grader.

Protocol on the control socket (AF_UNIX stream, grader <-> zygote): a request is a 4-byte length and a
pickle {"target": "worker" | "replayer", "args": [...]}, sent with three file descriptors: the child's
channel to the grader, its lifeline (read end) and the write end of its status pipe. The reply is
{"pid": int} or {"error": str}. When the zygote reaps a child it writes the child's return code
(negative: killed by that signal) as 4 bytes to its status pipe, and closes it.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import sys
import traceback
from typing import Any

from autograder.lifecycle import die_with_parent, refuse_ptrace

MAX_FDS = 3


def _preload() -> None:
    """Everything a worker or replayer imports, imported once here."""
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401  (the worker's op recorder would import it on its first use)
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    if os.environ.get("TRITON_INTERPRET") == "1":
        import triton.runtime.interpreter  # noqa: F401
    import autograder.integrity  # noqa: F401
    import autograder.kernel_check  # noqa: F401  (takes its snapshot of triton.language before any kernel runs)
    import autograder.replayer  # noqa: F401
    import autograder.timing  # noqa: F401
    import autograder.worker  # noqa: F401
    import course.loader  # noqa: F401
    from autograder.specs import SLUGS, load_spec

    for slug in SLUGS:
        load_spec(slug)


def _targets() -> dict[str, Any]:
    from autograder import replayer, worker

    return {"worker": worker.main, "replayer": replayer.main}


def _send(sock: socket.socket, message: dict) -> None:
    data = pickle.dumps(message)
    sock.sendall(struct.pack("!I", len(data)) + data)


def _receive(sock: socket.socket) -> tuple[dict | None, list[int]]:
    header, fds, _, _ = socket.recv_fds(sock, 4, MAX_FDS)
    if len(header) < 4:
        for fd in fds:
            os.close(fd)
        return None, []
    (size,) = struct.unpack("!I", header)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None, fds
        data += chunk
    return pickle.loads(data), fds


def main(control_fd: int) -> None:
    control = socket.socket(fileno=control_fd)
    refuse_ptrace()
    try:
        _preload()
        targets = _targets()
    except BaseException as exc:  # noqa: BLE001
        _send(control, {"error": f"the zygote could not import the grader: {type(exc).__name__}: {exc}"})
        os._exit(1)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    status_pipes: dict[int, int] = {}
    _send(control, {"ready": os.getpid(), "threads": _thread_count(), "cuda_touched": _cuda_touched()})
    poller = select.poll()  # not select.select: descriptors may pass 1024 when many children run
    poller.register(control, select.POLLIN | select.POLLHUP)
    poller.register(wake_r, select.POLLIN)
    while True:
        try:
            readable = [fd for fd, _ in poller.poll()]
        except InterruptedError:
            continue
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        _reap(status_pipes)
        if control.fileno() not in readable:
            continue
        try:
            request, fds = _receive(control)
        except (OSError, EOFError, pickle.UnpicklingError):
            request, fds = None, []
        if request is None:
            break  # the grader is gone: so are we, and our children with us (their parent-death signal)
        if len(fds) != MAX_FDS or request.get("target") not in targets:
            for fd in fds:
                os.close(fd)
            _send(control, {"error": "malformed request"})
            continue
        pid = os.fork()
        if pid == 0:
            _child(targets[request["target"]], request.get("args", []), fds, control, (wake_r, wake_w), status_pipes)
        status_pipes[pid] = fds[2]
        os.close(fds[0])
        os.close(fds[1])
        _send(control, {"pid": pid})
    os._exit(0)


def _child(target: Any, args: list, fds: list[int], control: socket.socket, wake: tuple[int, int],
           status_pipes: dict[int, int]) -> None:  # fmt: skip
    """In the forked child: shed the zygote's state, then run the target; never returns."""
    code = 0
    try:
        die_with_parent()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        control.close()
        for fd in (*wake, fds[2], *status_pipes.values()):
            os.close(fd)
        from multiprocessing.connection import Connection

        target(Connection(fds[0]), Connection(fds[1], writable=False), *args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _reap(status_pipes: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = status_pipes.pop(pid, None)
        if fd is not None:
            try:
                os.write(fd, struct.pack("!i", os.waitstatus_to_exitcode(status)))
            except OSError:
                pass
            os.close(fd)


def _cuda_touched() -> bool:
    """Whether CUDA was initialised here (a forked child could then not use the GPU).

    Loading the driver library is harmless (importing PyTorch built for CUDA does it); calling cuInit is
    not. The driver says which: cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED (3) before cuInit.
    """
    try:
        import torch

        if torch.cuda.is_initialized():
            return True
        with open(f"/proc/{os.getpid()}/maps") as f:
            if "libcuda.so" not in f.read():
                return False
        import ctypes

        count = ctypes.c_int()
        return ctypes.CDLL("libcuda.so.1").cuDeviceGetCount(ctypes.byref(count)) != 3
    except OSError:
        return False


def _thread_count() -> int:
    try:
        return len(os.listdir(f"/proc/{os.getpid()}/task"))
    except OSError:
        return 1


if __name__ == "__main__":
    main(int(sys.argv[1]))
