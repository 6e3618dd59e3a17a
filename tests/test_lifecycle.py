"""No child of the grader outlives it: a grader killed with SIGKILL while a submission loops forever
leaves no process behind, neither its worker (nor anything in the worker's process group), nor the
replayer, nor the zygote that forked them; with the zygote and without it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state, ppid, pgrp, ...), or None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid in _all_pids():
        fields = _stat(pid)
        if fields:
            children.setdefault(int(fields[1]), []).append(pid)
    found, stack = set(), [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _cpu_ticks(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[11]) + int(fields[12]) if fields else 0  # utime + stime


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


@pytest.mark.parametrize("zygote", [True, False], ids=["zygote", "spawn"])
def test_killing_the_grader_leaves_no_process_behind(zygote: bool, tmp_path: Path) -> None:
    solution = (REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py").read_text()
    kernels = tmp_path / "kernels.py"
    kernels.write_text(solution + "\n\ndef rmsnorm(x, weight, eps=1e-6):\n    while True:\n        pass\n")
    env = {**os.environ, "AUTOGRADER_NO_ZYGOTE": "0" if zygote else "1"}
    grader = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade", "rmsnorm", "--submission", str(kernels), "--device", "cpu",
         "--skip-doctor", "--timeout", "600"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # The grader reports "case 1/..." once the worker has imported kernels.py and is sent the first case.
        assert grader.stderr is not None
        for line in grader.stderr:
            if "case 1/" in line:
                break
        # Then wait until some descendant leads its own process group and burns CPU: the worker, in the loop.
        worker, deadline = 0, time.monotonic() + 240
        while not worker and time.monotonic() < deadline:
            for pid in _descendants(grader.pid):
                fields = _stat(pid)
                if fields and int(fields[2]) == pid:
                    before = _cpu_ticks(pid)
                    time.sleep(2.0)
                    if _cpu_ticks(pid) - before > 20:  # the idle replayer uses none; a busy machine gives the loop little
                        worker = pid
                        break
            time.sleep(0.5)
        assert worker, "the worker never started looping"
        family = _descendants(grader.pid)
        groups = {int(f[2]) for f in map(_stat, family) if f}
        grader.send_signal(signal.SIGKILL)
        grader.wait(10)
        left: set[int] = set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = {p for p in family if _alive(p)}
            left |= {p for p in _all_pids() if (f := _stat(p)) and f[0] != "Z" and int(f[2]) in groups - {os.getpgrp()}}
            if not left:
                break
            time.sleep(0.2)
        assert not left, f"still running after the grader was killed: {sorted(left)}"
    finally:
        if grader.poll() is None:
            grader.kill()
