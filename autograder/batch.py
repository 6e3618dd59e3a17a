"""`python -m autograder batch DIR`: grade a class, one submission per student, one grading slot per GPU.

Each entry of DIR is one student's submission: a folder laid out like assignments/ (SLUG/kernels.py), or an
archive (.zip, .tar, .tar.gz, .tgz) of one, or a single kernels.py when one assignment is graded. Every
submission is unpacked into its own folder and graded by its own `python -m autograder grade` process (which in
turn runs the student's code in a worker process), pinned to one GPU with CUDA_VISIBLE_DEVICES, so nothing one
student's code does reaches another's grading.

A finished submission leaves OUT/results/<student>.json (Gradescope's schema) and OUT/records/<student>.json holding
a fingerprint of the submission's files and of the grader (in a folder of their own: no student's name can make one
file stand for the other). A second run skips every submission whose
fingerprint is unchanged, so an interrupted batch resumes where it stopped and a re-upload is regraded.
At the end OUT/scores.csv holds the points per part and OUT/leaderboard.md ranks the class.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from autograder.lifecycle import end_tree
from autograder.printable import printable

REPO_ROOT = Path(__file__).resolve().parent.parent
ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz")
# What one submission may unpack to. A course submission is a few kernels.py and configs.json files; a 2 MB zip of
# zeros unpacked to 2 GB and, on a full disk, cost the next student their grading (red team 11).
MAX_UNPACKED_BYTES = 256 << 20
MAX_UNPACKED_FILES = 10_000


@dataclass(frozen=True)
class Submission:
    student: str  # the entry's name without its archive suffix
    source: Path
    problem: str = ""  # why it cannot be graded whatever it holds (two entries under one name), or ""


class BatchError(Exception):
    """A problem with the batch's arguments or folder, said as a sentence."""


def _student_name(path: Path) -> str:
    """The entry's name, without its archive's or kernels file's suffix unless it is a folder (whatever else it is:
    a pipe named `mallory.py` is mallory's entry, refused as such, not a student named `mallory.py`)."""
    name = path.name
    if path.is_dir():
        return name
    for suffix in sorted(ARCHIVES, key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def discover(folder: Path) -> list[Submission]:
    """The submissions in `folder`, sorted by student (a Slurm array task index refers to this order)."""
    if not folder.is_dir():
        raise BatchError(f"There is no folder {folder}: pass the folder that holds one entry per student.")
    by_name: dict[str, list[Path]] = {}
    for entry in folder.iterdir():
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_dir() or entry.name.endswith(ARCHIVES) or entry.suffix == ".py":
            by_name.setdefault(_student_name(entry), []).append(entry)
    subs = []
    for name, entries in by_name.items():
        problem = ""
        if len(entries) > 1:  # that student's alone: a name chosen to clash once stopped the whole class (red team 15)
            shown = ", ".join(sorted(e.name for e in entries))
            problem = f"two entries give the same student name ({shown}): keep one and grade again"
        subs.append(Submission(name, sorted(entries)[0], problem))
    return sorted(subs, key=lambda s: s.student)


def _safe_members(names: list[str], dest: Path) -> None:
    for name in names:
        target = (dest / name).resolve()
        if dest.resolve() not in target.parents and target != dest.resolve():
            raise BatchError(f"the archive holds {name!r}, which points outside its folder")


def _within_limits(sizes: Iterable[int], what: str) -> None:
    """Refuse a submission of more than MAX_UNPACKED_FILES files or MAX_UNPACKED_BYTES bytes, counting as it goes (an
    archive's sizes are read from its headers, before anything is written)."""
    total = 0
    for count, size in enumerate(sizes, start=1):
        total += size
        if count > MAX_UNPACKED_FILES or total > MAX_UNPACKED_BYTES:
            raise BatchError(f"{what} holds more than {MAX_UNPACKED_FILES:,} files or {MAX_UNPACKED_BYTES >> 20} MB: "
                             "submit the kernels.py files and what they import, not data")


def _skipped(name: str) -> bool:
    """Entries of a submission's folder that are neither graded nor copied: caches and hidden files."""
    return name == "__pycache__" or name.startswith(".")


def _skipped_path(name: str) -> bool:
    """An archive member under a skipped name, as a folder's would be (a bytecode cache, a hidden file)."""
    return any(_skipped(part) for part in name.replace("\\", "/").split("/") if part not in ("", ".", ".."))


def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a named pipe" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file")


