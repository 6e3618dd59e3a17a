"""Where a worker may write (its own directories) and what in /dev it may read, enforced by the kernel where Linux
allows it.

The trusted processes (the grader, the replayer) load code from files: Python modules from the repository and
site-packages, and Triton's compiled modules (its driver's utilities, each kernel's launcher) from Triton's cache. A
worker that could write any of those files would run its code in a trusted process the next time it loads one,
whatever the other defences say: a module planted on the grader's import path, or a native module stored in
Triton's cache under the key of Triton's own driver, which the replayer loads at its first launch.

So a worker gets directories of its own before the submission is imported (`confine_worker`):

- Triton's cache, dump and override directories of its own (and PyTorch's compile cache), keyed by the submission's
  contents: a submission reuses what it compiled before, and never shares a cache with another submission or with
  the trusted processes;
- a temporary directory of its own (Triton's compilers write there);
- and, where the kernel has Landlock (Linux 5.13 or later, enabled), a Landlock domain that allows writes only
  beneath those directories (no device nodes made there) and to the devices named in _WRITABLE_DEVICES (the null
  and random devices, the GPU's device files; no terminal), with /dev/shm too on a GPU. The kernel enforces it on
  the worker, on native code it loads and on every process it starts, none of which the Python-level guards of
  autograder/integrity.py can see. Without Landlock the Python-level guards are all there is (docs/integrity.md says
  what they miss).

The same domain lets it read files anywhere but in /dev, where it reads only those devices and its own directories:
not a terminal, whose keys it would otherwise read while the instructor types. Landlock needs no privileges;
executing and the GPU's ioctls are left as they are. A worker run by root (as on Gradescope) also gives up root's
powers but over files (`drop_capabilities`), and a seccomp filter refuses the system calls Landlock does not judge
(`refuse_system_calls`: file modes and owners, objects that outlive the process); on a GPU both come before CUDA
starts, so that the driver's threads hold neither (`restrict_process`), and Landlock after, since CUDA does not start
under it.

The replayer gets the same (`confine_replayer`), in directories of its own: it runs none of the submission's Python,
but it runs Triton's code generator over the submission's kernels and, under the CPU interpreter, their bodies as
Python, so a body that got past autograder/kernel_source.py's check would still write nowhere that is loaded later.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import stat
import sys
import tempfile
from dataclasses import dataclass

# Landlock's system calls have the same numbers on every architecture (include/uapi/asm-generic/unistd.h).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Access rights (include/uapi/linux/landlock.h): every right that creates, changes or removes a file, and reading one.
_READ_FILE, _WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 2, 1 << 1, 1 << 4, 1 << 5
_MAKE_CHAR, _MAKE_DIR, _MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = (1 << n for n in range(6, 13))
_REFER = 1 << 13  # ABI 2: links and renames across directories
_TRUNCATE = 1 << 14  # ABI 3
_WRITES_V1 = (_WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG | _MAKE_SOCK | _MAKE_FIFO
              | _MAKE_BLOCK | _MAKE_SYM)  # fmt: skip

WORKER_DIR = "autograder-worker"  # beside Triton's cache directory: <its parent>/autograder-worker/<submission key>/
ROLE_DIRS = {"worker": WORKER_DIR, "replayer": "autograder-replayer"}


_SCOPE_SIGNAL = 1 << 1  # ABI 6: no signal to a process outside the domain (LANDLOCK_SCOPE_SIGNAL)
# Handled everywhere and granted nowhere: a device node made beneath the worker's own directories is, as root, a file
# that reaches whatever device it names (a disk's blocks, the kernel's log) however the directory is confined.
_MAKE_DEVICES = _MAKE_CHAR | _MAKE_BLOCK

# The character devices a worker may write: the null and random devices, and a GPU's device files (NVIDIA's
# /dev/nvidia*, /dev/nvidia-caps/*; AMD's /dev/kfd and /dev/dri render nodes). Not terminals, whose input a process
# may fill and whose screen it may write on (red team 11 typed a command into the instructor's shell), nor the
# kernel's log, memory or input devices: every device is shut unless named here.
_WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/kfd")
_WRITABLE_DEVICE_PREFIXES = ("/dev/nvidia", "/dev/dri/renderD")

# Capabilities a worker or replayer run by root keeps (include/uapi/linux/capability.h): the ones that let root
# read and write files whatever their modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER: a grader run with sudo
# reads a virtual environment in a home folder others may not enter, and Landlock bounds where it writes) and lock
# memory (CAP_IPC_LOCK: pinned host memory). Every other power of root goes: CAP_SYS_ADMIN (pushing input into
# another terminal with TIOCSTI, mounting), CAP_MKNOD, CAP_SYS_RAWIO, CAP_KILL, CAP_SETUID, CAP_SYS_PTRACE ...
_KEPT_CAPABILITIES = (1, 2, 3, 14)
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522


# System calls a worker is answered EPERM for, by a seccomp filter (Landlock does not judge them):
# - changing a file's metadata, its mode, owner, times and extended attributes: a worker run by root owns every file
#   root owns, and red team 12 took the execute bits off the grader's interpreter, so the class's next grading could
#   not start, and made a copy of `find` setuid root; with io_uring, which can set attributes too;
# - System V IPC, POSIX message queues and the kernel's keyrings: objects that outlive the process, which red teams 13
#   and 14 left behind after their gradings (1 GB of shared memory locked in RAM; every one of the machine's 256
#   message queues), where no ending of processes reaches them;
# - `file_setattr` and the ioctls that set a file's flags or attributes (FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR: red team
#   14 set flags on a file outside the worker's directories), and TIOCSTI, which pushes input into a terminal;
# - every system call of another architecture's table (x32, i386, 32-bit ARM), which a filter on numbers would not see.
# Numbers from arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h.
_REFUSED_SYSCALLS = {
    0xC000003E: (  # AUDIT_ARCH_X86_64
        90, 91, 92, 93, 94, 132, 188, 189, 190, 197, 198, 199, 235, 260, 261, 268, 280, 425, 452, 463, 466,
        # chmod fchmod chown fchown lchown utime setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr
        # utimes fchownat futimesat fchmodat utimensat io_uring_setup fchmodat2 setxattrat removexattrat
        29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220, 248, 249, 250,
        # shmget shmat shmctl semget semop semctl shmdt msgget msgsnd msgrcv msgctl semtimedop add_key request_key
        # keyctl
        240, 469,  # mq_open file_setattr
    ),
    0xC00000B7: (  # AUDIT_ARCH_AARCH64
        5, 6, 7, 14, 15, 16, 52, 53, 54, 55, 88, 425, 452, 463, 466,
        # setxattr lsetxattr fsetxattr removexattr lremovexattr fremovexattr fchmod fchmodat fchownat fchown utimensat
        # io_uring_setup fchmodat2 setxattrat removexattrat
        186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 217, 218, 219,
        # msgget msgctl msgrcv msgsnd semget semctl semtimedop semop shmget shmctl shmat shmdt add_key request_key
        # keyctl
        180, 469,  # mq_open file_setattr
    ),
}
_IOCTL = {0xC000003E: 16, 0xC00000B7: 29}  # ioctl's number in each table
# FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR, TIOCSTI: compared with the low 32 bits of ioctl's request
_REFUSED_IOCTLS = (0x40086602, 0x40046602, 0x401C5820, 0x5412)
_X32_SYSCALL_BIT = 0x40000000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
# seccomp(2) itself, which prctl cannot ask for TSYNC: the filter given to every thread of the process at once
_SECCOMP = {0xC000003E: 317, 0xC00000B7: 277}
_SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC = 1, 1
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO, _EPERM = 0x7FFF0000, 0x00050000, 1
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _ScopedRulesetAttr(ctypes.Structure):  # ABI 6 and later
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class Confinement:
    """What `confine` set up: the process's directories, and whether the kernel enforces them."""

    root: str  # the submission's own directory: Triton's cache, dumps and overrides, and its temporary files
    temp: str
    enforced: str  # "Landlock ABI N", or why the kernel does not enforce it
    capabilities: str = ""  # what drop_capabilities did: "capabilities dropped", "no capabilities to drop", or why not
    syscalls: str = ""  # what refuse_system_calls did ("file metadata, ... refused"), or why not


