"""The worker's own directories (autograder/sandbox.py): Triton's cache apart from the trusted processes', keyed by the
submission, and, where the kernel has Landlock, writes refused everywhere else, to native code and to every process
the worker starts (which the Python-level guards cannot see)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import sandbox
from conftest import REPO_ROOT

# Run in a fresh interpreter (Landlock cannot be undone): confine, then try to write in and out of the worker's
# directories, from Python, from a process started with no audit event, and by a rename out of the temporary
# directory. Prints what happened as JSON.
_CHILD = r"""
import fcntl, json, os, signal, stat, subprocess, sys, tempfile, termios
import multiprocessing.util as mp_util
from autograder.sandbox import confine_replayer, confine_worker

submission, outside, role = sys.argv[1], sys.argv[2], sys.argv[3]
sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}  # the test reads this process's output to its end
outsider = subprocess.Popen(sleeper, **quiet)  # started before the confinement: another student's worker, say
terminal_in, terminal = os.openpty()  # the instructor's terminal, not this process's own
terminal_path = os.ttyname(terminal)
victim = tempfile.mkstemp(prefix="autograder-sandbox-victim-")[1]  # a file of the grader's user, made before
c = confine_worker(submission) if role == "worker" else confine_replayer(open(submission).read())
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
seen = {"enforced": c.enforced, "root": c.root, "tempdir": tempfile.gettempdir(), "outsider": outsider.pid,
        "capabilities": c.capabilities, "syscalls": c.syscalls, "cap_eff": int(status["CapEff"], 16), "cap_bnd": int(status["CapBnd"], 16)}

def attempt(name, fn):
    try:
        fn()
        seen[name] = "written"
    except PermissionError:
        seen[name] = "refused"

def write(path):
    with open(path, "w") as f:
        f.write("x")

attempt("inside", lambda: write(os.path.join(c.temp, "scratch.txt")))
attempt("dev_null", lambda: write("/dev/null"))
probe = "/dev/shm/autograder-sandbox-probe-%d" % os.getpid()
attempt("dev_shm", lambda: (write(probe), os.remove(probe)))
attempt("outside", lambda: write(os.path.join(outside, "planted.py")))
attempt("rename_out", lambda: (write(os.path.join(c.temp, "staged.py")),
                               os.replace(os.path.join(c.temp, "staged.py"), os.path.join(outside, "moved.py"))))
# Red team 11: the grader's terminal, found by path, written on and filled with a command its shell then ran
attempt("write_terminal", lambda: write(terminal_path))
def read(name, path):
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NOCTTY))
        seen[name] = "read"
    except PermissionError:
        seen[name] = "refused"
read("read_terminal", terminal_path)  # the keys typed there while the worker grades
read("read_terminal_through_proc", "/proc/self/fd/%d" % terminal)  # the file an open descriptor names
read("read_outside", victim)  # files outside /dev are read as before
read("read_urandom", "/dev/urandom")
def push_input():
    fd = os.open(terminal_path, os.O_RDONLY | os.O_NOCTTY)  # refused since reading is; pushing input must be too
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x")
    except OSError as exc:
        raise PermissionError(exc.errno, "TIOCSTI") from exc
    finally:
        os.close(fd)
attempt("push_terminal_input", push_input)
attempt("make_device_node", lambda: os.mknod(os.path.join(c.temp, "node"), stat.S_IFCHR | 0o600, os.makedev(1, 3)))
# Red team 12: Landlock does not judge a file's mode, owner or times; the interpreter lost its execute bits
attempt("chmod_outside", lambda: os.chmod(victim, 0o4755))
attempt("utime_outside", lambda: os.utime(victim, (0, 0)))
attempt("chmod_inside", lambda: (write(os.path.join(c.temp, "own.sh")), os.chmod(os.path.join(c.temp, "own.sh"), 0o755)))
seen["victim_mode"] = oct(os.stat(victim).st_mode & 0o7777)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def outliving(call):
    def attempt_call():
        if call() == -1 and ctypes.get_errno() == 1:  # EPERM
            raise PermissionError(1, "refused")
    return attempt_call
