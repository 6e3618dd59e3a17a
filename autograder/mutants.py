"""Mutation testing of the grader: grade every mutant of a solution on the CPU tier, and say which survive.

A mutant (autograder/mutation.py) is the solution with one plausible bug. Each is written to a folder of
its own and graded by the real grader (its worker process, its inputs, its float64 reference, its judge),
case by case, stopping at the first case that fails: the mutant is then killed. One that passes every
CPU-tier case survives, and is either listed as equivalent, with the reason no input can tell it from the
solution (autograder/specs/equivalent_mutants.toml), or shows a gap that a new case must close.

The whole run takes hours on two cores, so it is resumable: every outcome is kept in
results/mutants/<slug>.json, and a later run grades again only the mutants whose code changed, those
whose killing case is gone, and the survivors when the cases changed. results/mutants/README.md is
the summary (score per assignment, the equivalents with their reasons, any live mutant).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import random
import shutil
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from autograder.grade import Limits, Seeds, _correctness  # the grader's own case loop, one case at a time
from autograder.mutation import OPERATORS, Mutant, mutants
from autograder.runner import Replayer, Worker, WorkerLost
from autograder.spec import Case, Part
from autograder.specs import SLUGS, load_spec

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS = REPO_ROOT / "results" / "mutants"
EQUIVALENTS = Path(__file__).resolve().parent / "specs" / "equivalent_mutants.toml"
CASE_TIMEOUT = 60.0  # s per case; the solutions take at most ~1.5 s on a CPU, so a mutant past this hangs
IMPORT_TIMEOUT = 120.0
DEFAULT_SEED = 20261121


@dataclass
class Outcome:
    id: str
    operator: str
    task: str
    line: int
    digest: str  # of the mutated source: an outcome is reused only for the same code
    status: str  # "killed" or "survived"
    case: str = ""  # "task case-name" of the case that killed it
    result: str = ""  # the grader's status for that case: failed, error, timeout, not_implemented
    message: str = ""  # the first line of the grader's message
    seconds: float = 0.0


def solution_source(slug: str) -> str:
    return (REPO_ROOT / "solutions" / slug / "kernels.py").read_text()


def load_equivalents(path: Path = EQUIVALENTS) -> dict[str, dict[str, str]]:
    """slug -> mutant id -> the reason it is equivalent to the solution (on the CPU tier, for the entries
    marked `gpu_tier = true`: wrong kernels only a GPU can tell apart, said so in the reason)."""
    data = tomllib.loads(path.read_text()) if path.exists() else {}
    out: dict[str, dict[str, str]] = {}
    for slug, entries in data.items():
        for entry in entries:
            reason = " ".join(entry["reason"].split())
            if entry.get("gpu_tier"):
                reason = "Equivalent on the CPU tier only. " + reason
            for mutant_id in entry["ids"]:
                out.setdefault(slug, {})[mutant_id] = reason
    return out


def cpu_cases(slug: str) -> list[tuple[Part, Case]]:
    spec = load_spec(slug)
    return [(part, case) for part in spec.parts for case in part.cases_for("cpu")]


def case_key(part: Part, case: Case) -> str:
    return f"{part.task} {case.name}"


def cases_fingerprint(slug: str) -> str:
    """Changes whenever a CPU case is added or removed, the solution's interpreter settings, or the spec, the
    checks or the worker change."""
    items = sorted(f"{case_key(p, c)} {p.tolerance(c.params)}" for p, c in cpu_cases(slug))
    # the CPU tier's launch settings decide what a case exercises (one tile per split, or two)
    table = REPO_ROOT / "solutions" / slug / "configs.json"
    if table.exists():
        items.append(json.dumps(json.loads(table.read_text()).get("gpus", {}).get("interpreter"), sort_keys=True))
    here = Path(__file__).resolve().parent
    for path in (here / "specs" / f"{slug}.py", here / "spec.py", here / "checking.py", here / "worker.py"):
        items.append(path.read_text())
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:16]


def _case_seed(seed: int, key: str) -> int:
    """One input seed per case, the same for every mutant, so that outcomes repeat."""
    return int.from_bytes(hashlib.sha256(f"{seed} {key}".encode()).digest()[:7], "big")


class CaseOrder:
    """The CPU cases, those that killed most mutants so far first: most mutants then die on the first case."""

    def __init__(self, slug: str) -> None:
        self.cases = cpu_cases(slug)
        self.kills: Counter[str] = Counter()

    def ordered(self, first: str = "") -> list[tuple[Part, Case]]:
        """The cases, `first` (the case that killed this mutant last time) before all, then by kills so far."""
        rank = {case_key(p, c): i for i, (p, c) in enumerate(self.cases)}
        return sorted(self.cases, key=lambda pc: (case_key(*pc) != first, -self.kills[case_key(*pc)], rank[case_key(*pc)]))


def grade_mutant(slug: str, source: str, mutant: Mutant, order: CaseOrder, seed: int = DEFAULT_SEED,
                 timeout: float = CASE_TIMEOUT, first: str = "") -> Outcome:
    """Grade one mutant with the grader's worker, case by case, until a case fails."""
    spec = load_spec(slug)
    device = torch.device("cpu")
    started = time.perf_counter()
    outcome = Outcome(mutant.id, mutant.operator, mutant.task, mutant.line, mutant.digest(source), "survived")
    folder = Path(tempfile.mkdtemp(prefix=f"mutant-{slug}-"))
    try:
        path = folder / slug / "kernels.py"
        path.parent.mkdir()
        mutated = mutant.apply(source)
        path.write_text(mutated)
        # The solution's own settings: without a configs.json beside it, a kernels.py reads the released one in
        # assignments/, stale until `python -m autograder release` (a run once graded mutants with old tiles)
        table = REPO_ROOT / "solutions" / slug / "configs.json"
        if table.exists():
            shutil.copy(table, path.parent / table.name)
        worker = Worker(slug, path, "cpu", import_timeout=IMPORT_TIMEOUT)
        replayer = Replayer(slug, path, mutated, "cpu")  # the grader judges the replay of each call too
        try:
            try:
                worker.start()
            except WorkerLost as lost:
                worker.import_error = f"kernels.py could not be imported. {lost}"
            for part, case in order.ordered(first):
                key = case_key(part, case)
                seeds = Seeds(_case_seed(seed, key), reproducible_replays=True)  # a kill must repeat
                result = _correctness(spec, part, [case], "cpu", worker, replayer, device, seeds, Limits(timeout),
                                      lambda s: None)[0]
                if result.status != "passed":
                    order.kills[key] += 1
                    outcome.status, outcome.case, outcome.result = "killed", key, result.status
                    outcome.message = (result.message.strip().splitlines() or [""])[0][:300]
                    break
        finally:
            worker.cleanup()
            replayer.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    outcome.seconds = round(time.perf_counter() - started, 2)
    return outcome


