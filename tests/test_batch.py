"""`python -m autograder batch`: a class of generated submissions graded on the CPU, with resume and scores."""

from __future__ import annotations

import csv
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from autograder.batch import BatchError, discover, run_batch, slurm_script, submission_root, unpack
from conftest import SEED, SUBMISSIONS

RMS = SUBMISSIONS / "rmsnorm"
QUICK = ["--max-cases=1", f"--seed={SEED}", "--timeout=60"]  # one case per part keeps 20 students fast

# student -> (source file, layout). Layouts are the ways students hand work in.
CLASS = {
    **{f"correct_{i:02d}": ("correct_minimal.py", layout)
       for i, layout in enumerate(["folder", "zip", "tgz", "flat", "nested_zip", "folder", "zip", "tgz", "flat", "folder"])},
    "wrong_zero": ("wrong_zero_output.py", "folder"),
    "wrong_passthrough": ("wrong_passthrough.py", "zip"),
    "wrong_shape": ("wrong_shape.py", "folder"),
    "wrong_pytorch": ("wrong_calls_pytorch.py", "tgz"),
    "crash_raise": ("correct_minimal.py+raise", "folder"),
    "crash_segfault": ("correct_minimal.py+segfault", "folder"),
    "crash_exit": ("correct_minimal.py+exit", "zip"),
    "broken_syntax": ("bad_syntax.py", "folder"),
    "broken_import": ("bad_missing_import.py", "flat"),
    "stub": (None, "folder"),
    # Named like the record file results/correct_00.meta.json once was (red team 9); refused from 2026-12-07 until
    # red team 11 showed one such upload stopping the whole class. Records now have a folder of their own.
    "correct_00.meta": ("correct_minimal.py", "zip"),
}


# Appended to an honest kernels.py: the public function then crashes on every call.
CRASHES = {
    "raise": "raise RuntimeError('crash')",
    "segfault": "import ctypes; ctypes.string_at(0)",
    "exit": "import os; os._exit(3)",
}


def _source(source: str | None) -> str:
    if source is None:
        return (SUBMISSIONS.parent.parent / "assignments" / "rmsnorm" / "kernels.py").read_text()
    name, _, crash = source.partition("+")
    code = (RMS / name).read_text()
    if crash:
        code += f"\n\ndef rmsnorm(x, weight, eps=1e-6):\n    {CRASHES[crash]}\n"
    return code


def _write(folder: Path, student: str, source: str | None, layout: str) -> None:
    code = _source(source)
    if layout == "folder":
        (folder / student / "rmsnorm").mkdir(parents=True)
        (folder / student / "rmsnorm" / "kernels.py").write_text(code)
    elif layout == "flat":
        (folder / f"{student}.py").write_text(code)
    elif layout in ("zip", "nested_zip"):
        inner = "my_work/rmsnorm/kernels.py" if layout == "nested_zip" else "rmsnorm/kernels.py"
        with zipfile.ZipFile(folder / f"{student}.zip", "w") as zf:
            zf.writestr(inner, code)
    else:
        with tarfile.open(folder / f"{student}.tar.gz", "w:gz") as tf:
            data = code.encode()
            info = tarfile.TarInfo("rmsnorm/kernels.py")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list]:
    root = tmp_path_factory.mktemp("class")
    folder, out = root / "submissions", root / "graded"
    folder.mkdir()
    for student, (source, layout) in CLASS.items():
        _write(folder, student, source, layout)
    outcomes = run_batch(folder, out, ["rmsnorm"], "cpu", jobs=2, grade_args=QUICK, say=lambda s: None)
    return folder, out, outcomes


def _scores(out: Path) -> dict[str, dict[str, str]]:
    with (out / "scores.csv").open() as fh:
        return {row["student"]: row for row in csv.DictReader(fh)}