shm = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
if shm >= 0:
    libc.shmctl(shm, 0, None)  # IPC_RMID: made before the check below refused it, so not left behind
attempt("sysv_shm", outliving(lambda: shm))
msg = libc.msgget(0, 0o1600)
if msg >= 0:
    libc.msgctl(msg, 0, None)
attempt("sysv_msg", outliving(lambda: msg))
key = libc.syscall(248 if os.uname().machine == "x86_64" else 217, b"user", b"autograder-sandbox-probe", b"x", 1,
                   ctypes.c_int(-4))  # add_key to the user's session keyring
if key >= 0:
    libc.syscall(250 if os.uname().machine == "x86_64" else 219, 21, key)  # KEYCTL_INVALIDATE
attempt("add_key", outliving(lambda: key))
# Red team 14: a POSIX message queue outlives the process too, and a file's flags are set by an ioctl
libc.mq_open.restype = ctypes.c_int
queue = libc.mq_open(b"/autograder-sandbox-probe", os.O_CREAT | os.O_RDONLY, 0o600, None)
if queue >= 0:
    libc.mq_unlink(b"/autograder-sandbox-probe")
attempt("mq_open", outliving(lambda: queue))
def set_flags():
    fd = os.open(victim, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, 0x40086602, (0x80).to_bytes(8, "little"))  # FS_IOC_SETFLAGS: FS_NOATIME_FL
    except OSError as exc:
        seen["set_file_flags_errno"] = exc.errno  # EPERM from the filter; ENOTTY would be a file system without flags
        raise PermissionError(exc.errno, "FS_IOC_SETFLAGS") from exc
    finally:
        os.close(fd)