def vet(sub: Submission) -> list[tuple[str, int]]:
    """The files a submission consists of, as (path relative to it, size), judged from their metadata alone before
    anything reads them: regular files and folders only, within MAX_UNPACKED_FILES and MAX_UNPACKED_BYTES. An entry
    that is itself an archive or a kernels.py is one file. A symbolic link (to a classmate's kernels.py, red team 9; to
    /proc/self/mem, which crashed the batch), a named pipe (which hung it), a device (/dev/zero, copied until the disk
    was full) or a sparse file of gigabytes (read whole into memory) is refused before it is opened (red team 15)."""
    src = sub.source
    mode = os.lstat(src).st_mode
    if stat.S_ISREG(mode):
        size = os.lstat(src).st_size
        _within_limits([size], src.name)
        return [("", size)]
    if not stat.S_ISDIR(mode):
        raise BatchError(f"{src.name} is {_kind(mode)}: submit a folder, an archive or a kernels.py")
    files: list[tuple[str, int]] = []

    def sizes() -> Iterator[int]:
        pending = [""]
        while pending:
            rel = pending.pop()
            with os.scandir(src / rel if rel else src) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if _skipped(entry.name):
                        continue
                    path = os.path.join(rel, entry.name) if rel else entry.name
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        pending.append(path)
                    elif stat.S_ISREG(info.st_mode):
                        files.append((path, info.st_size))
                        yield info.st_size
                    else:
                        raise BatchError(f"the submission holds {path}, which is {_kind(info.st_mode)}: submit the "
                                         "files themselves")

    _within_limits(sizes(), src.name)
    return sorted(files)


def _open_regular(path: Path) -> int:
    """A descriptor for reading `path`, which must still be the regular file vet() saw: never a link followed, and a
    pipe or a device put in its place since is not waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BatchError(f"{path.name} is no longer a regular file")
    return fd


def _read_vetted(path: Path, size: int) -> Iterator[bytes]:
    """The bytes of a vetted file, at most `size` of them (what vet() counted), in pieces."""
    fd = _open_regular(path)
    try:
        left = size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
    finally:
        os.close(fd)


def _copy_vetted(src: Path, files: list[tuple[str, int]], dest: Path) -> None:
    for rel, size in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            for chunk in _read_vetted(src / rel, size):
                out.write(chunk)


_TAR_SLACK = 64 << 20  # headers and padding a tar holds beyond its files' bytes


def _decompressed(chunks: Iterable[bytes], what: str) -> io.BytesIO:
    """A tar's bytes, decompressed here (gzip, bzip2, xz or none, told by their magic numbers whatever the file's name
    says) and no further than MAX_UNPACKED_BYTES and some slack. tarfile would otherwise decompress whatever lies
    between two headers to find the second: a member of an unknown type declaring 40 GiB in 38 KB took 108 s of the
    batch, a GNU long name of 3 GiB took 4 GB of its memory, neither counted as a file's bytes (red team 17)."""
    import bz2
    import lzma
    import zlib

    data = b"".join(chunks)
    limit = MAX_UNPACKED_BYTES + _TAR_SLACK
    out = io.BytesIO()

    def write(piece: bytes) -> None:
        out.write(piece)
        if out.tell() > limit:
            raise BatchError(f"{what} unpacks to more than {limit >> 20} MB: submit the kernels.py files and what they "
                             "import, not data")

    if data[:2] == b"\x1f\x8b":  # gzip, perhaps several members one after another
        pending = data
        while pending:
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            while True:
                piece = inflate.decompress(pending, 1 << 20)  # at most 1 MB out per call: the rest stays in the tail
                pending = inflate.unconsumed_tail
                write(piece)
                if inflate.eof or not (piece or pending):
                    break
            pending = inflate.unused_data if inflate.eof else b""
    elif data[:3] == b"BZh" or data[:6] == b"\xfd7zXZ\x00":
        kind = bz2.BZ2Decompressor if data[:3] == b"BZh" else lzma.LZMADecompressor
        pending = data
        while pending:
            stream = kind()
            piece = stream.decompress(pending, 1 << 20)
            write(piece)
            while not stream.eof and (piece or not stream.needs_input):
                piece = stream.decompress(b"", 1 << 20)
                write(piece)
            pending = stream.unused_data if stream.eof else b""
    else:
        return io.BytesIO(data)
    out.seek(0)
    return out


