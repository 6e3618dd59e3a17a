"""The grader's child processes: the worker that runs a submission, the replayer that replays its
tapes, each with a time limit per request, surviving whatever the submission does.

Children are forked by a zygote (autograder/zygote.py) that has imported PyTorch and Triton once, or,
where fork is not available, spawned as fresh interpreters. Either way a child leads its own process
group (killed whole when it is stopped), sets the parent-death signal, and watches a lifeline: no
child outlives the grader (autograder/lifecycle.py).

Replies are read as bytes and decoded with `torch.load(weights_only=True)`, which builds only plain
data and tensors: whatever the submission does to the worker, its replies cannot run code in the
grader. Each request carries a fresh id the reply must echo, so a stray or forged message is not
taken for the answer to the next request.
"""

from __future__ import annotations

import atexit
import io
import json
import multiprocessing as mp
import os
import pickle
import secrets
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# What of the grader's environment reaches the zygote, and so every worker and replayer: what Python, PyTorch, Triton,
# CUDA and the C compiler read, and nothing else. An instructor's environment holds credentials (SSH_AUTH_SOCK, API
# tokens): a red team's confined worker had the instructor's ssh-agent sign data it chose, and wrote the signature and
# a token into its own results.
WORKER_ENV = frozenset(
    """PATH HOME USER LOGNAME LANG LANGUAGE TZ TERM TMPDIR TEMP TMP PWD SHELL COLUMNS LINES NO_COLOR FORCE_COLOR
    LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH PKG_CONFIG_PATH CC CXX VIRTUAL_ENV""".split()
)
WORKER_ENV_PREFIXES = ("LC_", "PYTHON", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_",
                       "PYTORCH_", "OMP_", "MKL_", "OPENBLAS_", "KMP_", "GOMP_", "CUBLAS", "CUDNN_", "NCCL_", "XDG_",
                       "CONDA_", "AUTOGRADER_", "COURSE_")  # fmt: skip


def worker_environment(environ: dict[str, str]) -> dict[str, str]:
    """The part of `environ` a process that runs or compiles a submission's code is given (WORKER_ENV)."""
    return {k: v for k, v in environ.items() if k in WORKER_ENV or k.startswith(WORKER_ENV_PREFIXES)}


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 128 << 30


# A reply larger than this is refused: the largest honest one is a call's outputs, its setup tensors and its carried
# state, hundreds of MB at the speed cases' sizes. An eighth of this machine's memory at most, since the grader holds a
# reply and a copy of it while it reads it: 16 GiB let a worker stream 32 GB into the grader's memory (red team 17).
MAX_REPLY_BYTES = min(16 << 30, _physical_memory() // 8)


class WorkerLost(Exception):
    """The child died or ran out of time during a request; the message says which, in words."""


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


# --------------------------------------------------------------------------------------------------
# The zygote, one per tier, shared by every grading in this process
# --------------------------------------------------------------------------------------------------


class Zygote:
    """Grader side of autograder/zygote.py."""

    def __init__(self, interpret: bool) -> None:
        self.interpret = interpret
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = worker_environment(dict(os.environ))
        # NumPy's OpenBLAS starts a thread pool when imported; a process that forks must hold no other thread, and a
        # child is confined only while it is its only thread (sandbox.confine). The children's BLAS (the
        # interpreter's tl.dot) then runs on one thread, next to the other child.
        env["OPENBLAS_NUM_THREADS"] = "1"
        if self.interpret:
            env["TRITON_INTERPRET"] = "1"  # fixed before the zygote imports triton
        else:
            # Said explicitly: course.env would otherwise ask NVML whether a GPU is present, and NVML starts a
            # thread in the zygote, which must hold none to fork (it then spawns every worker, seconds each).
            env["TRITON_INTERPRET"] = "0"
        code = "import sys, json; sys.path[:] = json.loads(sys.argv[1]); from autograder.zygote import main; main(int(sys.argv[2]))"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, json.dumps(sys.path), str(theirs.fileno())],
            pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL, close_fds=True,
        )  # fmt: skip
        theirs.close()
        self.sock = ours
        hello = self._read()
        if not hello or "ready" not in hello:
            self.close()
            raise RuntimeError((hello or {}).get("error", "the zygote did not start"))
        if hello.get("threads", 1) > 1 or (not self.interpret and hello.get("cuda_touched")):
            # Forking a process that runs threads, or that loaded the CUDA driver, gives children that may hang
            # or cannot use the GPU: fall back to starting each child as a fresh interpreter.
            self.close()
            raise RuntimeError(f"the zygote cannot fork safely ({hello})")

    def _read(self) -> dict | None:
        assert self.sock is not None
        header = self._exactly(4)
        if header is None:
            return None
        data = self._exactly(struct.unpack("!I", header)[0])
        return pickle.loads(data) if data is not None else None

    def _exactly(self, n: int) -> bytes | None:
        assert self.sock is not None
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def fork(self, target: str, args: list, fds: list[int]) -> int:
        with self.lock:
            if self.sock is None or self.process is None or self.process.poll() is not None:
                self.start()
            assert self.sock is not None
            data = pickle.dumps({"target": target, "args": args})
            socket.send_fds(self.sock, [struct.pack("!I", len(data))], fds)
            self.sock.sendall(data)
            reply = self._read()
        if not reply or "pid" not in reply:
            raise RuntimeError((reply or {}).get("error", "the zygote did not answer"))
        return int(reply["pid"])

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()  # the zygote sees the end of its socket and exits
            self.sock = None
        if self.process is not None:
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None


