"""The speed rubric in units of the hardware: memory-bound cases on the fraction of the copy bandwidth measured
in the same run, compute-bound ones on the ratio to the library; calibrated on committed measurements."""

from __future__ import annotations

import json
import re

import pytest

from autograder.grade import Peaks, speed_verdict
from autograder.spec import COPY, LIBRARY, SpeedCase
from autograder.specs import SLUGS, load_spec
from conftest import REPO_ROOT

SPEED = [(slug, sc) for slug in SLUGS for sc in load_spec(slug).speed]
COPY_CASES = [(slug, sc) for slug, sc in SPEED if sc.measure == COPY]
# The copy bandwidths of a T4, an A100, an H100 and an H200, roughly: a fraction means the same on each.
COPY_GBPS = (250.0, 1500.0, 3000.0, 4300.0)
MARGIN = 0.10  # the reference solution's least margin over each full-points threshold in the committed grades


def _times_at(sc: SpeedCase, fraction: float, copy_gbps: float) -> dict[str, list[float]]:
    ms = sc.bytes_moved(sc.params) / (fraction * copy_gbps * 1e9) * 1e3
    return {"submission": [ms] * 7, "baseline": [ms] * 7}  # a baseline as fast: the ratio to it earns nothing


@pytest.mark.parametrize(("slug", "sc"), COPY_CASES, ids=[f"{s}-{sc.name}" for s, sc in COPY_CASES])
@pytest.mark.parametrize("copy_gbps", COPY_GBPS)
def test_a_kernel_at_90_percent_of_copy_bandwidth_earns_full_points_on_any_gpu(slug: str, sc: SpeedCase, copy_gbps: float) -> None:
    peaks = Peaks(copy_gbps=copy_gbps, matmul_tflops=1000.0)
    score, status, message, extra = speed_verdict(sc, sc.params, _times_at(sc, 0.90, copy_gbps), copy_gbps, peaks)
    assert (score, status) == (sc.points, "passed"), message
    assert extra["value"] == pytest.approx(0.90) and extra["speedup"] == pytest.approx(1.0)
    low, *_ = speed_verdict(sc, sc.params, _times_at(sc, sc.zero_at * 0.999, copy_gbps), copy_gbps, peaks)
    assert low == 0.0


def test_the_grade_records_what_a_margin_table_needs() -> None:
    slug, sc = COPY_CASES[0]
    _, _, _, extra = speed_verdict(sc, sc.params, _times_at(sc, 0.5, 3000.0), 3000.0, Peaks(3000.0, 1000.0))
    assert {"ms", "measure", "value", "target", "zero_at", "margin", "points", "reps", "spread", "speedup"} <= set(extra)
    assert extra["margin"] == pytest.approx(0.5 / sc.target - 1)


def test_library_cases_are_scored_on_the_ratio_to_the_library() -> None:
    library = [sc for _, sc in SPEED if sc.measure == LIBRARY]
    assert library and all(sc.baseline is not None or sc.baseline_name for sc in library)
    sc = library[0]
    times = {"submission": [1.0] * 5, "baseline": [sc.target] * 5}
    score, status, _, extra = speed_verdict(sc, sc.params, times, 0.0, Peaks(1e9, 1e9))
    assert (score, status, extra["value"]) == (sc.points, "passed", pytest.approx(sc.target))


def _committed_copy_fractions() -> dict[str, dict[str, float]]:
    """'slug · task · case' -> {GPU folder: the fraction of copy bandwidth the reference solution reached in that GPU's
    committed grade (results/<gpu>/grade_<slug>_gpu_tier.json)}."""
    found: dict[str, dict[str, float]] = {}
    for path in sorted((REPO_ROOT / "results").glob("*/grade_*_gpu_tier.json")):
        for t in json.loads(path.read_text())["tests"]:
            if "speed" in t["tags"] and (m := re.search(r"= (\d+)% of (?:the )?copy bandwidth", t["output"])):
                slug, _, case = t["name"].split(" · ")
                found.setdefault(f"{slug} · {case}", {})[path.parent.name] = int(m.group(1)) / 100
    return found


@pytest.mark.parametrize(("slug", "sc"), COPY_CASES, ids=[f"{s}-{sc.name}" for s, sc in COPY_CASES])
def test_the_reference_solution_clears_each_copy_threshold_with_a_margin(slug: str, sc: SpeedCase) -> None:
    by_gpu = _committed_copy_fractions().get(f"{slug} · {sc.name}")
    assert by_gpu, (f"{slug} {sc.name}: no GPU grade of it is committed; grade the solution on a GPU "
                    f"(scripts/gpu_run.sh, stage grade) and commit results/<gpu>/grade_{slug}_gpu_tier.json")
    for gpu, measured in by_gpu.items():
        assert measured >= sc.target * (1 + MARGIN), \
            f"{slug} {sc.name} on the {gpu}: {measured:.0%} of copy bandwidth, full points at {sc.target:.0%}"