def _syscall() -> ctypes._CFuncPtr | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    fn = libc.syscall
    fn.restype = ctypes.c_long
    return fn


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 where there is none (not Linux, too old, switched off, or refused by a
    container's seccomp filter)."""
    if not sys.platform.startswith("linux"):
        return 0
    syscall = _syscall()
    if syscall is None:
        return 0
    version = syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return int(version) if version > 0 else 0


def restrict_writes(writable: list[str], devices: list[str] = ()) -> str:
    """Allow this process, and every process it starts from now on, to create, change or remove files only beneath
    `writable` (directories that exist), never device nodes, and to write to the files `devices` (character devices:
    /dev/null, the GPU's), creating nothing beside them; to read files anywhere but in /dev, where it may read only
    `devices` and what lies beneath `writable` (no terminal: red team 11 found the instructor's by its number in
    /proc, and a worker could read the keys typed there while it graded); from Landlock ABI 6, to send signals only
    to processes of its own domain (a red team's worker killed another student's worker and replayer in a class's
    concurrent grading through pidfd_send_signal, which no audit hook sees). Irreversible. Returns "Landlock ABI N",
    or why it was not applied."""
    abi = landlock_abi()
    if abi < 1:
        return "no Landlock in this kernel"
    syscall = _syscall()
    assert syscall is not None
    handled = _READ_FILE | _WRITES_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    on_a_file = _READ_FILE | _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0)  # the rights a rule on a file may hold
    attr = _ScopedRulesetAttr(handled, 0, _SCOPE_SIGNAL) if abi >= 6 else _RulesetAttr(handled)
    ruleset = syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"Landlock refused a ruleset ({os.strerror(ctypes.get_errno())})"
    try:
        beneath = handled & ~_MAKE_DEVICES
        rules = [(os.path.realpath(p), beneath, os.O_DIRECTORY) for p in writable]
        rules += [(p, on_a_file, os.O_NOFOLLOW) for p in devices]
        rules += [(p, _READ_FILE, os.O_DIRECTORY) for p in readable_tops()]
        for path, rights, flags in rules:
            device = rights != beneath  # a device gone, or a top directory that is not one: nothing to grant
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC | flags)
            except OSError as exc:
                if device:  # a device gone since /dev was read stays unwritable; the confinement holds
                    continue
                return f"no Landlock: {path} cannot be opened ({exc.strerror})"
            try:
                rule = _PathBeneathAttr(rights, fd)
                if syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    if device:
                        continue
                    return f"Landlock refused a rule for {path} ({os.strerror(ctypes.get_errno())})"
            finally:
                os.close(fd)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"prctl(PR_SET_NO_NEW_PRIVS) failed ({os.strerror(ctypes.get_errno())})"
        if syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            return f"Landlock could not restrict the process ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    return f"Landlock ABI {abi}"