_ZYGOTES: dict[bool, Zygote] = {}
_ZYGOTES_LOCK = threading.Lock()
_NO_ZYGOTE: set[bool] = set()  # tiers whose zygote failed to start: their children are spawned


def zygote_available(interpret: bool) -> bool:
    return (sys.platform.startswith("linux") and hasattr(socket, "send_fds") and hasattr(os, "fork")
            and os.environ.get("AUTOGRADER_NO_ZYGOTE", "") != "1" and interpret not in _NO_ZYGOTE)  # fmt: skip


def _zygote(interpret: bool) -> Zygote:
    with _ZYGOTES_LOCK:
        if interpret not in _ZYGOTES:
            _ZYGOTES[interpret] = Zygote(interpret)
        return _ZYGOTES[interpret]


@atexit.register
def _close_zygotes() -> None:
    for z in list(_ZYGOTES.values()):
        z.close()


def guard_the_grader() -> None:
    """Before a grading's first child starts: the grader adopts the orphans of its descendants (a process a
    submission detaches from its worker then stays the grader's to end) and refuses ptrace and /proc reads of its
    memory to other processes of its user, as the zygote and the replayer do."""
    from autograder.lifecycle import adopt_orphans, refuse_ptrace

    adopt_orphans()
    refuse_ptrace()


def end_every_child() -> int:
    """After a grading, before its results are written: the zygotes closed, then every other child of the grader
    ended (after guard_the_grader, whatever a submission detached is among them), so that nothing a submission
    started can rewrite the results. Returns how many were ended besides the zygotes."""
    from autograder.lifecycle import end_children

    _close_zygotes()
    return end_children()


# --------------------------------------------------------------------------------------------------
# One child process
# --------------------------------------------------------------------------------------------------


def _spawned_main(target: str, conn: Any, lifeline: Any, *args: Any) -> None:
    """Entry point of a child started without the zygote (a fresh interpreter)."""
    from autograder.lifecycle import die_with_parent
    from autograder.zygote import _targets

    die_with_parent()
    _targets()[target](conn, lifeline, *args)


_SPAWN_LOCK = threading.Lock()