attempt("set_file_flags", set_flags)
seen["other_ioctls"] = len(termios.tcgetattr(terminal))  # TCGETS: ioctls the filter does not name still work
exe = os.fsencode(sys.executable)
code = ("open(%r, 'w').write('x')" % os.path.join(outside, "from_a_child.py")).encode()
pid = mp_util.spawnv_passfds(exe, [exe, b"-c", code], ())
seen["child_exit"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
for name, target in (("signal_outsider", outsider), ("signal_own_child", subprocess.Popen(sleeper, **quiet))):
    try:
        signal.pidfd_send_signal(os.pidfd_open(target.pid), signal.SIGKILL)
        target.wait()
        seen[name] = "sent"
    except PermissionError:
        seen[name] = "refused"
print(json.dumps(seen))
"""


def _confined(tmp_path: Path, env: dict[str, str] | None = None, role: str = "worker") -> dict:
    submission = tmp_path / "kernels.py"
    submission.write_text("# a submission\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    environ = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "trusted" / "cache"), "PYTHONPATH": str(REPO_ROOT),
               "OPENBLAS_NUM_THREADS": "1", **(env or {})}  # fmt: skip  (one thread, as the grader starts children)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(submission), str(outside), role], env=environ, capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    try:
        os.kill(seen["outsider"], 9)  # left running when the signal was refused
    except ProcessLookupError:
        pass
    return seen


def test_a_worker_gets_triton_directories_of_its_own_keyed_by_the_submission(tmp_path: Path) -> None:
    seen = _confined(tmp_path, {"AUTOGRADER_NO_LANDLOCK": "1"})
    trusted = tmp_path / "trusted"
    assert seen["root"] == str((trusted / sandbox.WORKER_DIR / sandbox.submission_key(str(tmp_path / "kernels.py"))).resolve())
    assert seen["tempdir"] == os.path.join(seen["root"], "tmp")
    assert not (trusted / "cache").exists()  # the trusted processes' cache is not the worker's
    assert seen["enforced"].startswith("switched off")
    one, two = tmp_path / "a.py", tmp_path / "b.py"
    one.write_text("x = 1\n")
    two.write_text("x = 2\n")
    assert sandbox.submission_key(str(one)) != sandbox.submission_key(str(two))


def test_a_replayer_gets_directories_of_its_own_apart_from_the_workers(tmp_path: Path) -> None:
    """Keyed by the text the grader read, which is the file's for an unchanged file, in a directory of its own."""
    seen = _confined(tmp_path, {"AUTOGRADER_NO_LANDLOCK": "1"}, role="replayer")
    key = sandbox.submission_key(str(tmp_path / "kernels.py"))
    assert seen["root"] == str((tmp_path / "trusted" / sandbox.ROLE_DIRS["replayer"] / key).resolve())
    assert sandbox.ROLE_DIRS["replayer"] != sandbox.WORKER_DIR
    assert seen["tempdir"] == os.path.join(seen["root"], "tmp")


@pytest.mark.skipif(sandbox.landlock_abi() < 1, reason="this kernel has no Landlock")
@pytest.mark.parametrize("role", ["worker", "replayer"])
def test_under_landlock_nothing_the_worker_starts_writes_outside_its_directories(tmp_path: Path, role: str) -> None:
    seen = _confined(tmp_path, role=role)
    assert seen["enforced"] == f"Landlock ABI {sandbox.landlock_abi()}"
    assert seen["inside"] == "written"
    assert (seen["outside"], seen["rename_out"]) == ("refused", "refused")
    assert seen["dev_null"] == "written"  # a character device: writing to it creates nothing
    if os.path.isdir("/dev/shm"):  # a directory of /dev where a replayer's forged op once wrote a file
        assert seen["dev_shm"] == "refused"
    assert seen["child_exit"] != 0  # the child's open raised PermissionError: it inherits the domain
    # Landlock ABI 6: no signal outside the domain (red team 9 killed another student's grading with pidfd_send_signal)
    assert seen["signal_outsider"] == ("refused" if sandbox.landlock_abi() >= 6 else "sent")
    assert seen["signal_own_child"] == "sent"
    # Red team 11: no terminal is a device the worker may write, and no device node may be made beneath its directories
    # (as root, a node for the disk is the disk); pushing input into a terminal is refused by the capabilities below.
    assert (seen["write_terminal"], seen["make_device_node"]) == ("refused", "refused")
    # Nor read a terminal: red team 11's worker could open the instructor's and read the keys typed while it graded.
    # Files outside /dev, and the devices it may write, are read as before.
    assert (seen["read_terminal"], seen["read_terminal_through_proc"]) == ("refused", "refused")
    assert (seen["read_outside"], seen["read_urandom"]) == ("read", "read")
    # Red team 12: no mode, owner or time of any file changes, its own or not (a seccomp filter; Landlock has no say)
    assert (seen["chmod_outside"], seen["utime_outside"], seen["chmod_inside"]) == ("refused",) * 3
    assert seen["victim_mode"] == "0o600"
    assert seen["syscalls"] == "file metadata, System V IPC, message queues and keyrings refused"
    # Red team 13: System V shared memory and keys outlive the process, where no ending of processes reaches them
    assert (seen["sysv_shm"], seen["sysv_msg"], seen["add_key"]) == ("refused",) * 3
    assert (seen["mq_open"], seen["set_file_flags"], seen["other_ioctls"]) == ("refused", "refused", 7)
    assert seen["set_file_flags_errno"] == 1  # EPERM
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0, reason="root's capabilities only")
@pytest.mark.parametrize("role", ["worker", "replayer"])
def test_a_worker_run_by_root_keeps_none_of_roots_powers_over_other_processes_and_devices(tmp_path: Path,
                                                                                          role: str) -> None:
    """Red team 11, grading as root (as Gradescope does): the confined worker pushed a command into the instructor's
    terminal with TIOCSTI (root may, on any terminal) and made device nodes (CAP_MKNOD). It keeps only the file
    capabilities and CAP_IPC_LOCK, and so does anything it starts (the bounding set). Checked with and without
    Landlock: the capabilities are dropped either way."""
    kept = sum(1 << c for c in sandbox._KEPT_CAPABILITIES)
    for env in ({}, {"AUTOGRADER_NO_LANDLOCK": "1"}):
        (tmp_path / str(len(env))).mkdir()
        seen = _confined(tmp_path / str(len(env)), env, role=role)
        assert seen["capabilities"] == "capabilities dropped"
        assert seen["cap_eff"] == kept and seen["cap_bnd"] == kept, seen
        assert seen["push_terminal_input"] == "refused"
        assert seen["make_device_node"] == "refused"