def readable_tops(root: str = "/") -> list[str]:
    """Every directory at the top of the file system but /dev, where a worker reads anything (Python, the libraries,
    the compilers, /proc, /sys); the directories they lead to, where they are links (/lib to /usr/lib)."""
    tops = set()
    for name in sorted(os.listdir(root)):
        path = os.path.realpath(os.path.join(root, name))
        dev = os.path.realpath("/dev")
        if path != dev and not path.startswith(dev + os.sep) and os.path.isdir(path):
            tops.add(path)
    return sorted(tops)


def writable_devices(top: str = "/dev") -> list[str]:
    """The character devices beneath `top` (not through links) that a worker may write: _WRITABLE_DEVICES and the
    GPU's files. Terminals, the kernel's log and everything else stay shut."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if path not in _WRITABLE_DEVICES and not path.startswith(_WRITABLE_DEVICE_PREFIXES):
                continue
            try:
                if stat.S_ISCHR(os.lstat(path).st_mode):
                    found.append(path)
            except OSError:
                continue
    return found


def drop_capabilities() -> str:
    """Give up every capability but _KEPT_CAPABILITIES, for good: for this process, and for every program it starts,
    root or not. Nothing to give up for a user who is not root. Returns what was done, or why not."""
    if not sys.platform.startswith("linux"):
        return "not Linux"
    libc = ctypes.CDLL(None, use_errno=True)
    kept = sum(1 << c for c in _KEPT_CAPABILITIES)
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return f"capget failed ({os.strerror(ctypes.get_errno())})"
    held = data[0].permitted | (data[1].permitted << 32)
    if held & ~kept == 0:
        return "no capabilities to drop"
    # The bounding set first (it needs CAP_SETPCAP, which the last step gives up): what a program started by root
    # may hold, so a compiler or a shell the submission starts gets no more than this process keeps.
    for cap in range(64):
        if not kept >> cap & 1 and libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    left = held & kept
    for i in range(2):
        word = left >> (32 * i) & 0xFFFFFFFF
        data[i].effective, data[i].permitted, data[i].inheritable = word, word, 0
    if libc.capset(ctypes.byref(header), data) != 0:
        return f"capset failed ({os.strerror(ctypes.get_errno())})"
    return "capabilities dropped"


def _native_arch() -> int | None:
    import platform

    return {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}.get(platform.machine())


def refuse_system_calls() -> str:
    """Answer EPERM to _REFUSED_SYSCALLS and _REFUSED_IOCTLS (file metadata and flags, System V IPC, message queues,
    keyrings, TIOCSTI) from this thread and every thread and process it starts, for good (a seccomp filter: it needs
    no_new_privs, set here). Returns what was done, or why not."""
    arch = _native_arch()
    if not sys.platform.startswith("linux") or arch is None:
        return "no system call filter on this system"
    # The program, with jumps to labels resolved below: the architecture, then ioctl's request, then the numbers.
    program: list[tuple[int, int | str, int | str, int]] = [
        (_BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_BPF_JEQ_K, 0, "deny", arch),  # another table (i386, x32's own arch value, arm32): refused outright
        (_BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (_BPF_JGE_K, "deny", 0, _X32_SYSCALL_BIT),  # x32's numbers on x86_64
        (_BPF_JEQ_K, 0, "numbers", _IOCTL[arch]),
        (_BPF_LD_W_ABS, 0, 0, 24),  # seccomp_data.args[1], its low 32 bits (little-endian): the request
        *[(_BPF_JEQ_K, "deny", 0, request) for request in _REFUSED_IOCTLS],
        (_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW),
        "numbers",
        *[(_BPF_JEQ_K, "deny", 0, nr) for nr in _REFUSED_SYSCALLS[arch]],
        (_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW),
        "deny",
        (_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | _EPERM),
    ]
    labels, ops = {}, []
    for op in program:
        if isinstance(op, str):
            labels[op] = len(ops)
        else:
            ops.append(op)
    program = [(code, *(labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)), k)
               for i, (code, jt, jf, k) in enumerate(ops)]
    filters = (_SockFilter * len(program))(*(_SockFilter(*op) for op in program))
    prog = _SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed ({os.strerror(ctypes.get_errno())})"
    syscall = _syscall()
    assert syscall is not None
    # Every thread of the process, not only this one (TSYNC); the kernel sets no_new_privs on each as it goes. A
    # positive answer names a thread that could not take it (one with a filter of its own): nothing was installed.
    done = syscall(ctypes.c_long(_SECCOMP[arch]), ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
                   ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(prog))
    if done < 0 and ctypes.get_errno() in (errno.ENOSYS, errno.EINVAL) and thread_count() == 1:
        # A kernel or an emulator without seccomp(2) or TSYNC: with one thread, prctl's filter binds as much
        done = libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0)
    if done != 0:
        why = f"thread {done} could not take it" if done > 0 else os.strerror(ctypes.get_errno())
        return f"no system call filter: seccomp refused it ({why})"
    return "file metadata, System V IPC, message queues and keyrings refused"


_RESTRICTED: dict[str, str] = {}  # what restrict_process did, once per process


def restrict_process() -> tuple[str, str]:
    """The parts of the confinement that CUDA starts under: every capability dropped but _KEPT_CAPABILITIES, and the
    system call filter, for every thread the process has and will have. Call it while the process has one thread
    (capabilities bind the thread that drops them and the threads it starts after), and on a GPU before CUDA starts:
    the driver's own threads, started with its context and never confined by Landlock (CUDA does not start under it,
    `results/h100/cuda_under_confinement.md`), then hold no more than the worker. Once per process; `confine` calls it
    where nothing did before. Returns what drop_capabilities and refuse_system_calls said."""
    if not _RESTRICTED:
        threads = thread_count()
        if threads > 1:
            raise RuntimeError(f"the process was about to give up its capabilities with {threads} threads running: "
                               "call restrict_process first")
        _RESTRICTED.update(capabilities=drop_capabilities(), syscalls=refuse_system_calls())
    return _RESTRICTED["capabilities"], _RESTRICTED["syscalls"]


def submission_key(submission_file: str) -> str:
    with open(submission_file, "rb") as f:
        return source_key(f.read())


def source_key(source: bytes | str) -> str:
    """The first 16 hex digits of the submission's SHA-256: its directories' name."""
    return hashlib.sha256(source.encode() if isinstance(source, str) else source).hexdigest()[:16]


def own_root(key: str, role: str = "worker") -> str:
    """<the parent of Triton's cache directory>/autograder-<role>/<key>."""
    from triton import knobs

    return os.path.join(os.path.dirname(os.path.realpath(knobs.cache.dir)), ROLE_DIRS[role], key)


