"""Which part of the worker's confinement stops CUDA from starting after it (Error 304 on an H100, 2026-12-07):
each part alone in a fresh interpreter, then torch.cuda's first allocation. `python results/provenance/cuda_under_confinement.py`"""
import os
import subprocess
import sys
import tempfile

CHILD = r'''
import os, stat, sys, tempfile
from autograder import sandbox
part = sys.argv[1]
d = tempfile.mkdtemp()
def all_char_devices():
    out = []
    for root, _, files in os.walk("/dev", followlinks=False):
        for f in files:
            p = os.path.join(root, f)
            try:
                if stat.S_ISCHR(os.lstat(p).st_mode): out.append(p)
            except OSError: pass
    return out
if part == "nnp":
    import ctypes; ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)
elif part == "seccomp":
    print(sandbox.refuse_system_calls())  # refuse_metadata_changes when run on 2026-12-07: the metadata calls only
elif part == "caps":
    print(sandbox.drop_capabilities())
elif part == "landlock_named":
    print(sandbox.restrict_writes([d, "/dev/shm"], sandbox.writable_devices()))
elif part == "landlock_all_devices":
    print(sandbox.restrict_writes([d, "/dev/shm"], all_char_devices()))
elif part == "landlock_named_tmp":
    print(sandbox.restrict_writes([d, "/dev/shm", "/tmp"], sandbox.writable_devices()))
import torch
try:
    torch.empty(1, device="cuda"); print("CUDA ok")
except Exception as exc:
    print("CUDA failed:", str(exc)[:160])
'''
for part in ["none", "nnp", "seccomp", "caps", "landlock_named", "landlock_all_devices", "landlock_named_tmp"]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}
    r = subprocess.run([sys.executable, "-c", CHILD, part], capture_output=True, text=True, env=env, timeout=120)
    print(f"{part:22s}", " | ".join(l for l in (r.stdout + r.stderr[-300:]).splitlines() if l.strip())[-300:], flush=True)