# --------------------------------------------------------------------------------------------------
# The store of outcomes: results/mutants/<slug>.json
# --------------------------------------------------------------------------------------------------


def store_path(slug: str, folder: Path = RESULTS) -> Path:
    return folder / f"{slug}.json"


def load_store(slug: str, folder: Path = RESULTS) -> dict:
    path = store_path(slug, folder)
    return json.loads(path.read_text()) if path.exists() else {"outcomes": []}


def reusable(old: dict | None, mutant: Mutant, digest: str, keys: set[str], same_cases: bool) -> bool:
    """Whether a stored outcome still holds: same code, and its killing case still graded (or, for a
    survivor, the very same cases)."""
    if old is None or old["digest"] != digest:
        return False
    return old["case"] in keys if old["status"] == "killed" else same_cases


def write_store(slug: str, outcomes: list[Outcome], fingerprint: str, folder: Path = RESULTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = store_path(slug, folder)
    data = {
        "slug": slug,
        "date": datetime.date.today().isoformat(),
        "solution_sha256": hashlib.sha256(solution_source(slug).encode()).hexdigest()[:16],
        "cases": fingerprint,
        "torch": torch.__version__,
        "outcomes": [asdict(o) for o in outcomes],
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


Progress = Callable[[str], None]


def check_solution_passes(slug: str, source: str, order: CaseOrder, seed: int, timeout: float) -> None:
    """Grade the unmutated solution the way every mutant is graded; raise if a case fails. A case that the
    solution itself fails here (a Triton version's interpreter, a machine's limits) would otherwise be
    counted as killing every mutant that reaches it."""
    itself = Mutant("(the solution itself)", "none", "", "", 0, "", "", 0, 0, (0, 0))
    outcome = grade_mutant(slug, source, itself, order, seed, timeout)
    if outcome.status == "killed":
        raise RuntimeError(
            f"The {slug} solution itself does not pass {outcome.case} on this machine ({outcome.result}: "
            f"{outcome.message}). Mutants graded here would be counted as killed by that case; grade the "
            f"solution (python -m autograder grade {slug} --solutions --device cpu) and fix what it reports first."
        )


def grader_digest() -> str:
    """A digest of the code every mutant's grading imports besides its kernels.py: course/ and autograder/."""
    h = hashlib.sha256()
    for path in sorted([*(REPO_ROOT / "course").rglob("*.py"), *(REPO_ROOT / "autograder").rglob("*.py")]):
        h.update(path.relative_to(REPO_ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def run(slug: str, only: list[Mutant] | None = None, seed: int = DEFAULT_SEED, jobs: int = 1,
        timeout: float = CASE_TIMEOUT, store: Path | None = RESULTS, progress: Progress = print) -> list[Outcome]:
    """Grade the mutants of one solution (all, or `only`), reusing the stored outcomes that still hold.

    With `store` None (a sample) every mutant is graded and nothing is written; the committed outcomes
    only say which case to try first. Otherwise the store is rewritten as the run goes, so an interrupted
    run resumes where it stopped.
    """
    source = solution_source(slug)
    chosen = only if only is not None else mutants(source)
    fingerprint = cases_fingerprint(slug)
    keys = {case_key(p, c) for p, c in cpu_cases(slug)}
    # a sample reads the committed run (never writes it) to try first the case that killed each mutant there
    stored = load_store(slug, store if store is not None else RESULTS)
    same_cases = stored.get("cases") == fingerprint
    old = {o["id"]: o for o in stored["outcomes"]}
    order = CaseOrder(slug)
    for o in stored["outcomes"]:
        if o["status"] == "killed":
            order.kills[o["case"]] += 1
    results: dict[str, Outcome] = {}
    todo = []
    for m in chosen:
        digest = m.digest(source)
        if store is not None and reusable(old.get(m.id), m, digest, keys, same_cases):
            results[m.id] = Outcome(**old[m.id])
        else:
            todo.append(m)
    progress(f"{slug}: {len(chosen)} mutants, {len(chosen) - len(todo)} outcomes reused, {len(todo)} to grade")
    before = grader_digest()
    if todo and store is not None:
        check_solution_passes(slug, source, order, seed, timeout)
    last_write = time.monotonic()

    def one(m: Mutant) -> Outcome:
        return grade_mutant(slug, source, m, order, seed, timeout, first=old.get(m.id, {}).get("case", ""))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # workers fork from the grader's zygote
        for i, outcome in enumerate(pool.map(one, todo), 1):
            results[outcome.id] = outcome
            where = f" by {outcome.case} ({outcome.result})" if outcome.status == "killed" else ""
            progress(f"  [{i}/{len(todo)}] {outcome.status}{where} {outcome.seconds:.1f}s  {outcome.id}")
            if store is not None and time.monotonic() - last_write > 30:
                write_store(slug, [results[m.id] for m in chosen if m.id in results], fingerprint, store)
                last_write = time.monotonic()
    outcomes = [results[m.id] for m in chosen]
    if store is not None:
        write_store(slug, outcomes, fingerprint, store)
    if todo and grader_digest() != before:
        # each mutant's worker imports course/ and autograder/ afresh: an edit made during the run (a file
        # saved half-way, say) can kill mutants that are not wrong; on 2026-11-25 one did, 63 of them
        raise RuntimeError(
            f"course/ or autograder/ changed while the {slug} mutants were graded, so outcomes graded meanwhile may "
            f"not be the grader's: take them out of {store_path(slug, store) if store else 'the run'} (or the whole "
            "file) and run again with the code left alone."
        )
    return outcomes


def sample(slugs: list[str], n: int, seed: int, equivalents: dict[str, dict[str, str]] | None = None) -> list[tuple[str, Mutant]]:
    """n mutants drawn at random (seeded) from the non-equivalent mutants of the given solutions."""
    equivalents = load_equivalents() if equivalents is None else equivalents
    pool = [(slug, m) for slug in slugs for m in mutants(solution_source(slug)) if m.id not in equivalents.get(slug, {})]
    return random.Random(seed).sample(pool, min(n, len(pool)))


# --------------------------------------------------------------------------------------------------
# The summary: results/mutants/README.md
# --------------------------------------------------------------------------------------------------


@dataclass
class Score:
    slug: str
    total: int
    killed: int
    equivalent: int
    live: list[str]  # surviving mutants not listed as equivalent
    killed_equivalents: list[str]  # listed as equivalent, yet killed: the list is wrong
    missing: int  # current mutants with no stored outcome

    @property
    def score(self) -> float:
        graded = self.total - self.equivalent
        return 100.0 * self.killed / graded if graded else 100.0


def score(slug: str, outcomes: list[dict], equivalents: dict[str, str]) -> Score:
    current = {m.id for m in mutants(solution_source(slug))}
    by_id = {o["id"]: o for o in outcomes if o["id"] in current}
    killed = [i for i, o in by_id.items() if o["status"] == "killed"]
    survived = [i for i, o in by_id.items() if o["status"] == "survived"]
    return Score(slug, len(current), len(killed), len([i for i in current if i in equivalents]),
                 [i for i in survived if i not in equivalents], [i for i in killed if i in equivalents],
                 len(current - set(by_id)))  # fmt: skip


def summary(slugs: list[str] = SLUGS, folder: Path = RESULTS) -> str:
    equivalents = load_equivalents()
    scores = [score(s, load_store(s, folder)["outcomes"], equivalents.get(s, {})) for s in slugs]
    lines = [
        "# Mutation testing of the grader",
        "",
        "Every mutant of a solution's graded regions (`python -m autograder mutants`, autograder/mutation.py) graded",
        "on the CPU tier by the real grader, stopping at the first failing case. A mutant is killed when a case",
        "fails; a survivor is either equivalent to the solution (listed below with the reason, from",
        "autograder/specs/equivalent_mutants.toml) or live: a wrong kernel the grader passes. The score is",
        "killed / (mutants - equivalent). Code that only a GPU runs (`# pragma: no cover`) is not mutated.",
        "",
        "| assignment | mutants | killed | equivalent | of which only a GPU tells | live | not graded yet | score |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    gpu_only = {s.slug: sum(r.startswith("Equivalent on the CPU tier only") for r in equivalents.get(s.slug, {}).values())
                for s in scores}  # fmt: skip
    for s in scores:
        lines.append(f"| {s.slug} | {s.total} | {s.killed} | {s.equivalent} | {gpu_only[s.slug]} | {len(s.live)} | "
                     f"{s.missing} | {s.score:.1f}% |")
    total = [sum(getattr(s, f) for s in scores) for f in ("total", "killed", "equivalent")]
    live = sum(len(s.live) for s in scores)
    missing = sum(s.missing for s in scores)
    overall = 100.0 * total[1] / (total[0] - total[2]) if total[0] > total[2] else 100.0
    lines.append(f"| **all** | {total[0]} | {total[1]} | {total[2]} | {sum(gpu_only.values())} | {live} | {missing} | "
                 f"{overall:.1f}% |")
    lines += ["", "Operators: " + "; ".join(f"`{k}`: {v}" for k, v in OPERATORS.items()) + ".", ""]
    for s in scores:
        store = load_store(s.slug, folder)
        if s.live or s.killed_equivalents:
            lines += [f"## {s.slug}: live mutants", ""]
            lines += [f"- `{i}`" for i in s.live]
            lines += [f"- listed as equivalent but killed: `{i}`" for i in s.killed_equivalents]
            lines.append("")
        eq = equivalents.get(s.slug, {})
        if eq:
            lines += [f"## {s.slug}: equivalent mutants", "", f"Graded {store.get('date', '?')}.", ""]
            lines += [f"- `{i}`: {reason}" for i, reason in eq.items()]
            lines.append("")
    return "\n".join(lines)


def write_summary(slugs: list[str] = SLUGS, folder: Path = RESULTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "README.md"
    path.write_text(summary(slugs, folder) + "\n")
    return path
