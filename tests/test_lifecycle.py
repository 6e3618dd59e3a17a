"""No child of the grader outlives it: a grader killed with SIGKILL while a submission loops forever
leaves no process behind, neither its worker (nor anything in the worker's process group), nor the
replayer, nor the zygote that forked them; with the zygote and without it; for one assignment and for
several graded at once, which Ctrl-C stops as well."""

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


def _ctrl_c_as_in_a_terminal() -> None:
    """SIGINT raises KeyboardInterrupt in the grader, as at a terminal (a shell starts background jobs ignoring it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


LOOPING = {"rmsnorm": "def rmsnorm(x, weight, eps=1e-6):", "rope": "def rope(x, cos, sin):"}


def _looping_workers(grader: subprocess.Popen, count: int) -> list[int]:
    """The descendants of the grader that lead their own process group and burn CPU: workers in the loop."""
    found: list[int] = []
    deadline = time.monotonic() + 240
    while len(found) < count and time.monotonic() < deadline:
        for pid in _descendants(grader.pid) - set(found):
            fields = _stat(pid)
            if fields and int(fields[2]) == pid:
                before = _cpu_ticks(pid)
                time.sleep(2.0)
                if _cpu_ticks(pid) - before > 20:  # the idle replayer uses none; a busy machine gives the loop little
                    found.append(pid)
        time.sleep(0.5)
    return found


@pytest.mark.parametrize(("zygote", "slugs", "sig"), [(True, ["rmsnorm"], signal.SIGKILL), (False, ["rmsnorm"], signal.SIGKILL),
                                                      (True, ["rmsnorm", "rope"], signal.SIGKILL),
                                                      (True, ["rmsnorm", "rope"], signal.SIGINT)],
                         ids=["zygote", "spawn", "zygote-concurrent", "zygote-concurrent-ctrl-c"])  # fmt: skip
def test_stopping_the_grader_leaves_no_process_behind(zygote: bool, slugs: list[str], sig: int, tmp_path: Path) -> None:
    """SIGKILL (nothing of the grader runs after it), or Ctrl-C (the grader stops every assignment graded at once)."""
    for slug in slugs:
        solution = (REPO_ROOT / "solutions" / slug / "kernels.py").read_text()
        (tmp_path / slug).mkdir()
        (tmp_path / slug / "kernels.py").write_text(solution + f"\n\n{LOOPING[slug]}\n    while True:\n        pass\n")
    env = {**os.environ, "AUTOGRADER_NO_ZYGOTE": "0" if zygote else "1"}
    grader = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade", *slugs, "--submission", str(tmp_path), "--device", "cpu",
         "--skip-doctor", "--timeout", "600", "--jobs", str(len(slugs))],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )  # fmt: skip
    try:
        # The grader reports "case 1/..." once a worker has imported kernels.py and is sent the first case.
        assert grader.stderr is not None
        for line in grader.stderr:
            if "case 1/" in line:
                break
        # Then wait until every worker leads its own process group and burns CPU, in its loop.
        assert len(_looping_workers(grader, len(slugs))) == len(slugs), "the workers never all started looping"
        family = _descendants(grader.pid)
        groups = {int(f[2]) for f in map(_stat, family) if f}
        grader.send_signal(sig)
        grader.wait(20)  # Ctrl-C: the grader ends its children and returns within seconds, not a time limit
        left: set[int] = set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = {p for p in family if _alive(p)}
            left |= {p for p in _all_pids() if (f := _stat(p)) and f[0] != "Z" and int(f[2]) in groups - {os.getpgrp()}}
            if not left:
                break
            time.sleep(0.2)
        assert not left, f"still running after the grader was stopped: {sorted(left)}"
    finally:
        if grader.poll() is None:
            grader.kill()


def test_the_replayer_is_replaced_when_it_ended_between_two_requests() -> None:
    """After a GPU fault the replayer reports the case and ends: the grader's next request must reach a fresh replayer,
    even when the old one ended just after the grader looked (on the H100 the next case read "Broken pipe")."""
    from autograder.runner import Replayer

    path = REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py"
    replayer = Replayer("rmsnorm", path, path.read_text(), "cpu")
    try:
        first = replayer.collect(replayer.submit({"op": "ping"}), 120, "answering")
        assert "unknown request" in first["message"]
        old = replayer.child
        assert old is not None
        old.send_kill()
        assert old.returncode(10.0) is not None
        old.alive = lambda: True  # type: ignore[method-assign]  (as if it had ended just after the check)
        second = replayer.collect(replayer.submit({"op": "ping"}), 120, "answering")
        assert "unknown request" in second["message"]
        assert replayer.child is not None and replayer.child.pid != old.pid
    finally:
        replayer.cleanup()


def test_a_reply_that_asks_for_a_restart_ends_the_replayer(monkeypatch: pytest.MonkeyPatch) -> None:
    from autograder.runner import Replayer

    path = REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py"
    replayer = Replayer("rmsnorm", path, path.read_text(), "cpu")
    try:
        request_id = replayer.submit({"op": "ping"})
        child = replayer.child
        assert child is not None
        real = replayer.receive
        monkeypatch.setattr(replayer, "receive", lambda *a: {**real(*a), "restart": True})
        assert replayer.collect(request_id, 120, "answering")["restart"] is True
        assert replayer.child is None and child.returncode(10.0) is not None
    finally:
        replayer.cleanup()


def test_a_gpu_process_with_a_broken_context_is_not_usable() -> None:
    from types import SimpleNamespace

    from autograder.lifecycle import device_usable

    def broken() -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    def fine() -> None:
        return None

    assert device_usable(SimpleNamespace(cuda=SimpleNamespace(synchronize=broken)), "cuda") is False
    assert device_usable(SimpleNamespace(cuda=SimpleNamespace(synchronize=fine)), "cuda") is True
    assert device_usable(SimpleNamespace(cuda=SimpleNamespace(synchronize=broken)), "cpu") is True


def test_a_second_request_waits_for_the_first_answer_instead_of_deadlocking() -> None:
    """Two large requests in a row, the first's answer large too: the replayer blocks writing its answer while the
    grader blocks writing the second request. The second submit must refuse at once, not hang (on an H100 a W4A16
    case's second replay, 235 MB of prepared weights, hung behind the first's 0.9 MB of outputs until the time
    limit)."""
    import threading

    from autograder.runner import Replayer

    path = REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py"
    replayer = Replayer("rmsnorm", path, path.read_text(), "cpu")
    # Echoed in the answer ("unknown request ..."): far past a socket's buffer both ways, and within a reply's pickle
    # (MAX_PICKLE_BYTES), which a string in the answer is part of.
    large = "x" * (3 << 20)
    outcome: list[object] = []
    try:
        first = replayer.submit({"op": large})
        time.sleep(2.0)  # the replayer has read the request and is writing its answer

        def second() -> None:
            try:
                outcome.append(replayer.submit({"op": large}))
            except Exception as exc:  # noqa: BLE001
                outcome.append(exc)

        thread = threading.Thread(target=second, daemon=True)
        thread.start()
        thread.join(30.0)
        assert not thread.is_alive(), "the second submit hung: both processes were writing, neither reading"
        assert isinstance(outcome[0], RuntimeError) and "collect it" in str(outcome[0])
        assert "unknown request" in replayer.collect(first, 120, "answering")["message"]
    finally:
        replayer.abort()  # a child stuck writing would also hold a polite stop
        replayer.cleanup()


def test_a_message_is_read_whole_by_its_deadline_or_not_at_all() -> None:
    """A child that writes a length and then nothing, or a byte at a time, gets no more than the time limit."""
    import socket
    import struct
    import threading

    from autograder.runner import read_message

    a, b = socket.socketpair()
    try:
        b.sendall(struct.pack("!i", 5) + b"hello")
        assert bytes(read_message(a, time.monotonic() + 5, 100) or b"") == b"hello"
        b.sendall(struct.pack("!i", 100 << 20))  # a length, and nothing after it
        t0 = time.monotonic()
        assert read_message(a, time.monotonic() + 1.0, 1 << 30) is None
        assert time.monotonic() - t0 < 3.0
        a.close()
        a, b = socket.socketpair()

        def trickle() -> None:
            try:
                b.sendall(struct.pack("!i", 1000))
                for _ in range(1000):
                    b.sendall(b"x")
                    time.sleep(0.01)
            except OSError:
                pass

        threading.Thread(target=trickle, daemon=True).start()
        t0 = time.monotonic()
        assert read_message(a, time.monotonic() + 1.0, 1 << 30) is None  # a byte every 10 ms: 10 s for it all
        assert time.monotonic() - t0 < 3.0
        a.close()
        a, b = socket.socketpair()
        b.sendall(struct.pack("!i", 1 << 20))
        with pytest.raises(ValueError):
            read_message(a, time.monotonic() + 1.0, 1000)
        b.close()
        a2, b2 = socket.socketpair()
        b2.sendall(struct.pack("!i", 10) + b"abc")
        b2.close()
        with pytest.raises(EOFError):
            read_message(a2, time.monotonic() + 1.0, 100)
        a2.close()
    finally:
        a.close()
        b.close()


def test_a_reply_that_would_take_more_memory_than_its_bytes_is_refused() -> None:
    """torch.load inflates a deflated zip member, and sizes a legacy-format storage from its pickle: a reply of a few
    kilobytes could take gigabytes of the grader's memory (red team 10). Only torch.save's layout is read."""
    import io
    import zipfile

    import torch

    from autograder.runner import decode_reply, stored_as_saved

    honest = io.BytesIO()
    torch.save({"id": "a", "outputs": {"y": torch.arange(1000.0)}}, honest)
    assert stored_as_saved(honest.getvalue())
    reply = decode_reply(honest.getvalue())
    assert reply is not None and torch.equal(reply["outputs"]["y"], torch.arange(1000.0))

    deflated = io.BytesIO()  # the same members, deflated: 8 MB of zeros in a few kilobytes
    big = io.BytesIO()
    torch.save({"id": "a", "outputs": {"y": torch.zeros(2 << 20)}}, big)
    src_zip = zipfile.ZipFile(io.BytesIO(big.getvalue()))
    with src_zip as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for member in src.infolist():
            dst.writestr(member.filename, src.read(member))
    assert len(deflated.getvalue()) < 100_000
    assert torch.load(io.BytesIO(deflated.getvalue()), weights_only=True)["outputs"]["y"].numel() == 2 << 20
    assert decode_reply(deflated.getvalue()) is None

    legacy = io.BytesIO()
    torch.save({"id": "a"}, legacy, _use_new_zipfile_serialization=False)
    assert torch.load(io.BytesIO(legacy.getvalue()), weights_only=True) == {"id": "a"}
    assert decode_reply(legacy.getvalue()) is None
    assert decode_reply(b"junk" + honest.getvalue()) is None  # a zip to Python's reader, the legacy format to torch's
    assert decode_reply(honest.getvalue()[:-30]) is None


def test_a_length_announced_costs_nothing_until_its_bytes_come() -> None:
    """Red team 15: a 12-byte header announcing 4 GiB made the grader allocate 4 GiB before the first byte came. The
    buffer grows with what arrives."""
    import socket
    import struct
    import tracemalloc

    from autograder.runner import MAX_REPLY_BYTES, _physical_memory, read_message

    # Red team 17 streamed 5 GiB into the grader, which held it and a copy (16 GiB allowed: 32 GB). A reply may take an
    # eighth of the machine's memory at most.
    assert MAX_REPLY_BYTES <= _physical_memory() // 8

    a, b = socket.socketpair()
    try:
        b.sendall(struct.pack("!i", -1) + struct.pack("!Q", 4 << 30) + b"x" * 1000)
        tracemalloc.start()
        assert read_message(a, time.monotonic() + 0.5, 16 << 30) is None
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 128 << 20, peak
        payload = bytes(range(256)) * ((96 << 20) // 256)  # past the first 64 MB: the buffer grows, the bytes stay
        import threading

        c, d = socket.socketpair()
        threading.Thread(target=lambda: d.sendall(struct.pack("!i", len(payload)) + payload), daemon=True).start()
        assert bytes(read_message(c, time.monotonic() + 30, 1 << 30) or b"") == payload
        c.close()
        d.close()
    finally:
        a.close()
        b.close()


def test_a_reply_whose_pickle_is_long_is_refused_before_it_is_decoded() -> None:
    """Red team 15: torch.load's weights-only unpickler walks a pickle an opcode at a time, in Python; 60 MB of
    opcodes that set one dictionary's item over and over passed every check of a reply and held the grader 82 s. A
    reply's pickle (its structure; tensors' bytes are apart) is refused past MAX_PICKLE_BYTES, before decoding."""
    import io
    import zipfile

    import torch

    from autograder.runner import MAX_PICKLE_BYTES, decode_reply, stored_as_saved

    def with_pickle_ops(repeats: int) -> bytes:
        saved = io.BytesIO()
        torch.save({"id": "a", "outputs": {"y": torch.ones(4)}}, saved)
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(saved.getvalue())) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for member in src.infolist():
                data = src.read(member)
                if member.filename.endswith("data.pkl"):  # PROTO 2, EMPTY_DICT, then `d[1] = 1` again and again
                    assert data[2:3] == b"}"
                    data = data[:3] + b"K\x01K\x01s" * repeats + data[3:]
                dst.writestr(zipfile.ZipInfo(member.filename), data)
        return out.getvalue()

    small = with_pickle_ops(1000)
    assert stored_as_saved(small) and decode_reply(small) is not None  # the same structure, short: read
    long = with_pickle_ops(MAX_PICKLE_BYTES // 5 + 1)
    t0 = time.monotonic()
    assert not stored_as_saved(long) and decode_reply(long) is None
    assert time.monotonic() - t0 < 1.0


def test_outputs_are_a_replys_tensors_and_nothing_else() -> None:
    """Red team 15: outputs sent as torch.save bytes were read with torch.load and none of a reply's checks (a 2 MB
    deflated blob became a 2 GB tensor in the grader). Anything but a dict of tensors is no output."""
    import io

    import torch

    from autograder.grade import _load_outputs

    blob = io.BytesIO()
    torch.save({"y": torch.ones(3)}, blob)
    assert _load_outputs(blob.getvalue()) == {}
    assert _load_outputs(bytearray(blob.getvalue())) == {}
    assert _load_outputs({"y": torch.ones(3), "n": 3, 4: torch.ones(1)}).keys() == {"y"}


def test_a_tapes_checks_take_time_in_proportion_to_its_length() -> None:
    """Red team 15: the check of refused ops looked each name up in a list, so a tape of 80,000 different refused names
    took 33 s in the grader, after its case's limit. A tape of 100,000 takes well under a second."""
    from autograder.tape import problems

    entries = [{"kind": "op", "op": f"aten.refused_{i}.default"} for i in range(100_000)]
    t0 = time.monotonic()
    said = problems({"entries": entries}, "/kernels.py")
    assert time.monotonic() - t0 < 10.0
    assert "computed with PyTorch" in said and said.count("refused_") == 6


