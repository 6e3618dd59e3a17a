"""Run a submission in a worker process with a time limit per request, and survive whatever it does."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

from autograder import worker


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
        self.import_error = "" if hello.get("ok") else hello.get("error", "kernels.py did not import.")

    def request(self, message: dict, timeout: float, doing: str) -> dict:
        if self.process is None or not self.process.is_alive():
            self.start()
        self.conn.send(message)
        return self._receive(timeout, doing)

    def _receive(self, timeout: float, doing: str) -> dict:
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except (EOFError, ConnectionResetError, OSError):
                pass  # the process ended mid-reply: reported below
        else:
            self.kill()
            raise WorkerLost(
                f"Timed out: {doing} took longer than {timeout:g} s, so it was stopped. "
                "Look for a loop that never ends (a `while` whose condition never changes, a range that "
                "never reaches its end)."
            )
        self.process.join(5)
        code = self.process.exitcode
        self.kill()
        tail = self.log_tail()
        if code is not None and code < 0:
            what = f"crashed with {_signal_name(code)}"
            if -code == signal.SIGSEGV:
                what += " (a segmentation fault: memory read or written out of bounds, often an unmasked load)"
        else:
            what = f"exited with code {code} (os._exit, or a crash in native code)"
        raise WorkerLost(f"The process running your code {what} while {doing}." + (f"\nIts last output:\n{tail}" if tail else ""))

    def kill(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.process = None

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
