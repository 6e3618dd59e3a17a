# Exploit: the grader takes its modules out of sys.modules, so `import autograder.worker` gives a fresh
# copy; load worker.py again from its file (importlib.util.spec_from_file_location), under the name the
# grader gave it, hoping to reach the records of the running worker, and switch them off while PyTorch
# computes. Defence: a module executed again is a new module with new globals: the running worker's
# records are not in it, and the op recorder still sees PyTorch compute (the replay would fail it too).
import importlib.util as _util
import os as _os

import course as _course


def _records():
    root = _os.path.dirname(_os.path.dirname(_os.path.abspath(_course.__file__)))
    spec = _util.spec_from_file_location("autograder.worker", _os.path.join(root, "autograder", "worker.py"))
    module = _util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        records = _records()
        watch, records["_WATCH"] = records["_WATCH"], None
        try:
            out = TORCH_IMPL[name](*args, **kwargs)  # noqa: F821  (given by the test)
        finally:
            records["_WATCH"] = watch
        honest(*args, **kwargs)
        return out

    return cheat