@pytest.mark.slow
def test_every_student_of_twenty_is_graded_once(graded_class: tuple) -> None:
    folder, out, outcomes = graded_class
    assert len(CLASS) >= 20
    assert sorted(o.student for o in outcomes) == sorted(CLASS)
    assert all(o.status == "graded" for o in outcomes), [o.message for o in outcomes if o.status != "graded"]
    assert sorted(p.name[:-5] for p in (out / "records").glob("*.json")) == sorted(CLASS)
    assert sorted(p.name[:-5] for p in (out / "results").glob("*.json")) == sorted(CLASS)
    assert not (out / "work").exists() or not list((out / "work").iterdir())  # unpacked copies removed once graded


@pytest.mark.slow
def test_scores_separate_correct_wrong_and_crashing_submissions(graded_class: tuple) -> None:
    _, out, _ = graded_class
    scores = _scores(out)
    full = {float(scores[s]["total"]) for s in CLASS if s.startswith("correct")}
    assert len(full) == 1 and full.pop() > 0  # every layout of the same code gets the same points
    top = float(scores["correct_00"]["total"])
    for student in CLASS:
        if not student.startswith("correct"):
            assert float(scores[student]["total"]) < top, student
    assert float(scores["crash_segfault"]["rmsnorm.forward"]) == 0.0
    assert float(scores["stub"]["total"]) == 0.0
    assert "rmsnorm.backward (bonus)" in scores["correct_00"]


@pytest.mark.slow
def test_leaderboard_ranks_correct_submissions_first(graded_class: tuple) -> None:
    _, out, _ = graded_class
    rows = [line.split("|")[2].strip() for line in (out / "leaderboard.md").read_text().splitlines()[2:]]
    assert len(rows) == len(CLASS)
    assert all(name.startswith("correct") for name in rows[:10])


@pytest.mark.slow
def test_a_second_run_resumes_and_regrades_only_what_changed(graded_class: tuple) -> None:
    folder, out, _ = graded_class
    (folder / "wrong_zero" / "rmsnorm" / "kernels.py").write_text((RMS / "correct_minimal.py").read_text())
    outcomes = run_batch(folder, out, ["rmsnorm"], "cpu", jobs=2, grade_args=QUICK, say=lambda s: None)
    graded = [o.student for o in outcomes if o.status == "graded"]
    assert graded == ["wrong_zero"]
    assert sum(o.status == "skipped" for o in outcomes) == len(CLASS) - 1
    assert float(_scores(out)["wrong_zero"]["total"]) == float(_scores(out)["correct_00"]["total"])


def test_archives_that_escape_their_folder_are_refused(tmp_path: Path) -> None:
    evil = tmp_path / "in" / "mallory.zip"
    evil.parent.mkdir()
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../../outside.py", "print('hi')")
    with pytest.raises(BatchError, match="outside its folder"):
        unpack(discover(evil.parent)[0], tmp_path / "work")
    assert not (tmp_path / "outside.py").exists()


@pytest.mark.parametrize("link", ["the kernels.py", "the folder", "the entry"])
def test_a_submission_made_of_links_to_another_students_files_is_refused(tmp_path: Path, link: str) -> None:
    """Red team 9: a folder whose kernels.py was a link to a classmate's was graded, and copied, as that file."""
    (tmp_path / "in" / "alice" / "rmsnorm").mkdir(parents=True)
    (tmp_path / "in" / "alice" / "rmsnorm" / "kernels.py").write_text("x = 1\n")
    target = tmp_path / "in" / "alice"
    if link == "the kernels.py":
        (tmp_path / "in" / "mallory" / "rmsnorm").mkdir(parents=True)
        (tmp_path / "in" / "mallory" / "rmsnorm" / "kernels.py").symlink_to(target / "rmsnorm" / "kernels.py")
    elif link == "the folder":
        (tmp_path / "in" / "mallory").mkdir()
        (tmp_path / "in" / "mallory" / "rmsnorm").symlink_to(target / "rmsnorm")
    else:
        (tmp_path / "in" / "mallory").symlink_to(target)
    mallory = next(s for s in discover(tmp_path / "in") if s.student == "mallory")
    with pytest.raises(BatchError, match="symbolic link"):
        unpack(mallory, tmp_path / "work")
    alice = next(s for s in discover(tmp_path / "in") if s.student == "alice")
    assert (unpack(alice, tmp_path / "work2") / "rmsnorm" / "kernels.py").read_text() == "x = 1\n"