def test_the_devices_a_worker_may_write_are_named_not_every_device() -> None:
    """The GPU's files and the null devices; never a terminal, the kernel's log or memory (every character device of
    /dev was writable until red team 11 typed into the instructor's terminal)."""
    devices = sandbox.writable_devices()
    assert "/dev/null" in devices
    assert not [d for d in devices if d.startswith(("/dev/tty", "/dev/pts", "/dev/console", "/dev/ptmx", "/dev/kmsg",
                                                    "/dev/mem", "/dev/port", "/dev/input"))]
    assert all(d in sandbox._WRITABLE_DEVICES or d.startswith(sandbox._WRITABLE_DEVICE_PREFIXES) for d in devices)


def test_without_landlock_the_same_child_writes_where_it_likes(tmp_path: Path) -> None:
    """The control: what the kernel stops above is possible without it (the Python-level guards never see it)."""
    seen = _confined(tmp_path, {"AUTOGRADER_NO_LANDLOCK": "1"})
    assert (seen["outside"], seen["child_exit"]) == ("written", 0)
    assert (tmp_path / "outside" / "from_a_child.py").exists()


# What a worker does on a GPU at a kernel's first launch, here without one: Triton compiles the kernel for sm_90
# (ptxas writes its temporary files), builds a native module with the C compiler, stores both in its cache and loads
# the module. All of it must work inside the worker's directories.
_COMPILE = r"""
import json, os, sys
from autograder.sandbox import confine_worker
c = confine_worker(sys.argv[1])
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.runtime.build import compile_module_from_src

@triton.jit
def double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

src = triton.compiler.ASTSource(fn=double, signature={"x_ptr": "*fp32", "n": "i32"}, constexprs={"BLOCK": 128})
cubin = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["cubin"]
module = compile_module_from_src(
    '#include <Python.h>\nstatic struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "sandbox_probe", NULL, -1, NULL};\n'
    'PyMODINIT_FUNC PyInit_sandbox_probe(void) { return PyModule_Create(&d); }\n', "sandbox_probe")
print(json.dumps({"enforced": c.enforced, "root": c.root, "cubin": len(cubin), "module": module.__file__}))
"""


@pytest.mark.skipif(sandbox.landlock_abi() < 1, reason="this kernel has no Landlock")
@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_triton_compiles_a_kernel_and_loads_what_it_built_inside_the_confinement(tmp_path: Path) -> None:
    submission = tmp_path / "kernels.py"
    submission.write_text("# a submission\n")
    environ = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "trusted" / "cache"), "PYTHONPATH": str(REPO_ROOT)}
    environ.pop("TRITON_INTERPRET", None)
    probe = tmp_path / "probe.py"  # a file: Triton reads a kernel's source from it
    probe.write_text(_COMPILE)
    done = subprocess.run([sys.executable, str(probe), str(submission)], env=environ, capture_output=True, text=True,
                          timeout=300, cwd=REPO_ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["enforced"].startswith("Landlock") and seen["cubin"] > 0
    assert seen["module"].startswith(os.path.join(seen["root"], "cache") + os.sep)
    assert not (tmp_path / "trusted" / "cache").exists()


_ENV_PROBE = '''import os
with open("/proc/self/environ", "rb") as f:
    initial = f.read()
seen = sorted(k for k in ("SSH_AUTH_SOCK", "MY_API_TOKEN") if k in os.environ or k.encode() in initial)
raise RuntimeError(f"the worker saw {seen} of the grader's environment")
'''


def test_a_worker_gets_none_of_the_graders_credentials(tmp_path: Path) -> None:
    """Red team 9: a confined worker used the instructor's ssh-agent (SSH_AUTH_SOCK) and read a token from the
    environment, then wrote both into its own results. The zygote, and so every worker, gets only what Python,
    PyTorch, Triton, CUDA and the compiler read (runner.WORKER_ENV)."""
    from autograder.runner import worker_environment

    kept = worker_environment({"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "1", "LC_ALL": "C", "TRITON_CACHE_DIR": "/c",
                               "SSH_AUTH_SOCK": "/tmp/agent", "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "k"})
    assert sorted(kept) == ["CUDA_VISIBLE_DEVICES", "LC_ALL", "PATH", "TRITON_CACHE_DIR"]
    (tmp_path / "rmsnorm").mkdir()
    (tmp_path / "rmsnorm" / "kernels.py").write_text(_ENV_PROBE)
    env = {**os.environ, "SSH_AUTH_SOCK": str(tmp_path / "agent.sock"), "MY_API_TOKEN": "hunter2", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", "rmsnorm", "--submission", str(tmp_path),
                           "--max-cases", "1", "--skip-doctor", "--json", str(tmp_path / "grade.json")], env=env,
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)  # fmt: skip
    report = (tmp_path / "grade.json").read_text() if (tmp_path / "grade.json").exists() else ""
    assert "the worker saw [] of the grader's environment" in report, done.stdout[-2000:] + done.stderr[-2000:]


# A submission that reports, at import, how every thread of its worker is confined, through the import error's text.
_THREAD_PROBE = r'''
import json, os
seen = {}
for tid in os.listdir("/proc/self/task"):
    status = dict(l.split(":\t", 1) for l in open(f"/proc/self/task/{tid}/status").read().splitlines() if ":\t" in l)
    seen[tid] = [status["Name"].strip(), status["NoNewPrivs"].strip(), int(status["CapEff"], 16),
                 int(status["CapPrm"], 16), status.get("Seccomp", "").strip()]
raise RuntimeError("THREADS" + json.dumps(seen) + "THREADS")
'''


_DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    os.environ.get("AUTOGRADER_TEST_DEVICE") != "cuda", reason="on a GPU: AUTOGRADER_TEST_DEVICE=cuda"))]