class Child:
    """A child of the grader: its channel, its lifeline, how to learn its return code, how to end it."""

    def __init__(self, target: str, args: list, interpret: bool) -> None:
        self.conn: Any = None
        self.pid = 0
        self._lifeline: Any = None
        self._status: int | None = None  # read end of the zygote's status pipe
        self._process: Any = None  # an mp.Process, without the zygote
        self._code: int | None = None
        parent, child = mp.Pipe()
        life_r, life_w = mp.Pipe(duplex=False)
        if zygote_available(interpret):
            status_r, status_w = os.pipe()
            try:
                self.pid = _zygote(interpret).fork(target, args, [child.fileno(), life_r.fileno(), status_w])
                self._status = status_r
            except (RuntimeError, OSError) as exc:
                print(f"autograder: starting children as fresh interpreters ({exc})", file=sys.stderr)
                _NO_ZYGOTE.add(interpret)
                os.close(status_r)
            finally:
                os.close(status_w)
        if not self.pid:
            ctx = mp.get_context("spawn")
            # In the environment before the child imports triton and NumPy: the interpreter's switch, and one BLAS
            # thread (NumPy's pool starts at import, and a child is confined only while it is its only thread).
            child_env = {"OPENBLAS_NUM_THREADS": "1", **({"TRITON_INTERPRET": "1"} if interpret else {})}
            with _SPAWN_LOCK:  # gradings on other threads must not see (or undo) this change of the environment
                env_before = {name: os.environ.get(name) for name in child_env}
                os.environ.update(child_env)
                try:
                    self._process = ctx.Process(target=_spawned_main, args=(target, child, life_r, *args), daemon=True)
                    self._process.start()
                finally:
                    for name, value in env_before.items():
                        if value is None:
                            os.environ.pop(name, None)
                        else:
                            os.environ[name] = value
            self.pid = self._process.pid
        child.close()  # the child holds its ends now: the grader keeps only its own
        life_r.close()
        self.conn = parent
        self._lifeline = life_w

    def alive(self) -> bool:
        if self._process is not None:
            return self._process.is_alive()
        return self.returncode(0.0) is None

    def returncode(self, wait: float = 5.0) -> int | None:
        """The child's return code (negative: the signal that killed it), waiting up to `wait` s; None if alive."""
        if self._code is not None:
            return self._code
        if self._process is not None:
            self._process.join(wait)
            self._code = self._process.exitcode
            return self._code
        if self._status is None:
            return None
        import select

        poller = select.poll()  # not select.select: a grader running many workers holds descriptors past 1024
        poller.register(self._status, select.POLLIN | select.POLLHUP)
        if not poller.poll(max(0.0, wait) * 1000.0):
            return None
        data = os.read(self._status, 4)
        os.close(self._status)
        self._status = None
        self._code = struct.unpack("!i", data)[0] if len(data) == 4 else -signal.SIGKILL
        return self._code

    def group(self) -> int:
        """The child's process group, once it leads its own (never the grader's)."""
        try:
            return self.pid if self.pid and os.getpgid(self.pid) == self.pid else 0
        except (ProcessLookupError, OSError):
            return 0

    def kill(self) -> None:
        """End the child and every process it started."""
        if self._code is None and self.returncode(0.0) is None:
            self.send_kill()
            self.returncode(5.0)
        self.close()

    def send_kill(self) -> None:
        """SIGKILL the child's process group and the child, touching nothing else of this object: safe from a
        thread other than the one using the child, which then finds its channel closed."""
        if self._code is not None:
            return
        group = self.group()
        for kill, target in ((os.killpg, group), (os.kill, self.pid)):
            if target:
                try:
                    kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError, OSError):
                    pass

    def close(self) -> None:
        for end in (self.conn, self._lifeline):
            if end is not None:
                try:
                    end.close()
                except OSError:
                    pass
        self.conn = self._lifeline = None
        if self._status is not None:
            os.close(self._status)
            self._status = None


# --------------------------------------------------------------------------------------------------
# The worker and the replayer
# --------------------------------------------------------------------------------------------------


