"""One grading spec per assignment, named by the assignment's slug."""

from __future__ import annotations

import importlib

from autograder.spec import Assignment

# In syllabus order; each slug has autograder/specs/<slug>.py, solutions/<slug>/ and assignments/<slug>/.
SLUGS: list[str] = ["rmsnorm"]


def load_spec(slug: str) -> Assignment:
    if slug not in SLUGS:
        raise KeyError(f"unknown assignment '{slug}': the course has {', '.join(SLUGS)}")
    return importlib.import_module(f"autograder.specs.{slug}").ASSIGNMENT
