# Exploit: call registered course ops that are not this file's own: the course's solution, loaded from
# solutions/<slug>/kernels.py, whose public call goes through its ops (course::...), so no PyTorch op
# computes and none of this file's kernels runs. Defence: the recorder runs a course op's implementation
# under its watch (autograder/worker.py, _run_under): the launches it makes are seen, and they are
# kernels of another file.
from course.loader import load_kernels as _load_kernels

_OTHER = _load_kernels(SLUG, "solutions")  # noqa: F821  (given by the test)


def _cheat(honest, name):
    borrowed = getattr(_OTHER, name)

    def cheat(*args, **kwargs):
        return borrowed(*args, **kwargs)

    return cheat
