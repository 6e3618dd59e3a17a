"""One grading spec per assignment, named by the assignment's slug."""

from __future__ import annotations

import importlib
from pathlib import Path

from autograder.spec import Assignment

# The graded modules in syllabus order. Each has autograder/specs/<slug>.py, solutions/<slug>/ and
# assignments/<slug>/; a slug is offered once its spec exists.
SYLLABUS: list[str] = ["fusion", "coalescing", "tiling", "rmsnorm", "rope", "swiglu", "flash_attention", "quant_matmul"]
SLUGS: list[str] = [s for s in SYLLABUS if (Path(__file__).parent / f"{s}.py").exists()]


def load_spec(slug: str) -> Assignment:
    if slug not in SLUGS:
        raise KeyError(f"unknown assignment '{slug}': the course has {', '.join(SLUGS)}")
    return importlib.import_module(f"autograder.specs.{slug}").ASSIGNMENT