def confine_worker(submission_file: str, gpu: bool = False) -> Confinement:
    """Give this worker its own Triton directories and temporary directory, then let it write nowhere else.

    Call it while the worker is its only Python thread (and on the CPU tier its only thread: `confine` refuses
    otherwise), before the submission is imported and after everything it needs from elsewhere is open: the CUDA
    context, Triton's driver utilities, the log, the grader's pipes (open files stay usable)."""
    return confine(submission_key(submission_file), "worker", gpu)


def confine_replayer(source: str, gpu: bool = False) -> Confinement:
    """The same for a replayer, keyed by the text the grader read. The replayer runs none of the submission's Python,
    but it runs Triton's code generator over the submission's kernels, and under the CPU interpreter their bodies as
    Python: if a body got past autograder/kernel_source.py's check, it would still write nowhere that is loaded
    later (the repository, site-packages, Triton's trusted cache, the grader's results)."""
    return confine(source_key(source), "replayer", gpu)


def thread_count() -> int:
    """The threads of this process (Linux; 1 where /proc cannot tell)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def confine(key: str, role: str, gpu: bool = False) -> Confinement:
    """Raises RuntimeError when the process has another Python thread, or on the CPU tier any other thread: Landlock,
    the capabilities and no_new_privs bind only the thread that sets them and the threads it starts later, so a thread
    started before would run unconfined, and a submission can make any Python thread run its code (red team 12 took
    over the worker's lifeline watcher, started before the confinement, and from it wrote into the grader's code). On
    a GPU, CUDA's context, and its native threads, come before Landlock (CUDA does not start under it: Error 304 on an
    H100, `results/provenance/cuda_under_confinement.py`), and after `restrict_process`, which must have run while the
    process had one thread."""
    import threading

    from triton import knobs

    threads = thread_count()
    if threading.active_count() > 1 or (threads > 1 and not (gpu and _RESTRICTED)):
        raise RuntimeError(f"the {role} was about to be confined with {threads} threads running: confine it first"
                           + (" (on a GPU, call restrict_process before CUDA starts)" if gpu else ""))
    capabilities, syscalls = restrict_process()

    root = own_root(key, role)
    dirs = {name: os.path.join(root, name) for name in ("cache", "dump", "override", "tmp", "inductor")}
    for path in dirs.values():
        os.makedirs(path, exist_ok=True)
    knobs.cache.dir, knobs.cache.dump_dir, knobs.cache.override_dir = dirs["cache"], dirs["dump"], dirs["override"]
    os.environ.update(TRITON_CACHE_DIR=dirs["cache"], TRITON_DUMP_DIR=dirs["dump"], TRITON_OVERRIDE_DIR=dirs["override"])
    os.environ.update(TMPDIR=dirs["tmp"], TEMP=dirs["tmp"], TMP=dirs["tmp"])  # the compilers Triton starts
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = dirs["inductor"]  # PyTorch's compile caches (torch.compile is off in a worker)
    tempfile.tempdir = dirs["tmp"]
    if os.environ.get("AUTOGRADER_NO_LANDLOCK") == "1":
        enforced = "switched off (AUTOGRADER_NO_LANDLOCK=1)"
    else:
        # A GPU may keep shared memory in /dev/shm (the confinement was first measured working with all of /dev);
        # nothing trusted loads from there. Elsewhere in /dev nothing may be created, on either tier.
        shared = ["/dev/shm"] if gpu and os.path.isdir("/dev/shm") else []
        enforced = restrict_writes([root, *shared], writable_devices())
    return Confinement(root=root, temp=dirs["tmp"], enforced=enforced, capabilities=capabilities, syscalls=syscalls)
