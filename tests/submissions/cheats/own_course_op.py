# Exploit: register an op in a namespace that looks like the course's (course_cheat::...) whose
# implementation computes with PyTorch, hoping the recorder lets a course op through as one step.
# Defence: the recorder never lets a course op through whole: it runs the op's implementation under its
# watch, where the PyTorch ops it computes with are seen and refused.
import torch as _torch


def _cheat(honest, name):
    impl = TORCH_IMPL[name]  # noqa: F821  (given by the test)
    op = _torch.library.custom_op(f"course_cheat::{name}", mutates_args=(), schema="(Tensor x, Tensor w, float eps) -> Tensor")(
        lambda x, w, eps: impl(x, w, eps).clone()
    )

    def cheat(x, w, eps=1e-6):
        return op(x, w, float(eps))

    return cheat
