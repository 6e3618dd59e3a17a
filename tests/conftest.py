"""Shared fixtures. Without a GPU every Triton kernel here runs in the CPU interpreter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton
# An exercise check that does not pass raises. pytest collects tests/ (importing this file) before it runs
# anything, so the notebook kernels nbval starts for solutions/notebooks/ inherit it too, in `make test`;
# the student notebooks' test turns it off.
os.environ.setdefault("COURSE_STRICT_EXERCISES", "1")
os.environ.setdefault("AUTOGRADER_REPRODUCIBLE_REPLAYS", "1")  # replays follow SEED too (autograder.grade.Seeds)

REPO_ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = REPO_ROOT / "tests" / "submissions"
SEED = 20261121  # the repo's own tests are repeatable; real grading draws fresh seeds


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
