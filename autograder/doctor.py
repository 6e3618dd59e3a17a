"""Check the install: Python, PyTorch and Triton versions, the GPU if any, and one known kernel.

Run with `python -m autograder doctor`; grading runs it first. A problem gets a sentence that says
what to do, not a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from autograder.sandbox import landlock_abi

REPO_ROOT = Path(__file__).resolve().parent.parent
SETUP_HINT = "run `make grade` from the repository root: it creates .venv with the pinned versions and grades from it"


@dataclass
class Doctor:
    lines: list[tuple[bool, str]] = field(default_factory=list)
    problem: str = ""  # the first blocking problem, as a sentence; empty when grading can go on
    device: str = "cpu"

    def add(self, ok: bool, text: str) -> None:
        self.lines.append((ok, text))


def pinned_versions() -> dict[str, str]:
    """Package -> version pinned in pyproject.toml."""
    import tomllib

    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    pins = {}
    for dep in data["project"]["dependencies"] + data["project"]["optional-dependencies"]["dev"]:
        if "==" in dep:
            name, version = dep.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda was asked for, but PyTorch sees no CUDA GPU here: use --device cpu (or auto).")
    return requested


def run_doctor(requested_device: str = "auto", smoke_timeout: float = 180.0) -> Doctor:
    d = Doctor()
    if sys.version_info < (3, 11):
        d.problem = f"Python {sys.version.split()[0]} is too old (the course needs 3.11 or newer): {SETUP_HINT}."
        return d
    d.add(True, f"Python {sys.version.split()[0]} at {sys.executable}")
    try:
        import torch
    except ImportError:
        d.problem = f"PyTorch is not installed for {sys.executable}: {SETUP_HINT}."
        return d
    try:
        triton_version = metadata.version("triton")
    except metadata.PackageNotFoundError:
        d.problem = f"Triton is not installed for {sys.executable}: {SETUP_HINT}."
        return d
    pins = pinned_versions()
    for name, have in (("torch", torch.__version__), ("triton", triton_version)):
        want = pins.get(name, "")
        same = have.split("+")[0] == want
        note = "" if same else f" (the course pins {want}; a GPU image with its own versions is fine if the kernel check passes)"
        d.add(same, f"{name} {have}{note}")
    d.device = resolve_device(requested_device)
    if d.device == "cuda":
        props = torch.cuda.get_device_properties(0)
        d.add(True, f"GPU: {props.name} (compute capability {props.major}.{props.minor}); grading the GPU tier")
    else:
        d.add(True, "No GPU: kernels run in Triton's CPU interpreter; grading the CPU tier (float32, no speed)")
    abi = landlock_abi()
    if os.environ.get("AUTOGRADER_NO_LANDLOCK") == "1":
        d.add(True, "Workers' and replayers' writes: checked in Python only (AUTOGRADER_NO_LANDLOCK=1 switches Landlock off)")
    elif abi:
        d.add(True, f"Workers' and replayers' writes: confined to their own directories by the kernel (Landlock ABI {abi})")
    else:
        d.add(True, "Workers' and replayers' writes: checked in Python only (this kernel has no Landlock; docs/integrity.md)")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        d.add(True, "Grading as root: workers and replayers keep only root's powers over files (autograder/sandbox.py, "
              "drop_capabilities); a user of its own is safer still (docs/integrity.md)")
    env = dict(os.environ)
    if d.device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "course.smoke"], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
            timeout=smoke_timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        d.problem = f"A 1000-element vector add did not finish in {smoke_timeout:g} s: the Triton install looks broken; {SETUP_HINT}."
        return d
    out = proc.stdout.strip()
    if proc.returncode != 0 or not out.startswith("max_error="):
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        d.problem = f"Triton could not run a known kernel (vector add): {last}. {SETUP_HINT[0].upper() + SETUP_HINT[1:]}."
        return d
    err = float(out.split()[0].split("=")[1])
    if err > 1e-6:
        d.problem = f"Triton ran a vector add but got it wrong (max error {err:g}): the install is broken; {SETUP_HINT}."
        return d
    d.add(True, "Triton computed a known kernel (vector add) correctly")
    return d