class _Process:
    """What the worker and the replayer share: a child started on demand, requests with a time limit."""

    target = ""
    who = "The process running your code"

    def __init__(self, slug: str, device: str) -> None:
        self.slug = slug
        self.device = device
        self.log = Path(tempfile.mkstemp(prefix=f"autograder-{slug}-{self.target}-", suffix=".log")[1])
        self.child: Child | None = None
        self.pending: str | None = None  # id of a request sent and not yet answered
        self.closed = False  # set by cleanup(): no child starts again (a grading stopped by Ctrl-C stays stopped)

    def args(self) -> list:
        raise NotImplementedError

    def _start_child(self) -> None:
        if self.closed:
            raise WorkerLost("The grading was stopped, so this case was not run.")
        self.child = Child(self.target, self.args(), interpret=self.device == "cpu")
        if self.closed:  # stopped (abort, from another thread) while this child started
            self.kill()
            raise WorkerLost("The grading was stopped, so this case was not run.")

    def alive(self) -> bool:
        return self.child is not None and self.child.alive()

    def send(self, message: dict) -> str:
        request_id = secrets.token_hex(8)
        assert self.child is not None
        self.child.conn.send_bytes(encode({**message, "id": request_id}))
        self.pending = request_id
        return request_id

    def receive(self, timeout: float, doing: str, request_id: str) -> dict:
        if self.child is None:
            raise WorkerLost(f"{self.who} was stopped while {doing}.")
        conn = self.child.conn
        self.pending = None
        try:
            # The whole reply by the deadline, not only its first bytes: a child that wrote a length and then nothing
            # (or a byte a second) held the grader in recv_bytes forever (red team 10).
            data = read_message(conn, time.monotonic() + timeout, MAX_REPLY_BYTES)
            if data is None:
                self.kill()
                raise WorkerLost(self.timeout_message(doing, timeout))
        except (EOFError, OSError):
            data = None  # the process ended, perhaps mid-reply: reported below
        except ValueError:  # a length past MAX_REPLY_BYTES: unreadable
            data = bytearray()
        if data is not None:
            reply = decode_reply(data) if data else None
            if reply is None or reply.get("id") != request_id:
                self.kill()
                raise WorkerLost(
                    f"{self.who} sent a reply the grader could not read while {doing} "
                    "(something in it wrote to the grader's channel): that counts as a failure."
                )
            return reply
        code = self.child.returncode(5.0)
        self.kill()
        tail = self.log_tail()
        if code is not None and code < 0:
            what = f"crashed with {_signal_name(code)}"
            if -code == signal.SIGSEGV:
                what += " (a segmentation fault: memory read or written out of bounds, often an unmasked load)"
            elif -code == signal.SIGKILL:
                what += " (killed from outside: usually the system running out of memory)"
        else:
            what = f"exited with code {code} (os._exit, or a crash in native code)"
        raise WorkerLost(f"{self.who} {what} while {doing}." + (f"\nIts last output:\n{tail}" if tail else ""))

    def timeout_message(self, doing: str, timeout: float) -> str:
        return (
            f"Timed out: {doing} took longer than {timeout:g} s, so it was stopped. "
            "Look for a loop that never ends (a `while` whose condition never changes, a range that "
            "never reaches its end)."
        )

    def kill(self) -> None:
        if self.child is not None:
            self.child.kill()
        self.child = None
        self.pending = None

    def stop(self) -> None:
        if self.child is not None and self.child.alive():
            try:
                self.child.conn.send_bytes(encode({"op": "stop"}))
                self.child.returncode(5.0)
            except (BrokenPipeError, OSError):
                pass
        self.kill()

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        kept = [ln for ln in text.splitlines() if ln.strip() and "Warning" not in ln and "warn(" not in ln]
        return "\n".join(kept[-lines:])

    def abort(self) -> None:
        """From another thread than the one grading with this process (Ctrl-C): end the child at once and start no
        other; that thread's request fails, and so do its next ones, at once. cleanup() comes after, from it or
        once it has ended."""
        self.closed = True
        child = self.child
        if child is not None:
            child.send_kill()

    def cleanup(self) -> None:
        self.closed = True
        self.stop()
        self.log.unlink(missing_ok=True)


