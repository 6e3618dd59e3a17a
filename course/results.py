"""Benchmark results measured on a GPU and committed to results/, for readers who have no GPU.

Each file `results/<gpu>/<slug>.json` holds:
    meta: {gpu, torch, triton, cuda, date, copy_gbps, command}
    rows: [{pass, shape, dtype, impl, ms, gbps, pct_copy}, ...]
where `ms` is the median time of one call, `gbps` counts the bytes the operation must read and
write at least once, and `pct_copy` compares that with a device-to-device copy measured in the same run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"


def results_path(slug: str, gpu: str = "h200") -> Path:
    return RESULTS_DIR / gpu / f"{slug}.json"


def load_results(slug: str, gpu: str = "h200") -> dict[str, Any] | None:
    """The committed measurements for an assignment, or None when none have been committed yet."""
    path = results_path(slug, gpu)
    if not path.exists():
        return None
    return json.loads(path.read_text())


def rows(results: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    """The rows whose fields equal every keyword given, e.g. rows(r, impl="solution", dtype="bfloat16")."""
    out = []
    for row in results["rows"]:
        if all((list(row[k]) if isinstance(row[k], list) else row[k]) == v for k, v in match.items()):
            out.append(row)
    return out
