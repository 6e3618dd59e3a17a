"""The largest reply, and the largest pickle in a reply, that the grader reads while it grades each solution: the
measurement behind autograder/runner.py's MAX_PICKLE_BYTES (a reply's structure, decoded in Python an opcode at a time).

    python results/provenance/reply_sizes.py DEVICE [MAX_CASES] [SLUG ...]   # DEVICE: cpu or cuda; MAX_CASES 0: all"""
import io
import json
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from autograder import runner  # noqa: E402
from autograder.grade import Selection, grade_assignment  # noqa: E402
from autograder.specs import SLUGS  # noqa: E402

device = sys.argv[1]
max_cases = int(sys.argv[2]) if len(sys.argv) > 2 else 0
slugs = sys.argv[3:] or list(SLUGS)
seen: list[tuple[int, int]] = []  # (pickle bytes, reply bytes)
decode = runner.decode_reply


def measured(data: bytes | bytearray) -> dict | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            structure = sum(m.file_size for m in archive.infolist() if "/data/" not in m.filename)
        seen.append((structure, len(data)))
    except (zipfile.BadZipFile, ValueError):
        pass
    return decode(data)


runner.decode_reply = measured
rows = []
for slug in slugs:
    first, t0 = len(seen), time.perf_counter()
    result = grade_assignment(slug, Path(f"solutions/{slug}/kernels.py"), device, seed=0, timeout=120,
                              selection=Selection(max_cases=max_cases or None))
    mine = seen[first:]
    rows.append({"slug": slug, "replies": len(mine), "largest_pickle": max(p for p, _ in mine),
                 "largest_reply": max(r for _, r in mine), "points": round(sum(c.score for c in result.cases), 2),
                 "max_points": round(sum(c.max_score for c in result.cases), 2),
                 "seconds": round(time.perf_counter() - t0, 1)})
    print(json.dumps(rows[-1]), flush=True)
replies, largest = sum(r["replies"] for r in rows), max(r["largest_pickle"] for r in rows)
print(f"largest pickle over {replies} replies: {largest:,} bytes (MAX_PICKLE_BYTES {runner.MAX_PICKLE_BYTES:,})")