def test_a_nested_upload_is_found_under_its_parent_folder(tmp_path: Path) -> None:
    (tmp_path / "Downloads" / "hw" / "rmsnorm").mkdir(parents=True)
    (tmp_path / "Downloads" / "hw" / "rmsnorm" / "kernels.py").write_text("")
    assert submission_root(tmp_path, ["rmsnorm"]) == tmp_path / "Downloads" / "hw"


class _FakeGrading:
    """Stands for a grading process: writes a results.json of 1 point, so that a test of what comes before the grading
    (the entry's intake) runs in milliseconds."""

    def __init__(self, cmd: list[str], **kwargs: object) -> None:
        Path(cmd[cmd.index("--json") + 1]).write_text(json.dumps({"score": 1.0, "tests": []}))
        self.pid = 0

    def wait(self, timeout: float | None = None) -> int:
        return 0


def _intake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Every entry of tmp_path/in through the batch, the grading itself faked: student -> outcome."""
    import autograder.batch as batch

    monkeypatch.setattr(batch.subprocess, "Popen", _FakeGrading)
    outcomes = run_batch(tmp_path / "in", tmp_path / "out", ["rmsnorm"], "cpu", jobs=1, say=lambda s: None)
    return {o.student: o for o in outcomes}


def _honest(folder: Path) -> None:
    (folder / "rmsnorm").mkdir(parents=True)
    (folder / "rmsnorm" / "kernels.py").write_text("x = 1\n")


def test_two_entries_for_one_student_fail_that_student_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team 15: `alice.py` beside the folder `alice` stopped the whole class before anyone was graded."""
    _honest(tmp_path / "in" / "alice")
    (tmp_path / "in" / "alice.py").write_text("x = 1\n")
    _honest(tmp_path / "in" / "bob")
    outcomes = _intake(tmp_path, monkeypatch)
    assert outcomes["alice"].status == "failed" and "alice, alice.py" in outcomes["alice"].message
    assert outcomes["bob"].status == "graded"