@pytest.mark.parametrize("forged", ["digit_strings", "many_big_ints", "huge_int", "bool_dims", "descriptor"])
def test_a_tape_whose_tensors_no_pytorch_call_makes_is_refused_at_once(forged: str) -> None:
    """Red team 16: an output's shape of 50,000 sizes, each a 4,300-digit string (pickled once, referred to after), made
    the grader's check of the largest output multiply big integers for hours, past every limit. A tensor reference's
    shape, strides and offset are PyTorch's (at most 64 sizes in int64), checked first; and no reply may hold an
    integer past 64 bits."""
    from autograder.runner import expanded_size
    from autograder.tape import problems

    big = "9" * 4300
    shape = {"digit_strings": [big] * 50_000, "many_big_ints": [2**62] * 50_000, "huge_int": [2**1800],
             "bool_dims": [True, 4], "descriptor": [4]}[forged]
    out = {"T": [0, 0, shape, [1] * len(shape), "float32", "cpu"]}
    launch = {"kind": "launch", "file": "/kernels.py", "kernel": "k", "grid": [1], "args": []}
    if forged == "descriptor":
        launch["args"] = [{"desc": {"shape": [2**70, 2**70]}}]
    tape = {"entries": [launch], "inputs": {}, "outputs": {"y": out}}
    t0 = time.monotonic()
    assert "malformed" in problems(tape, "/kernels.py", required_kernel="k")
    assert time.monotonic() - t0 < 2.0
    if forged == "huge_int":
        assert expanded_size(tape, 1000) is None
    honest = {"entries": [launch | {"args": []}], "inputs": {},
              "outputs": {"y": {"T": [0, 0, [3, 4], [4, 1], "float32", "cpu"]}}}
    assert "malformed" not in problems(honest, "/kernels.py")


def test_a_reply_that_expands_past_the_limit_or_holds_itself_is_refused() -> None:
    """A 2 KB pickle of lists each holding the next twice is 2**64 leaves to every walk of it (red team 10's tape)."""
    import io

    import torch

    from autograder.runner import MAX_REPLY_NODES, decode_reply, expanded_size

    shared = [1, 2]
    assert expanded_size({"x": shared, "y": shared}, 100) == 9  # sharing is fine, counted where it appears
    bomb: list = [0]
    for _ in range(64):
        bomb = [bomb, bomb]
    buf = io.BytesIO()
    torch.save({"id": "a", "tape": {"inputs": {"bomb": bomb}}}, buf)
    assert len(buf.getvalue()) < 20_000
    t0 = time.monotonic()
    assert decode_reply(buf.getvalue()) is None
    assert time.monotonic() - t0 < 5.0
    loop: list = []
    loop.append(loop)
    assert expanded_size({"loop": loop}, MAX_REPLY_NODES) is None
    honest = io.BytesIO()
    torch.save({"id": "b", "tape": {"entries": [{"op": "aten::add", "args": [1, 2]}] * 1000}}, honest)
    reply = decode_reply(honest.getvalue())
    assert reply is not None and reply["id"] == "b"
