# Exploit: compute the answer with PyTorch on another thread: the op recorder is per thread, so it
# would see nothing (on a GPU, timing would miss the work too). Defence: the worker refuses thread
# starts that the submission asks for, and reports any thread still running its code.
import threading as _threading


def _cheat(honest, name):
    def cheat(*args, **kwargs):
        honest(*args, **kwargs)
        box = {}
        worker = _threading.Thread(target=lambda: box.update(out=TORCH_IMPL[name](*args, **kwargs)))  # noqa: F821  (given by the test)
        worker.start()
        worker.join()
        return box["out"]

    return cheat