@pytest.mark.skipif(sandbox.landlock_abi() < 1, reason="this kernel has no Landlock")
@pytest.mark.parametrize("device", _DEVICES)
def test_every_thread_of_a_worker_is_confined(tmp_path: Path, device: str) -> None:
    """Landlock, the capabilities and no_new_privs bind the thread that sets them and the threads it starts after.
    The worker's lifeline watcher was started before the confinement; red team 12 made it run the submission's code
    (its connection's recv_bytes replaced) and from it wrote into the grader's own files, then got the course's
    solution graded as the submission's: a stub to full marks. The worker is now confined while it is its only
    thread, and every thread it has when the submission is imported shows it. On a GPU that includes the CUDA
    driver's threads, started before Landlock (under which CUDA does not start) but after the capabilities and the
    system call filter."""
    from autograder.grade import Selection, grade_assignment

    probe = tmp_path / "kernels.py"
    probe.write_text(_THREAD_PROBE)
    result = grade_assignment("rmsnorm", probe, device, seed=0, timeout=60, selection=Selection(max_cases=1))
    message = result.cases[0].message
    threads = json.loads(message.split("THREADS")[-2])  # the message quotes the raising line first
    assert len(threads) >= 2, threads  # the submission's thread and the lifeline's watcher at least (CUDA's on a GPU)
    kept = sum(1 << c for c in sandbox._KEPT_CAPABILITIES)
    filtered = "2" if sandbox._native_arch() is not None else ""  # /proc's "Seccomp: 2" is a filter
    for name, no_new_privs, cap_eff, cap_prm, seccomp in threads.values():
        assert no_new_privs == "1", threads
        assert (cap_eff | cap_prm) & ~kept == 0, threads
        assert seccomp == filtered, threads


_NATIVE_THREADS = r"""
import json, os, sys
from autograder.sandbox import confine_worker, restrict_process
if sys.argv[2] == "restrict_first":
    restrict_process()
import torch
torch.set_num_threads(2)
torch.ones(1 << 22).sum()  # OpenMP's threads: native, unseen by Python's threading, as CUDA's driver threads are
try:
    confine_worker(sys.argv[1], gpu=True)
except RuntimeError as exc:
    print(json.dumps({"refused": str(exc)})); sys.exit()
seen = {}
for tid in os.listdir("/proc/self/task"):
    st = dict(l.split(":\t", 1) for l in open(f"/proc/self/task/{tid}/status").read().splitlines() if ":\t" in l)
    seen[tid] = [st["NoNewPrivs"].strip(), int(st["CapEff"], 16) | int(st["CapPrm"], 16), st.get("Seccomp", "").strip()]
print(json.dumps({"threads": seen}))
"""