@pytest.mark.parametrize("entry", ["link_to_memory", "fifo_entry", "fifo_inside", "device_inside", "sparse_file"])
def test_an_entry_that_is_not_plain_files_fails_that_student_before_anything_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    """Red team 15: the batch read a student's files (for the fingerprint, then the copy) before it judged them. A link
    to /proc/self/mem crashed it (an I/O error outside any student's grading), a named pipe hung it, a device node
    (/dev/zero) was copied until the disk filled, and a sparse file of 3 GB was read whole into memory. Each is now
    judged from its metadata first: that student fails, the class is graded and the scores are written."""
    import os
    import stat

    _honest(tmp_path / "in" / "alice")
    mallory = tmp_path / "in" / "mallory"
    if entry == "fifo_entry":
        os.mkfifo(tmp_path / "in" / "mallory.py")
    else:
        _honest(mallory)
    if entry == "link_to_memory":
        (mallory / "notes.txt").symlink_to("/proc/self/mem")
    elif entry == "fifo_inside":
        os.mkfifo(mallory / "rmsnorm" / "data")
    elif entry == "device_inside":
        try:
            os.mknod(mallory / "notes.txt", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
        except PermissionError:
            pytest.skip("making a device node needs root")
    elif entry == "sparse_file":
        with open(mallory / "rmsnorm" / "weights.bin", "wb") as fh:
            fh.truncate(3 << 30)  # 3 GB that take no disk, and no time to read if nothing reads them
    outcomes = _intake(tmp_path, monkeypatch)
    said = {"link_to_memory": "symbolic link", "fifo_entry": "named pipe", "fifo_inside": "named pipe",
            "device_inside": "a device", "sparse_file": "more than"}[entry]
    assert outcomes["mallory"].status == "failed" and said in outcomes["mallory"].message, outcomes["mallory"]
    assert outcomes["alice"].status == "graded"
    assert "alice" in (tmp_path / "out" / "scores.csv").read_text()


def test_a_tar_gives_its_files_the_graders_modes_and_owner(tmp_path: Path) -> None:
    """Red team 15: root extracting a tar applied its modes and owners, so a submission left a setuid-root,
    world-writable program in the batch's work folder while it was graded."""
    archive = tmp_path / "in" / "mallory.tar"
    archive.parent.mkdir()
    with tarfile.open(archive, "w") as tf:
        for name, mode in (("rmsnorm/kernels.py", 0o644), ("rmsnorm/tool", 0o6777)):
            info = tarfile.TarInfo(name)
            data = b"x = 1\n"
            info.size, info.mode, info.uid, info.gid = len(data), mode, 1234, 1234
            tf.addfile(info, io.BytesIO(data))
    folder = unpack(discover(archive.parent)[0], tmp_path / "work")
    tool = (folder / "rmsnorm" / "tool").stat()
    assert tool.st_mode & 0o7777 == 0o755 and tool.st_uid != 1234


def test_the_fingerprint_tells_files_apart_however_their_names_and_bytes_run_together(tmp_path: Path) -> None:
    """Red team 15: with each file's name and bytes hashed back to back, `kernels.p` holding "y" + X and `kernels.py`
    holding X had one fingerprint: a re-upload without a kernels.py kept the old score."""
    from autograder.batch import Submission, fingerprint, vet

    source = (RMS / "correct_minimal.py").read_text()
    for student, name, text in (("a", "kernels.py", source), ("b", "kernels.p", "y" + source)):
        (tmp_path / student / "rmsnorm").mkdir(parents=True)
        (tmp_path / student / "rmsnorm" / name).write_text(text)
    prints = {fingerprint(sub, vet(sub), ["rmsnorm"], "cpu") for sub in (Submission(s, tmp_path / s) for s in "ab")}
    assert len(prints) == 2


def test_a_name_a_spreadsheet_would_run_is_written_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team 15: a student named `=HYPERLINK(...)` put a formula in scores.csv."""
    _honest(tmp_path / "in" / '=HYPERLINK("evil.example","x")')
    _intake(tmp_path, monkeypatch)
    rows = list(csv.reader((tmp_path / "out" / "scores.csv").open()))
    assert rows[1][0] == "'" + '=HYPERLINK("evil.example","x")'


def test_a_student_named_like_a_record_file_is_a_student_like_any_other(tmp_path: Path) -> None:
    """Red team 11: refusing a class entry named "ann.meta" (whose results once landed on ann's record file) stopped
    the whole class's batch before anyone was graded. Results, records and logs now live in folders of their own."""
    from autograder.batch import _paths

    for entry in ("ann", "ann.meta", "ann.meta.json"):
        (tmp_path / "in" / entry).mkdir(parents=True)
    (tmp_path / "in" / "bob.meta.zip").write_bytes(b"")
    students = [s.student for s in discover(tmp_path / "in")]
    assert students == ["ann", "ann.meta", "ann.meta.json", "bob.meta"]
    files = [path for student in students for path in _paths(tmp_path / "out", student)]
    assert len(set(files)) == len(files)


def _bomb(path: Path, size: int) -> None:
    """An archive of kernels.py and `size` bytes of zeros, a thousand times smaller than what it unpacks to."""
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("rmsnorm/kernels.py", "x = 1\n")
            zf.writestr("rmsnorm/zeros.bin", bytes(size))
    else:
        with tarfile.open(path, "w:gz") as tf:
            for name, data in (("rmsnorm/kernels.py", b"x = 1\n"), ("rmsnorm/zeros.bin", bytes(size))):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("entry", ["aaron.zip", "aaron.tgz", "aaron"])
def test_a_submission_that_unpacks_past_the_limit_is_refused_before_it_is_written(
        tmp_path: Path, entry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team 11: a 2 MB zip unpacked to 2 GB, and on a full disk the next student "could not unpack". The sizes are
    read from the archive's headers (a zip's member stops at its stated size) before anything is written."""
    import autograder.batch as batch

    monkeypatch.setattr(batch, "MAX_UNPACKED_BYTES", 4 << 20)
    (tmp_path / "in").mkdir()
    if entry == "aaron":  # a folder: counted on disk before it is copied
        (tmp_path / "in" / "aaron" / "rmsnorm").mkdir(parents=True)
        for i in range(12):
            (tmp_path / "in" / "aaron" / "rmsnorm" / f"part{i}.bin").write_bytes(bytes(1 << 20))
    else:
        _bomb(tmp_path / "in" / entry, 64 << 20)
        assert (tmp_path / "in" / entry).stat().st_size < 1 << 20
    with pytest.raises(BatchError, match="more than"):
        unpack(discover(tmp_path / "in")[0], tmp_path / "work")
    assert sum(f.stat().st_size for f in (tmp_path / "work").rglob("*") if f.is_file()) < 1 << 20
    small = tmp_path / "in2"
    small.mkdir()
    _bomb(small / ("bob" + (entry[5:] or ".zip")), 1 << 20)  # within the limit: unpacked whole
    folder = unpack(discover(small)[0], tmp_path / "work2")
    assert (folder / "rmsnorm" / "zeros.bin").stat().st_size == 1 << 20
    monkeypatch.setattr(batch, "MAX_UNPACKED_FILES", 1)
    with pytest.raises(BatchError, match="more than 1 files"):
        unpack(discover(small)[0], tmp_path / "work3")


def test_the_slurm_script_runs_one_array_task_per_submission(tmp_path: Path) -> None:
    script = slurm_script(tmp_path / "subs", tmp_path / "out", ["rmsnorm"], 23, ["--reps=100"])
    assert "#SBATCH --array=0-22%8" in script
    assert "#SBATCH --gres=gpu:1" in script
    assert '--only-index "$SLURM_ARRAY_TASK_ID"' in script
    assert "--grade-arg=--reps=100" in script
    assert "--merge" in script


def test_a_grading_that_cannot_start_fails_that_student_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team 12: once the grader's interpreter had lost its execute bits, starting the next grading raised, and the
    batch ended with no scores for anyone. A grading that fails to start is that student's failure."""
    import autograder.batch as batch

    for student in ("ann", "bob"):
        (tmp_path / "in" / student / "rmsnorm").mkdir(parents=True)
        (tmp_path / "in" / student / "rmsnorm" / "kernels.py").write_text("x = 1\n")
    real = batch.grade_one

    def grade_one(sub: batch.Submission, *args: object) -> batch.Outcome:
        if sub.student == "ann":
            raise PermissionError(13, "Permission denied", "/venv/bin/python")
        return batch.Outcome(sub.student, "graded", 1.0, score=7.0)

    monkeypatch.setattr(batch, "grade_one", grade_one)
    outcomes = {o.student: o for o in run_batch(tmp_path / "in", tmp_path / "out", ["rmsnorm"], "cpu", jobs=1,
                                                say=lambda s: None)}
    assert real is not grade_one
    assert outcomes["ann"].status == "failed" and "PermissionError" in outcomes["ann"].message
    assert outcomes["bob"].status == "graded"
    assert (tmp_path / "out" / "scores.csv").exists()


def test_a_students_name_cannot_rewrite_the_batchs_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A class entry is named by its student: `\\x1b[1A\\x1b[2K` in a name would move up and erase the batch's lines
    on the instructor's terminal. Names are shown with control characters written out, in the log and the board."""
    import autograder.batch as batch

    name = "eve\x1b[1A\x1b[2K\u202e | 99.0 | - |\n| 1 | (forged)"  # red team 13: a row of the board in a name
    (tmp_path / "in" / name / "rmsnorm").mkdir(parents=True)
    (tmp_path / "in" / name / "rmsnorm" / "kernels.py").write_text("x = 1\n")
    def grade_one(sub: batch.Submission, out: Path, *args: object) -> batch.Outcome:
        (out / "results").mkdir(parents=True, exist_ok=True)
        (out / "results" / f"{sub.student}.json").write_text(json.dumps({"score": 0.0, "tests": []}))
        return batch.Outcome(sub.student, "graded", 0.0, score=0.0)

    monkeypatch.setattr(batch, "grade_one", grade_one)
    said: list[str] = []
    run_batch(tmp_path / "in", tmp_path / "out", ["rmsnorm"], "cpu", jobs=1, say=said.append)
    shown = "\n".join(said) + (tmp_path / "out" / "leaderboard.md").read_text()
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "eve\\x1b[1A\\x1b[2K\\u202e" in shown
    board = (tmp_path / "out" / "leaderboard.md").read_text().splitlines()
    assert len(board) == 3 and board[2].count(" | ") == 3 and "\\| 99.0 \\|" in board[2], board
    assert len([s for s in said if s.startswith("[")]) == 1 and "\n" not in said[1], said


@pytest.mark.parametrize("kind", ["zip", "tgz"])
def test_an_archive_is_unpacked_as_a_folder_is_copied_without_bytecode_or_hidden_files(tmp_path: Path,
                                                                                        kind: str) -> None:
    """Red team 16: a folder's __pycache__ was skipped but an archive's was extracted, and its .pyc ran in place of
    kernels.py. An archive's members under __pycache__ or a hidden name are skipped like a folder's."""
    archive = tmp_path / "in" / f"mallory.{kind}"
    archive.parent.mkdir()
    members = {"rmsnorm/kernels.py": b"x = 1\n", "rmsnorm/__pycache__/kernels.cpython-311.pyc": b"\0" * 16,
               "rmsnorm/.hidden/evil.py": b"y = 2\n"}
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    else:
        with tarfile.open(archive, "w:gz") as tf:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    folder = unpack(discover(archive.parent)[0], tmp_path / "work")
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == ["rmsnorm/kernels.py"]


@pytest.mark.parametrize("hidden_in", ["unknown_type", "long_name"])
@pytest.mark.parametrize("compression", ["bz2", "gz", "xz"])
def test_a_tar_is_stopped_at_the_limit_of_what_it_decompresses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               hidden_in: str, compression: str) -> None:
    """Red team 17: a member of a type tarfile does not know, or a GNU long name, is no file's bytes, yet tarfile
    decompresses all of it to reach the next header (40 GiB declared in 38 KB took 108 s; a 3 GiB long name, 4 GB of
    memory). What a tar decompresses to is capped, and every member's size counts."""
    import bz2
    import gzip
    import lzma

    import autograder.batch as batch

    monkeypatch.setattr(batch, "MAX_UNPACKED_BYTES", 4 << 20)
    monkeypatch.setattr(batch, "_TAR_SLACK", 1 << 20)
    kernels = b"x = 1\n"
    first = tarfile.TarInfo("rmsnorm/kernels.py")
    first.size = len(kernels)
    hidden = tarfile.TarInfo("junk" if hidden_in == "unknown_type" else "././@LongLink")
    hidden.type = b"Z" if hidden_in == "unknown_type" else tarfile.GNUTYPE_LONGNAME
    hidden.size = 64 << 20
    raw = (first.tobuf(format=tarfile.GNU_FORMAT) + kernels + b"\0" * (512 - len(kernels))
           + hidden.tobuf(format=tarfile.GNU_FORMAT) + bytes(hidden.size) + b"\0" * 1024)
    compress = {"bz2": bz2.compress, "gz": gzip.compress, "xz": lzma.compress}[compression]
    archive = tmp_path / "in" / "mallory.tar"  # any compression, whatever the name says
    archive.parent.mkdir()
    archive.write_bytes(compress(raw))
    assert archive.stat().st_size < 1 << 20
    with pytest.raises(BatchError, match="more than"):
        unpack(discover(archive.parent)[0], tmp_path / "work")
    honest = tmp_path / "in2" / "bob.tgz"
    honest.parent.mkdir()
    with tarfile.open(honest, "w:gz") as tf:
        tf.addfile(first, io.BytesIO(kernels))
    assert (unpack(discover(honest.parent)[0], tmp_path / "work2") / "rmsnorm" / "kernels.py").read_bytes() == kernels