class Worker(_Process):
    """One child holding one imported submission; restarted after it crashes or hangs."""

    target = "worker"

    def __init__(self, slug: str, submission: Path, device: str, import_timeout: float) -> None:
        super().__init__(slug, device)
        self.submission = submission
        self.import_timeout = import_timeout
        self.import_error = ""

    def args(self) -> list:
        return [self.slug, str(self.submission), self.device, str(self.log)]

    def start(self) -> None:
        self._start_child()
        hello = self.receive(self.import_timeout, "importing kernels.py", "hello")
        self.import_error = "" if hello.get("ok") else str(hello.get("error", "kernels.py did not import."))
        if self.import_error and hello.get("problems"):
            self.import_error = str(hello["problems"][0])

    def request(self, message: dict, timeout: float, doing: str) -> dict:
        if not self.alive():
            self.kill()
            self.start()
        reply = self.receive(timeout, doing, self.send(message))
        if reply.get("restart"):
            self.kill()  # the worker's CUDA context is broken: the next request starts a fresh one
        return reply


class Replayer(_Process):
    """The trusted child that replays the worker's tapes: it reads kernels.py as text and never runs it."""

    target = "replayer"
    who = "The grader's replay of your kernels"

    def __init__(self, slug: str, submission: Path, source: str, device: str) -> None:
        super().__init__(slug, device)
        self.submission = submission
        self.source = source

    def args(self) -> list:
        return [self.slug, os.path.realpath(self.submission), self.source, self.device, str(self.log)]

    def submit(self, message: dict) -> str:
        """Send a request; collect() its answer before the next submit. Two requests outstanding could deadlock: the
        grader blocked writing the second into a full channel while the replayer is blocked writing the first's
        answer."""
        if self.pending is not None:
            raise RuntimeError(f"the replayer has an answer outstanding ({self.pending}): collect it before submitting")
        if not self.alive():
            self.kill()
            self._start_child()
        try:
            return self.send(message)
        except OSError:  # it ended after the check above (after a GPU fault, say): one fresh child, once
            self.kill()
            self._start_child()
            return self.send(message)

    def collect(self, request_id: str, timeout: float, doing: str) -> dict:
        reply = self.receive(timeout, doing, request_id)
        if reply.get("restart"):
            self.kill()  # its GPU context is broken and it is ending: the next request starts a fresh one
        return reply

    def timeout_message(self, doing: str, timeout: float) -> str:
        return (
            f"Timed out: {doing} took longer than {timeout:g} s, so it was stopped. The grader replays the launches "
            "your call made on new inputs: a kernel whose loops depend on the data it reads may not end on them."
        )


def encode(message: dict) -> bytes:
    """A request as bytes (torch.save: tensors travel inside, never through shared memory or a pickle)."""
    import torch

    buf = io.BytesIO()
    torch.save(message, buf)
    return buf.getvalue()


# The most containers and values a reply may hold, counted as if every shared container were copied where it appears:
# what every walk of the reply in the grader (the tape's checks, the outputs) costs at most. The largest reply of the
# eight solutions' grading on the CPU tier (2026-12-07, 382 replies) expanded to 1,472.
MAX_REPLY_NODES = 1_000_000
# The most bytes of a reply's pickle (its structure: names, numbers, the tape's entries): a bound on how long its
# decoding takes, about 2 s here at the bound (red team 15's pickle of cheap opcodes).
MAX_PICKLE_BYTES = 4 << 20


_LARGEST_INT = 2**64


