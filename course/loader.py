"""Load an assignment's kernels.py by path, so notebooks and tools never depend on the current directory."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import course.env  # noqa: F401  (the interpreter must be chosen before kernels.py imports triton)

REPO_ROOT = Path(__file__).resolve().parent.parent


def kernels_path(slug: str, source: str = "assignments") -> Path:
    """Path of `<source>/<slug>/kernels.py`; source is 'assignments' (yours) or 'solutions'."""
    return REPO_ROOT / source / slug / "kernels.py"


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """Import a Python file as a fresh module (each call re-reads the file, so edits show up)."""
    path = Path(path).resolve()
    name = name or f"kernels_{path.parent.name}_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}: is it a Python file?")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Triton resolves a kernel's globals through its module
    spec.loader.exec_module(module)
    return module


def load_kernels(slug: str, source: str = "assignments") -> ModuleType:
    """Your kernels for an assignment (or the reference solution with source='solutions')."""
    path = kernels_path(slug, source)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: is '{slug}' an assignment of this course?")
    return load_module(path, name=f"{source}_{slug}_kernels")
