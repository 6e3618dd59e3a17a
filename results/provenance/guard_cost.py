"""What entering a compiled module 10 decode step costs the host: Dynamo's guards and frame, with the graph itself
replaced by its stored result, for PyTorch's block and for the course block (fused W4A16 projections, every course
kernel, TINY config, on the CPU). The course block twice: compiled with CheckedOnce.seen as it was until 2026-12-06
(the set of accepted signatures looked up while tracing, so Dynamo guards on its contents) and as it is now. Best of
15 interleaved runs of 1000 calls; then the guards of each, counted from TORCH_LOGS=guards in a subprocess.
    python results/provenance/guard_cost.py"""
import os
import re
import subprocess
import sys
import time

import torch

sys.path.insert(0, ".")
from course.env import DEVICE  # noqa: E402
from course.llama import (KERNELS, TINY, KVCache, block_forward, course_ops, fuse_projections,  # noqa: E402
                          load_course_kernels, quantized, random_weights, rotary_tables, torch_ops)
from course.validate import CheckedOnce  # noqa: E402

NOW = CheckedOnce.seen


def seen_before(self: CheckedOnce, key: tuple | None) -> bool:
    try:
        return key in self._accepted
    except TypeError:
        return False


def frozen(gm: torch.fx.GraphModule, example: list) -> object:
    outs = gm(*example)
    return lambda *args: outs


def build(course: bool, seen: object) -> object:
    kernels, _ = load_course_kernels(DEVICE, prefer="solutions")
    weights = random_weights(TINY, torch.float32, DEVICE, seed=3)
    rot = rotary_tables(TINY, 64, torch.float32, DEVICE)
    ops = course_ops(kernels, tuple(KERNELS)) if course else torch_ops()
    w = fuse_projections(quantized(weights, TINY.group_size) if course else weights)
    x = torch.randn(2, 13, TINY.hidden_size)
    cache = KVCache.empty(TINY, 2, 13, torch.float32, DEVICE)
    block_forward(x[:, :12], w, TINY, ops, rot, 0, cache)  # the prompt, eager
    CheckedOnce.seen = seen  # read by Dynamo while it traces the first call below
    step = torch.compile(lambda x: block_forward(x, w, TINY, ops, rot, 12, cache), fullgraph=True, backend=frozen)
    token = x[:, 12:].contiguous()
    step(token)
    CheckedOnce.seen = NOW
    return lambda: step(token)


VARIANTS = {"PyTorch": (False, NOW), "course, set looked up while tracing": (True, seen_before),
            "course, not looked up (now)": (True, NOW)}

if __name__ == "__main__":
    if len(sys.argv) > 1:  # the child: compile one variant with the guards logged
        course, seen = VARIANTS[sys.argv[1]]
        build(course, seen)
        sys.exit(0)
    torch._dynamo.config.cache_size_limit = 64
    calls = {name: build(*v) for name, v in VARIANTS.items()}
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(15):
        for name, call in calls.items():
            t0 = time.perf_counter()
            for _ in range(1000):
                call()
            best[name] = min(best[name], (time.perf_counter() - t0) / 1000 * 1e6)
    for name in calls:
        log = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True,
                             env={**os.environ, "TORCH_LOGS": "guards"}).stderr
        print(f"{name}: {best[name]:.1f} us a call, {len(re.findall(r'[+]- [A-Z_]+:', log))} guards")
