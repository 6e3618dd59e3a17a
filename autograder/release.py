"""Write assignments/ from solutions/: each solution region becomes a stub that raises NotImplementedError.

A region in solutions/<slug>/kernels.py looks like

        ### BEGIN SOLUTION rmsnorm.forward
        #> A hint line, kept in the stub as a comment.
        ...the solution...
        ### END SOLUTION

and is released, at the same indentation, as

        # TODO(rmsnorm.forward)
        #   A hint line, kept in the stub as a comment.
        raise NotImplementedError("TODO(rmsnorm.forward): not implemented yet; see README.md")

Every other file in solutions/<slug>/ (the handout README.md) is copied as it is, except the hint ladders
(hints.toml), which are released base64-encoded as hints.b64 (autograder/hints.py). The student notebooks
(notebooks/) are released from solutions/notebooks/ the same way (autograder/notebook_release.py).
"""

from __future__ import annotations

from pathlib import Path

from autograder import hints
from autograder.notebook_release import release_notebooks
from autograder.stubs import BEGIN, END, HINT, ReleaseError, make_stub  # noqa: F401  (re-exported)

REPO_ROOT = Path(__file__).resolve().parent.parent
# hints_used.json is the student's record of the hints they asked for (autograder/hints.py), never released.
SKIP = {"__pycache__", ".ipynb_checkpoints", "hints_used.json"}


def released_files(slug: str, root: Path = REPO_ROOT) -> dict[str, str]:
    """File name -> content of assignments/<slug>/ as the release makes it."""
    src = root / "solutions" / slug
    if not src.is_dir():
        raise ReleaseError(f"there is no solutions/{slug}/")
    files = {}
    for path in sorted(src.rglob("*")):
        if path.is_dir() or SKIP & set(path.relative_to(src).parts) or path.suffix == ".pyc":
            continue
        rel = str(path.relative_to(src))
        text = path.read_text()
        if rel == hints.SOURCE:  # the hint ladders, encoded so that they are not read by accident
            files[hints.RELEASED] = hints.encode(text, f"solutions/{slug}/{rel}")
        else:
            files[rel] = make_stub(text, f"solutions/{slug}/{rel}") if path.suffix == ".py" else text
    return files


def release(slugs: list[str], root: Path = REPO_ROOT, check: bool = False, notebooks: bool = True) -> list[str]:
    """Write assignments/ and notebooks/ (or, with check, only compare). Returns the paths that differ or were written."""

    differing = []
    for slug in slugs:
        dst = root / "assignments" / slug
        wanted = released_files(slug, root)
        present = {
            str(p.relative_to(dst))
            for p in dst.rglob("*")
            if p.is_file() and not SKIP & set(p.relative_to(dst).parts) and p.suffix != ".pyc"
        } if dst.exists() else set()
        for rel, text in wanted.items():
            path = dst / rel
            if not path.exists() or path.read_text() != text:
                differing.append(f"assignments/{slug}/{rel}")
                if not check:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text)
        for rel in sorted(present - set(wanted)):
            differing.append(f"assignments/{slug}/{rel}")
            if not check:
                (dst / rel).unlink()
    if notebooks:
        differing += release_notebooks(root, check)
    return differing