def test_a_copy_threshold_above_90_percent_is_refused() -> None:
    with pytest.raises(ValueError, match="90%"):
        SpeedCase("t", {"shape": [1], "dtype": "bfloat16"}, 10, 0.95, lambda p: 1, zero_at=0.2, measure=COPY)


def test_grade_jsons_make_a_margin_table(tmp_path) -> None:
    import importlib.util

    from autograder.grade import AssignmentResult, CaseResult
    from autograder.report import gradescope_json

    spec = importlib.util.spec_from_file_location("stability", REPO_ROOT / "scripts" / "stability.py")
    stability = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stability)
    slug, sc = COPY_CASES[0]
    score, status, message, extra = speed_verdict(sc, sc.params, _times_at(sc, 0.88, 3000.0), 3000.0, Peaks(3000.0, 900.0))
    result = AssignmentResult(slug, "t", "gpu", [CaseResult(sc.task, sc.name, status, score, sc.points, message, kind="speed", extra=extra)])
    path = tmp_path / "grade.json"
    path.write_text(json.dumps(gradescope_json([result], "Graded on the GPU tier: a test")))
    row = stability.margins([path]).splitlines()[-1]
    assert f"| 88% copy | {sc.target:.0%} copy | {100 * (0.88 / sc.target - 1):+.0f}% |" in row and f"{sc.points:g}/{sc.points:g}" in row


def test_a_run_that_fails_a_speed_case_shows_in_its_stability_summary() -> None:
    """scripts/stability.py times only the runs that finished, but counts the points and statuses of every run: until
    2026-12-06 a run that failed (a wrong output in a timed call, no time) vanished from the summary, which then said
    "the same points every run" over the other four."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("stability", REPO_ROOT / "scripts" / "stability.py")
    stability = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stability)
    ok = [{"run": i, "status": "passed", "score": 5.0, "ms": 0.175, "value": 1.1, "spread": 0.01, "checked_error": e}
          for i, e in zip((1, 2, 3, 4), (0.2, 0.42, 0.3, 0.1))]  # fmt: skip
    failed = {"run": 5, "status": "failed", "score": 0.0, "ms": float("nan"), "value": float("nan"), "spread": float("nan")}
    s = stability.summarize(ok, 1.0, 0.5, 5.0, [*ok, failed])
    assert s["runs"] == 4 and s["speedup_min"] == 1.1
    assert s["scores"] == [5.0, 5.0, 5.0, 5.0, 0.0] and not s["same_points_every_run"]
    assert s["statuses"] == ["failed", "passed"] and s["failed_runs"] == [5]
    assert s["checked_error_max"] == 0.42
    row = stability.markdown({"summary": {"case": s}, "runs": 5, "meta": {"gpu": "g", "torch": "t", "triton": "tr", "date": "d"}})
    assert "| 42% | 5.00, 5.00, 5.00, 5.00, 0.00 (differ); run 5 failed" in row


def test_a_stability_summary_from_before_the_checked_error_shows_none() -> None:
    """Reports from before 2026-12-06 have no checked error: the summary and table say so ('-') instead of the
    largest of the runs that had one, or of a NaN that Python's max lets through only when it comes first."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("stability", REPO_ROOT / "scripts" / "stability.py")
    stability = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stability)
    runs = [{"run": 1, "status": "passed", "score": 5.0, "ms": 0.175, "value": 1.1, "spread": 0.01, "checked_error": 0.3},
            {"run": 2, "status": "passed", "score": 5.0, "ms": 0.176, "value": 1.1, "spread": 0.01}]  # fmt: skip
    s = stability.summarize(runs, 1.0, 0.5, 5.0)
    assert s["checked_error_max"] != s["checked_error_max"]  # NaN
    row = stability.markdown({"summary": {"case": s}, "runs": 2, "meta": {"gpu": "g", "torch": "t", "triton": "tr", "date": "d"}})
    assert "| +10% | - | 5.00, 5.00 |" in row


