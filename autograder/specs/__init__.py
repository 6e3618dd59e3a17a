"""One grading spec per assignment, named by the assignment's slug."""

from __future__ import annotations

import importlib
from pathlib import Path

from autograder.spec import Assignment

# The graded modules in syllabus order. Each has autograder/specs/<slug>.py, solutions/<slug>/ and
# assignments/<slug>/; a slug is offered once its spec exists. A new spec not yet in the syllabus is graded
# too, after the others (tests/test_layout.py asks for its place in SYLLABUS).
SYLLABUS: list[str] = ["fusion", "coalescing", "tiling", "rmsnorm", "rope", "swiglu", "flash_attention", "quant_matmul"]
_HERE = Path(__file__).parent
SLUGS: list[str] = [s for s in SYLLABUS if (_HERE / f"{s}.py").exists()] + sorted(
    p.stem for p in _HERE.glob("*.py") if not p.stem.startswith("_") and p.stem not in SYLLABUS
)


def load_spec(slug: str) -> Assignment:
    if slug not in SLUGS:
        raise KeyError(f"unknown assignment '{slug}': the course has {', '.join(SLUGS)}")
    return importlib.import_module(f"autograder.specs.{slug}").ASSIGNMENT