def expanded_size(value: Any, limit: int) -> int | None:
    """How many containers and values `value` holds counted as a tree (a container reached by two paths counts
    twice), or None past `limit`, on a cycle or on an integer past 64 bits. Linear in the object graph: each container
    is sized once. A 2 KB pickle of a chain of lists, each holding the next twice, expands to 2**64 leaves ("billion
    laughs")."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]  # every container stays alive in `value`: ids are not reused
    while stack:
        node, done = stack.pop()
        if not isinstance(node, (dict, list, tuple)):
            continue
        key = id(node)
        children = list(node.keys()) + list(node.values()) if isinstance(node, dict) else list(node)
        if done:
            total = 1 + sum(sizes.get(id(c), 1) if isinstance(c, (dict, list, tuple)) else 1 for c in children)
            on_path.discard(key)
            if total > limit:
                return None
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            return None  # a cycle
        if any(type(c) is int and not -_LARGEST_INT <= c <= _LARGEST_INT for c in children):
            return None  # no honest reply holds a number past 64 bits, and arithmetic on one costs its digits squared
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if isinstance(c, (dict, list, tuple)))
    return sizes.get(id(value), 1)


_FIRST_READ_BYTES = 64 << 20


def _read_exactly(fd: int, n: int, deadline: float) -> bytearray | None:
    """`n` bytes from `fd`, or None if they have not all come by `deadline` (time.monotonic()); EOFError if it
    closes."""
    import select

    # The buffer grows with what has come, doubling from 64 MB: a header announcing gigabytes that never come costs
    # nothing (it was allocated whole before the first byte, red team 15), and an honest large reply is copied at most
    # once per doubling.
    buf = bytearray(min(n, _FIRST_READ_BYTES))
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    got = 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000.0):
            return None
        if got == len(buf):
            buf.extend(bytes(min(len(buf), n - len(buf))))
        with memoryview(buf) as view:
            k = os.readv(fd, [view[got:]])
        if k == 0:
            raise EOFError("the channel closed mid-message")
        got += k
    return buf


def read_message(conn: Any, deadline: float, max_bytes: int) -> bytearray | None:
    """One message of multiprocessing's framing (a 4-byte length, or -1 and an 8-byte one, then the bytes) from `conn`,
    whole by `deadline`, or None. ValueError for a length past `max_bytes`; EOFError if the channel closes."""
    fd = conn.fileno()
    header = _read_exactly(fd, 4, deadline)
    if header is None:
        return None
    (size,) = struct.unpack("!i", header)
    if size == -1:
        longer = _read_exactly(fd, 8, deadline)
        if longer is None:
            return None
        (size,) = struct.unpack("!Q", longer)
    if size < 0 or size > max_bytes:
        raise ValueError(f"a message of {size} bytes")
    return _read_exactly(fd, size, deadline)


def stored_as_saved(data: bytes | bytearray) -> bool:
    """Whether `data` is laid out as torch.save writes it: a zip archive from its first byte, every member stored
    uncompressed, the members together no larger than the archive. Then reading it takes no more memory than its own
    bytes. A member deflated 1000:1, which torch.load would inflate, or a file in the legacy format, whose storages
    are as large as its pickle says, are refused before anything is read (red team 10: a small reply inflating to
    gigabytes in the grader)."""
    import zipfile

    if bytes(data[:4]) != b"PK\x03\x04":  # torch.load's own test of which format it reads
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        return False
    if any(m.compress_type != zipfile.ZIP_STORED for m in members):
        return False
    # Everything but the storages is read by torch.load's unpickler, in Python, an opcode at a time: a pickle of 60 MB
    # of opcodes that build nothing took 82 s (red team 15). The largest of the eight solutions' on the CPU tier is
    # 8 KB (2026-12-07, 382 replies); tensors' bytes are in the storages, which are not walked.
    if sum(m.file_size for m in members if "/data/" not in m.filename) > MAX_PICKLE_BYTES:
        return False
    return sum(m.file_size for m in members) <= len(data)


def decode_reply(data: bytes | bytearray) -> dict | None:
    """A child's reply as a dict of plain data and tensors, or None when it is not one (or one that would expand past
    MAX_REPLY_NODES, or hold itself)."""
    import torch

    if not stored_as_saved(data):
        return None
    try:
        reply = torch.load(io.BytesIO(data), weights_only=True)
    except Exception:  # noqa: BLE001  (anything unreadable is refused, whatever the reason)
        return None
    if not isinstance(reply, dict):
        return None
    return reply if expanded_size(reply, MAX_REPLY_NODES) is not None else None