@pytest.mark.skipif(sandbox.landlock_abi() < 1, reason="this kernel has no Landlock")
@pytest.mark.parametrize("order", ["restrict_first", "threads_first"])
def test_native_threads_started_before_landlock_hold_no_more_than_the_worker(tmp_path: Path, order: str) -> None:
    """On a GPU the worker's order is: capabilities and system call filter, then CUDA (whose driver starts native
    threads), then Landlock, under which CUDA does not start. Here OpenMP's threads stand in for CUDA's: started
    between the two steps they hold the kept capabilities only, no_new_privs and the filter; started before the first,
    the GPU tier's confinement refuses the process rather than leave them root's powers."""
    submission = tmp_path / "kernels.py"
    submission.write_text("# a submission\n")
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO_ROOT),
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _NATIVE_THREADS, str(submission), order], env=env,
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    if order == "threads_first":
        assert "call restrict_process before CUDA starts" in seen["refused"], seen
        return
    kept = sum(1 << c for c in sandbox._KEPT_CAPABILITIES)
    filtered = "2" if sandbox._native_arch() is not None else ""
    assert len(seen["threads"]) >= 2, seen  # OpenMP started at least one thread of its own
    for no_new_privs, caps, seccomp in seen["threads"].values():
        assert (no_new_privs, caps & ~kept, seccomp) == ("1", 0, filtered), seen


def test_a_process_with_another_thread_is_not_confined(tmp_path: Path) -> None:
    """Confining one thread of several would leave the others free: `confine` refuses."""
    code = ("import sys, threading, time\nfrom autograder.sandbox import confine_worker\n"
            "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
            "try:\n    confine_worker(sys.argv[1])\nexcept RuntimeError as exc:\n    print('refused:', exc)\n")
    submission = tmp_path / "kernels.py"
    submission.write_text("# a submission\n")
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO_ROOT),
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code, str(submission)], env=env, capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT)
    assert "refused: the worker was about to be confined with 2 threads running" in done.stdout, done.stderr


_PYC_SOURCE = '''
try:
    import helper  # only helper.pyc lies beside kernels.py
except ImportError:
    helper = None
if helper is not None:
    raise RuntimeError("LOADED-HELPER-PYC")
'''


def test_the_worker_runs_the_source_not_bytecode_left_beside_it(tmp_path: Path) -> None:
    """Red team 16: an archive's __pycache__ held an unchecked-hash .pyc (PEP 552: never compared with its source),
    and Python ran it in place of kernels.py: code in the worker that no reading of kernels.py shows. The worker reads
    bytecode only from its own empty cache, and a module that is only bytecode in the submission's folder is not
    found."""
    import importlib.util
    import py_compile

    from autograder.grade import Selection, grade_assignment

    folder = tmp_path / "rmsnorm"
    folder.mkdir()
    source = (REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py").read_text() + _PYC_SOURCE
    (folder / "kernels.py").write_text(source)
    hidden = tmp_path / "hidden.py"
    hidden.write_text("raise RuntimeError('RAN-THE-PYC')\n")
    pyc = Path(importlib.util.cache_from_source(str(folder / "kernels.py")))
    pyc.parent.mkdir()
    py_compile.compile(str(hidden), cfile=str(pyc), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    helper = tmp_path / "helper.py"
    helper.write_text("X = 1\n")
    py_compile.compile(str(helper), cfile=str(folder / "helper.pyc"))
    result = grade_assignment("rmsnorm", folder / "kernels.py", "cpu", seed=0, timeout=60,
                              selection=Selection(max_cases=1))
    messages = " ".join(c.message for c in result.cases)
    assert "RAN-THE-PYC" not in messages and "LOADED-HELPER-PYC" not in messages
    assert result.cases[0].status == "passed", messages
