"""Run a submission in a worker process with a time limit per request, and survive whatever it does.

The worker's replies are read as bytes and decoded with `torch.load(weights_only=True)`, which builds
only plain data and tensors: whatever the submission does to the worker, its replies cannot run code
in the grader. Each request carries a fresh id the reply must echo, so a stray or forged message is
not taken for the answer to the next request.
"""

from __future__ import annotations

import io
import multiprocessing as mp
import os
import secrets
import signal
import tempfile
from pathlib import Path
from typing import Any

from autograder import worker

MAX_REPLY_BYTES = 16 << 30  # a reply larger than this is refused (the largest honest one is a few timed outputs)


class WorkerLost(Exception):
    """The worker died or ran out of time during a request; the message says which, in words."""


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Worker:
    """One spawned process holding one imported submission; restarted after it crashes or hangs."""

    def __init__(self, slug: str, submission: Path, device: str, import_timeout: float) -> None:
        self.slug = slug
        self.submission = submission
        self.device = device
        self.import_timeout = import_timeout
        self.log = Path(tempfile.mkstemp(prefix=f"autograder-{slug}-", suffix=".log")[1])
        self.process: Any = None
        self.conn: Any = None
        self.import_error = ""
        self.group = 0  # the worker's process group, once it has made one

    def start(self) -> None:
        ctx = mp.get_context("spawn")  # a fresh interpreter: nothing of the grader's state is inherited
        parent, child = ctx.Pipe()
        env_before = os.environ.get("TRITON_INTERPRET")
        if self.device == "cpu":
            os.environ["TRITON_INTERPRET"] = "1"  # must be in the environment before the child imports triton
        try:
            self.process = ctx.Process(
                target=worker.main,
                args=(child, self.slug, str(self.submission), self.device, str(self.log)),
                daemon=True,
            )
            self.process.start()
        finally:
            if env_before is None:
                os.environ.pop("TRITON_INTERPRET", None)
            else:
                os.environ["TRITON_INTERPRET"] = env_before
        child.close()
        self.conn = parent
        hello = self._receive(self.import_timeout, "importing kernels.py")
        self._note_group()
        self.import_error = "" if hello.get("ok") else str(hello.get("error", "kernels.py did not import."))
        if self.import_error and hello.get("problems"):
            self.import_error = str(hello["problems"][0])

    def request(self, message: dict, timeout: float, doing: str) -> dict:
        if self.process is None or not self.process.is_alive():
            self.start()
        request_id = secrets.token_hex(8)
        self.conn.send({**message, "id": request_id})
        reply = self._receive(timeout, doing, request_id)
        if reply.get("restart"):
            self.kill()  # the worker's CUDA context is broken: the next request starts a fresh one
        return reply

    def _receive(self, timeout: float, doing: str, request_id: str = "hello") -> dict:
        if self.conn.poll(timeout):
            try:
                data = self.conn.recv_bytes(MAX_REPLY_BYTES)
            except (EOFError, ConnectionResetError, OSError):
                pass  # the process ended mid-reply: reported below
            else:
                reply = decode_reply(data)
                if reply is None or reply.get("id") != request_id:
                    self.kill()
                    raise WorkerLost(
                        f"The process running your code sent a reply the grader could not read while {doing} "
                        "(something in it wrote to the grader's channel): that counts as a failure."
                    )
                return reply
        else:
            self.kill()
            raise WorkerLost(
                f"Timed out: {doing} took longer than {timeout:g} s, so it was stopped. "
                "Look for a loop that never ends (a `while` whose condition never changes, a range that "
                "never reaches its end)."
            )
        self._note_group()  # still readable while the ended process waits to be reaped
        self.process.join(5)
        code = self.process.exitcode
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
        raise WorkerLost(f"The process running your code {what} while {doing}." + (f"\nIts last output:\n{tail}" if tail else ""))

    def kill(self) -> None:
        """End the worker and every process it started (it leads its own process group)."""
        if self.process is not None:
            self._note_group()
            if self.group:
                try:
                    os.killpg(self.group, signal.SIGKILL)
                except (ProcessLookupError, PermissionError, OSError):
                    pass
            if self.process.is_alive():
                self.process.kill()
            self.process.join(5)
        self.process = None
        self.group = 0

    def _note_group(self) -> None:
        """Remember the worker's process group once it leads its own (never the grader's group)."""
        if self.group or self.process is None or not self.process.pid:
            return
        try:
            if os.getpgid(self.process.pid) == self.process.pid:
                self.group = self.process.pid
        except (ProcessLookupError, OSError):
            pass

    def stop(self) -> None:
        if self.process is not None and self.process.is_alive():
            try:
                self.conn.send({"op": "stop"})
                self.process.join(5)
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

    def cleanup(self) -> None:
        self.stop()
        self.log.unlink(missing_ok=True)


def decode_reply(data: bytes) -> dict | None:
    """A worker's reply as a dict of plain data and tensors, or None when it is not one."""
    import torch

    try:
        reply = torch.load(io.BytesIO(data), weights_only=True)
    except Exception:  # noqa: BLE001  (anything unreadable is refused, whatever the reason)
        return None
    return reply if isinstance(reply, dict) else None