def _normalized(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """A tar member as a plain file or folder of the grader's: no set-user-ID bit or other mode beyond rwxr-xr-x, and
    the grader's owner, not the archive's (root extracting a tar otherwise gives its files the modes and owners the
    archive names: a setuid-root, world-writable program, red team 15)."""
    member.mode = (member.mode & 0o755) | (0o700 if member.isdir() else 0o600)
    member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
    return member


def unpack(sub: Submission, dest: Path, files: list[tuple[str, int]] | None = None) -> Path:
    """Copy or extract a submission, whose files vet() gives (or gave), into `dest` (emptied first) and return the
    folder to grade."""
    files = vet(sub) if files is None else files
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    src = sub.source
    one_file = len(files) == 1 and files[0][0] == ""  # an archive or a kernels.py; else a folder's vetted files
    contents = (lambda: io.BytesIO(b"".join(_read_vetted(src, files[0][1])))) if one_file else None
    if not one_file:
        _copy_vetted(src, files, dest)
    elif src.name.endswith(".zip"):
        with zipfile.ZipFile(contents()) as zf:
            infos = [i for i in zf.infolist() if not _skipped_path(i.filename)]
            _within_limits((i.file_size for i in infos), src.name)  # extraction stops at each member's stated size
            _safe_members([i.filename for i in infos], dest)
            zf.extractall(dest, members=infos)  # plain files and folders: zipfile makes no links and sets no mode
    elif src.name.endswith((".tar", ".tar.gz", ".tgz")):
        with tarfile.open(fileobj=_decompressed(_read_vetted(src, files[0][1]), src.name), mode="r:") as tf:
            members = []
            def kept(tf: tarfile.TarFile) -> Iterator[int]:  # read header by header: a bomb is stopped at the limit
                for m in tf:
                    if (m.isfile() or m.isdir()) and not _skipped_path(m.name):  # no links, no devices, no caches
                        members.append(_normalized(m))
                    yield m.size  # every member's data is read past, whatever its type (red team 17)
            _within_limits(kept(tf), src.name)
            _safe_members([m.name for m in members], dest)
            tf.extractall(dest, members=members, numeric_owner=True)
    else:
        _copy_vetted(src.parent, [(src.name, files[0][1])], dest)
        (dest / src.name).rename(dest / "kernels.py")
    return dest


def submission_root(folder: Path, slugs: list[str]) -> Path:
    """The folder that holds SLUG/kernels.py (students often zip a parent folder around it)."""
    if (folder / "kernels.py").exists() or any((folder / s / "kernels.py").exists() for s in slugs):
        return folder
    for path in sorted(folder.rglob("kernels.py")):
        if path.parent.name in slugs:
            return path.parent.parent
        if len(slugs) == 1:
            return path.parent
    return folder


def _digest_file(h: "hashlib._Hash", name: str, chunks: Iterable[bytes], size: int) -> None:
    """Each file as its name's length, its name, its size and its bytes: no two sets of files read the same (with the
    name and the bytes run together, `a` holding "b" + X and `ab` holding X were one fingerprint, red team 15)."""
    encoded = name.encode()
    h.update(len(encoded).to_bytes(8, "little") + encoded + size.to_bytes(8, "little"))
    for chunk in chunks:
        h.update(chunk)


def _tree_digest(root: Path, h: "hashlib._Hash") -> None:
    """The grader's own files (trusted: read as they are)."""
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        data = path.read_bytes()
        _digest_file(h, str(path.relative_to(REPO_ROOT)), [data], len(data))


def _versions() -> list[str]:
    from importlib import metadata

    found = [sys.version.split()[0]]
    for package in ("torch", "triton"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"{package} absent")
    return found


def fingerprint(sub: Submission, files: list[tuple[str, int]], slugs: list[str], device: str) -> str:
    """Changes when the submission's files (as vet() gave them), the graded slugs, the tier, the grader's code and
    specs, the course code they judge with (course/: the comparison, the formats), or the Python, PyTorch or Triton
    they run on change."""
    h = hashlib.sha256()
    h.update(json.dumps([sorted(slugs), device, _versions()]).encode())
    for rel, size in files:
        _digest_file(h, rel, _read_vetted(sub.source / rel if rel else sub.source, size), size)
    for part in ("autograder", "course"):
        _tree_digest(REPO_ROOT / part, h)
    return h.hexdigest()


@dataclass
class Outcome:
    student: str
    status: str  # graded | skipped (already done) | failed (the grading process itself failed)
    seconds: float
    score: float = 0.0
    message: str = ""


def _paths(out: Path, student: str) -> tuple[Path, Path, Path]:
    """A student's results, record of being done and log, each in a folder of its own kind (a student named
    "ann.meta" once could write over ann's record, when records lay beside results as <student>.meta.json)."""
    return out / "results" / f"{student}.json", out / "records" / f"{student}.json", out / "logs" / f"{student}.txt"


def is_done(out: Path, sub: Submission, fp: str) -> bool:
    result, meta, _ = _paths(out, sub.student)
    if not (result.exists() and meta.exists()):
        return False
    try:
        return json.loads(meta.read_text()).get("fingerprint") == fp
    except json.JSONDecodeError:
        return False


def grade_one(sub: Submission, out: Path, slugs: list[str], device: str, gpu: str | None,
              grade_args: list[str], timeout: float) -> Outcome:
    """Unpack and grade one submission in its own process; write its results and fingerprint."""
    (out / "work").mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(out / "work", 0o700)  # what a submission unpacks to is the grader's alone
    work = out / "work" / sub.student
    try:
        return _unpack_and_grade(sub, work, out, slugs, device, gpu, grade_args, timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the entry itself is kept; its unpacked copy takes no disk from others


def _unpack_and_grade(sub: Submission, work: Path, out: Path, slugs: list[str], device: str, gpu: str | None,
                      grade_args: list[str], timeout: float) -> Outcome:
    t0 = time.perf_counter()
    result, meta, log = _paths(out, sub.student)
    for p in (result, meta, log):
        p.parent.mkdir(parents=True, exist_ok=True)
    if sub.problem:
        return Outcome(sub.student, "failed", 0.0, message=sub.problem)
    try:  # everything that reads the student's entry, so that whatever it holds fails that student alone
        files = vet(sub)
        fp = fingerprint(sub, files, slugs, device)
        folder = submission_root(unpack(sub, work, files), slugs)
    except (BatchError, zipfile.BadZipFile, tarfile.TarError, OSError) as exc:
        return Outcome(sub.student, "failed", time.perf_counter() - t0, message=f"could not unpack: {exc}")
    tmp = result.with_suffix(".json.tmp")
    tmp.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "autograder", "grade", *slugs, "--submission", str(folder), "--device", device,
           "--json", str(tmp), "--skip-doctor", *grade_args]
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["AUTOGRADER_DIE_WITH_PARENT"] = "1"  # killed with this thread's batch: its children follow (lifecycle.py)
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # Everything under the grading first, while the grader still adopts what its submission detached; then the
            # grader. A plain kill of the grader left a hung submission's detached processes running (red team 10).
            end_tree(proc.pid)
            proc.wait()
            code = None
    seconds = time.perf_counter() - t0
    if code != 0 or not tmp.exists():
        why = f"timed out after {timeout:.0f} s" if code is None else f"exit status {code}"
        return Outcome(sub.student, "failed", seconds, message=f"the grading process failed ({why}); see {log}")
    os.replace(tmp, result)
    meta.write_text(json.dumps({"fingerprint": fp, "seconds": seconds, "device": device, "gpu": gpu,
                                "date": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
    return Outcome(sub.student, "graded", seconds, score=json.loads(result.read_text())["score"])


# --------------------------------------------------------------------------------------------------
# Scores: one CSV column per graded part, and a leaderboard
# --------------------------------------------------------------------------------------------------


def _column(test: dict) -> str:
    slug, task, kind = (test.get("tags") or ["?", "?", "correctness"])[:3]
    name = task + (" speed" if kind == "speed" else "")
    return name + (" (bonus)" if "(bonus)" in test["name"] else "")


def collect(out: Path, students: list[str]) -> tuple[list[str], list[dict]]:
    """Columns and one row per student with results: points per part, total, bonus-free total, speed-ups."""
    rows, columns = [], []
    for student in students:
        path = out / "results" / f"{student}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        row: dict = {"student": student}
        for test in data["tests"]:
            col = _column(test)
            if col not in columns:
                columns.append(col)
            row[col] = row.get(col, 0.0) + test["score"]
        speedups = [e["value"] for e in data.get("leaderboard", []) if e.get("value", 0) > 0]
        row["total"] = data["score"]
        row["speedup_geomean"] = math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else ""
        rows.append(row)
    return columns, rows


def _cell(value: object) -> object:
    """A text cell that a spreadsheet shows as text: one starting with =, +, -, @, a tab or a carriage return would be
    run as a formula (a student named `=HYPERLINK(...)`, red team 15), so it gets an apostrophe first."""
    if isinstance(value, str) and value.startswith(("=", "+", "-", "@", "\t", "\r")):
        return "'" + value
    return value


def write_scores(out: Path, students: list[str]) -> tuple[Path, Path]:
    columns, rows = collect(out, students)
    csv_path, board_path = out / "scores.csv", out / "leaderboard.md"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, ["student", *columns, "total", "speedup_geomean"], restval=0.0)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (round(v, 4) if isinstance(v, float) else _cell(v)) for k, v in row.items()})
    ranked = sorted(rows, key=lambda r: (-r["total"], -(r["speedup_geomean"] or 0.0), r["student"]))
    lines = ["| rank | student | total | speed-up (geomean) |", "|---:|---|---:|---:|"]
    for i, r in enumerate(ranked, 1):
        sp = f"{r['speedup_geomean']:.2f}x" if r["speedup_geomean"] else "-"
        name = printable(r["student"], one_line=True).replace("|", "\\|")  # one cell of one row, whatever the name says
        lines.append(f"| {i} | {name} | {r['total']:.1f} | {sp} |")
    board_path.write_text("\n".join(lines) + "\n")
    return csv_path, board_path


# --------------------------------------------------------------------------------------------------
# Running a batch
# --------------------------------------------------------------------------------------------------


def visible_gpus() -> list[str]:
    """GPU ids to pin one grading slot each to: CUDA_VISIBLE_DEVICES if set, else every device torch sees."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip() and g.strip() != "-1"]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []


def run_batch(folder: Path, out: Path, slugs: list[str], device: str, jobs: int | None = None,
              only: int | None = None, grade_args: list[str] | None = None, timeout: float = 3600.0,
              say: Callable[[str], None] = print) -> list[Outcome]:
    """Grade every submission not graded yet (or only the one at index `only`), then write the scores."""
    subs = discover(folder)
    if not subs:
        raise BatchError(f"{folder} holds no submissions: put one folder, archive or kernels.py per student in it.")
    if only is not None:
        if not 0 <= only < len(subs):
            raise BatchError(f"index {only} is out of range: {folder} holds {len(subs)} submissions (0 to {len(subs) - 1}).")
        todo_all = [subs[only]]
    else:
        todo_all = subs
    gpus = visible_gpus() if device == "cuda" else []
    if device == "cuda" and not gpus:
        raise BatchError("--device cuda was asked for, but no GPU is visible here.")
    slots = gpus or [None] * max(1, jobs or 1)
    if device == "cuda" and jobs:
        slots = gpus[:jobs]

    outcomes: list[Outcome] = []
    todo = []
    def done_before(sub: Submission) -> bool:
        try:
            return not sub.problem and is_done(out, sub, fingerprint(sub, vet(sub), slugs, device))
        except Exception:  # noqa: BLE001  (an entry that cannot be read is graded, and fails, as that student's alone)
            return False

    for sub in todo_all:
        if done_before(sub):
            outcomes.append(Outcome(sub.student, "skipped", 0.0, message="already graded"))
        else:
            todo.append(sub)
    say(f"{len(subs)} submissions, {len(outcomes)} already graded, {len(todo)} to grade on "
        f"{len(slots)} slot(s){' (GPUs ' + ', '.join(gpus) + ')' if gpus else ''}.")

    out.mkdir(parents=True, exist_ok=True)  # the scores are written whatever became of each grading
    free = list(slots)
    lock = threading.Lock()
    t_start = time.perf_counter()

    def work(sub: Submission) -> Outcome:
        with lock:
            slot = free.pop()
        try:
            outcome = grade_one(sub, out, slugs, device, slot, grade_args or [], timeout)
        except Exception as exc:  # noqa: BLE001  (one student's failure, whatever it is, is theirs alone)
            # Red team 12 took the execute bits off the grader's interpreter: starting the next student's grading raised,
            # and the batch ended with no scores for anyone. Whatever the class's folders or the machine do to one
            # grading, the others are graded and the scores written.
            outcome = Outcome(sub.student, "failed", 0.0, message=f"could not be graded: {type(exc).__name__}: {exc}")
        finally:
            with lock:
                free.append(slot)
        with lock:
            outcomes.append(outcome)
            done = sum(o.status != "skipped" for o in outcomes)
            eta = (time.perf_counter() - t_start) / done * (len(todo) - done)
            detail = f"{outcome.score:.1f} points" if outcome.status == "graded" else outcome.message
            say(printable(f"[{done}/{len(todo)}] {sub.student}: {detail} ({outcome.seconds:.0f} s; about {eta:.0f} s "
                          "left)", one_line=True))  # a student's name and an archive's member names are theirs to choose
        return outcome

    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        list(pool.map(work, todo))
    if only is None:
        csv_path, board = write_scores(out, [s.student for s in subs])
        say(f"Wrote {csv_path} and {board}.")
    return outcomes


def slurm_script(folder: Path, out: Path, slugs: list[str], count: int, grade_args: list[str],
                 parallel: int = 8, hours: int = 2) -> str:
    """An sbatch array job: one task per submission, each on one GPU; the merge runs after (see the README)."""
    python = sys.executable
    args = " ".join([*slugs, *(f"--grade-arg={a}" for a in grade_args)])
    return f"""#!/bin/bash
# Grade {count} submissions in {folder}, one array task per submission, each on one GPU.
# Submit:  jobid=$(sbatch --parsable {out}/grade_array.sbatch)
# Merge:   sbatch --dependency=afterany:$jobid --wrap "cd {REPO_ROOT} && {python} -m autograder batch {folder} --out {out} --merge {' '.join(slugs)}"
#SBATCH --job-name=autograde
#SBATCH --array=0-{count - 1}%{parallel}
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --mem=32G
#SBATCH --time={hours:02d}:00:00
#SBATCH --output={out}/logs/slurm-%A_%a.txt
set -euo pipefail
cd {REPO_ROOT}
{python} -m autograder batch {folder} --out {out} --device cuda --only-index "$SLURM_ARRAY_TASK_ID" {args}
"""