@pytest.mark.parametrize("name,folder", [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"),
                                         ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA L40S", "l40s")])
def test_stability_writes_to_the_results_folder_of_the_gpu_model(name: str, folder: str) -> None:
    """scripts/stability.py took the name's last word ("hbm3" on an H100) until 2026-12-06; it now names the folder
    as the bench does (autograder.bench.gpu_slug)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("stability", REPO_ROOT / "scripts" / "stability.py")
    stability = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stability)
    assert stability.gpu_slug(name) == folder


def test_a_message_that_looks_like_markup_is_printed_as_it_is() -> None:
    """A case's message may quote the submission's own exception: rich's markup in it stopped the local report (red
    team 6: `ValueError("[/bold] ...")`, and no --json was written)."""
    import io

    from rich.console import Console

    from autograder.grade import AssignmentResult, CaseResult
    from autograder.report import print_result

    case = CaseResult("rmsnorm.forward", "[bold](4x7)", "error", 0.0, 6.0, "ValueError: [/bold] closes [red]nothing")
    out = io.StringIO()
    print_result(Console(file=out, width=200), AssignmentResult("rmsnorm", "05 RMSNorm", "cpu", [case]))
    assert "ValueError: [/bold] closes [red]nothing" in out.getvalue() and "[bold](4x7)" in out.getvalue()


def test_a_repeated_message_points_to_the_row_that_said_it() -> None:
    """A message said before is not repeated; "(as above)" only where the row just above said it. On an H100 the
    backward's timeout row read "(as above)" under a row of TypeErrors, the timeout having been said in the forward's
    part (2026-12-07, misbehave_kernel_spin)."""
    import io

    from rich.console import Console

    from autograder.grade import AssignmentResult, CaseResult
    from autograder.report import print_result

    timeout = "Timed out: running (2x3x11) took longer than 6 s, so it was stopped."
    raised = "The call raised TypeError: no autograd history."
    cases = [
        CaseResult("rmsnorm.forward", "(2x3x11)", "timeout", 0.0, 2.0, timeout),
        CaseResult("rmsnorm.backward", "(4x7)", "error", 0.0, 1.0, raised, bonus=True),
        CaseResult("rmsnorm.backward", "(5x9)", "error", 0.0, 1.0, raised, bonus=True),
        CaseResult("rmsnorm.backward", "(2x3x11)", "timeout", 0.0, 1.0, timeout, bonus=True),
    ]
    out = io.StringIO()
    print_result(Console(file=out, width=250), AssignmentResult("rmsnorm", "05 RMSNorm", "cpu", cases))
    rows = [line for line in out.getvalue().splitlines() if "rmsnorm." in line]
    assert timeout in rows[0] and raised in rows[1]
    assert "(as above)" in rows[2]
    assert "(as for rmsnorm.forward (2x3x11))" in rows[3], rows[3]


def test_a_message_cannot_move_the_cursor_or_rewrite_the_report() -> None:
    """rich passes ESC through: an exception's `\x1b[1A\x1b[2K` moved up and erased the report's lines, and a forged
    total could be printed in their place. Control characters and bidirectional overrides are written out instead."""
    import io

    from rich.console import Console

    from autograder.grade import AssignmentResult, CaseResult
    from autograder.report import gradescope_json, print_result

    forged = "boom\x1b[1A\x1b[2K\rTotal: 60/60 points\x1b]0;title\x07 \u202edesrever"
    result = AssignmentResult("rmsnorm", "05 RMSNorm", "cpu", [CaseResult("rmsnorm.forward", "(4x7)", "error", 0.0, 6.0,
                                                                           forged)])
    out = io.StringIO()
    print_result(Console(file=out, width=250), result)
    shown = out.getvalue() + gradescope_json([result])["tests"][0]["output"]
    assert not any(ch in shown for ch in "\x1b\r\x07\u202e"), repr(shown)
    assert "boom\\x1b[1A\\x1b[2K\\x0dTotal: 60/60 points" in out.getvalue()


def test_a_message_of_a_million_lines_is_cut_and_printed_at_once() -> None:
    """A refusal can quote a name the submission chose: a qualname of a million lines took rich minutes to lay out in
    the report, after every time limit (red team 10). The report and results.json show its start and what was cut."""
    import io
    import time

    from rich.console import Console

    from autograder.grade import AssignmentResult, CaseResult
    from autograder.report import MESSAGE_LINES, clip, gradescope_json, print_result

    long = "replaced `__code__` of " + "ab\n" * 1_000_000
    case = CaseResult("rmsnorm.forward", "(4x7)", "error", 0.0, 6.0, long)
    result = AssignmentResult("rmsnorm", "05 RMSNorm", "cpu", [case])
    out = io.StringIO()
    t0 = time.perf_counter()
    print_result(Console(file=out, width=200), result)
    output = gradescope_json([result])["tests"][0]["output"]
    assert time.perf_counter() - t0 < 5.0
    assert output.count("\n") <= MESSAGE_LINES and "more characters not shown" in output
    assert "replaced `__code__` of" in out.getvalue() and "more characters not shown" in out.getvalue()
    assert clip("two\nlines") == "two\nlines"
