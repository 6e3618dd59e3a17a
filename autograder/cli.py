"""Command line: python -m autograder {grade,release,hint,doctor,bench,batch,gradescope,tune,new,mutants,portability}."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from autograder.specs import SLUGS

REPO_ROOT = Path(__file__).resolve().parent.parent


def _console(stderr: bool = False) -> Console:
    """Rich output; piped into a file or CI log, lines are kept long instead of wrapped at 80 columns."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr) if stream.isatty() else Console(stderr=stderr, width=200, soft_wrap=False)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m autograder", description="Grade, release and benchmark the course's kernels.")
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="grade a submission (yours, in assignments/, by default)")
    g.add_argument("slugs", nargs="*", metavar="SLUG", help=f"assignments to grade (default: all; the course has {', '.join(SLUGS)})")
    src = g.add_mutually_exclusive_group()
    src.add_argument("--submission", type=Path, help="a folder shaped like assignments/ (SLUG/kernels.py), or one kernels.py")
    src.add_argument("--solutions", action="store_true", help="grade the reference solutions in solutions/")
    g.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="cpu: interpreter tier; cuda: GPU tier (default: cuda if there is a GPU)")
    g.add_argument("--json", type=Path, metavar="FILE", help="also write Gradescope's results.json here; a FILE "
                   "naming {slug} gets one file per assignment")
    g.add_argument("--jobs", type=int, metavar="N", help="gradings whose correctness cases run at once (default: one "
                   "per CPU core, as many as the GPU's memory holds; on a GPU, spare cores share an assignment's parts "
                   "among several gradings of it); speed cases are timed afterwards, one at a time")
    g.add_argument("--seed", type=int, help="fix the seeds of the inputs your call sees (for reproducing a run; grading draws fresh ones by default); the inputs of the grader's replays and timed calls stay secret")
    g.add_argument("--timeout", type=float, help="seconds allowed per case (default 120 on a CPU, 180 on a GPU); after a "
                   "case runs out of time the rest of its part is not run, and later cases get a quarter of it")
    g.add_argument("--reps", type=int, default=50, help="timed calls per speed case (GPU)")
    g.add_argument("--verbose", action="store_true", help="repeat every message in full")
    g.add_argument("--skip-doctor", action="store_true", help="skip the install check")
    g.add_argument("--max-cases", type=int, metavar="N", help="a quick check: only the first N cases of each part (not a full grade)")

    r = sub.add_parser("release", help="write assignments/ and notebooks/ from solutions/ (instructors)")
    r.add_argument("slugs", nargs="*", metavar="SLUG")
    r.add_argument("--check", action="store_true", help="only check that assignments/ and notebooks/ are what the release makes")

    h = sub.add_parser("hint", help="show the next hint for a task (each one used is recorded in your grade)")
    h.add_argument("task", metavar="TASK", help="a task ID from the stubs, e.g. rmsnorm.forward")
    h.add_argument("--level", type=int, help="the level to show (default: the next one you have not seen)")
    h.add_argument("--submission", type=Path, help="the assignment folder whose hints to read and record in (default assignments/<slug>/)")

    d = sub.add_parser("doctor", help="check the install and say where kernels run")
    d.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")

    b = sub.add_parser("bench", help="time the solutions against PyTorch on a GPU (instructors)")
    b.add_argument("slugs", nargs="*", metavar="SLUG")
    b.add_argument("--out", type=Path, help="folder for the JSON and markdown table (default results/<gpu>/)")
    b.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    b.add_argument("--replot", action="store_true", help="no GPU needed: redraw tables and plots from the JSON in --out")

    t = sub.add_parser("batch", help="grade a class: one submission per student, one slot per GPU (instructors)")
    t.add_argument("folder", type=Path, help="one folder, archive (.zip/.tar.gz) or kernels.py per student")
    t.add_argument("slugs", nargs="*", metavar="SLUG", help="assignments to grade (default: all)")
    t.add_argument("--out", type=Path, help="results, logs, scores.csv and leaderboard.md (default FOLDER_graded/)")
    t.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    t.add_argument("--jobs", type=int, help="submissions graded at once (default: one per visible GPU; 1 on a CPU)")
    t.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per submission (default 3600)")
    t.add_argument("--grade-arg", action="append", default=[], metavar="ARG", help="passed on to `grade`, e.g. --grade-arg=--reps=100")
    t.add_argument("--only-index", type=int, metavar="I", help="grade only the I-th submission in sorted order (a Slurm array task)")
    t.add_argument("--merge", action="store_true", help="grade nothing; write scores.csv and leaderboard.md from the results")
    t.add_argument("--slurm", action="store_true", help="write OUT/grade_array.sbatch (one array task per submission) and stop")

    z = sub.add_parser("gradescope", help="build the Gradescope autograder bundle (CPU tier) (instructors)")
    z.add_argument("slugs", nargs="*", metavar="SLUG", help="assignments the bundle grades (default: all)")
    z.add_argument("--out", type=Path, default=REPO_ROOT / "dist" / "gradescope_autograder.zip")

    u = sub.add_parser("tune", help="measure a solution's launch settings on this GPU and write its configs.json entry (instructors)")
    u.add_argument("slugs", nargs="+", metavar="SLUG")
    u.add_argument("--gpu-name", help="the table entry's name (default: this GPU's, as torch.cuda.get_device_name() says it)")
    u.add_argument("--smoke", action="store_true", help="a tiny space on tiny shapes under the CPU interpreter: checks the tuner, times nothing")
    u.add_argument("--out", type=Path, help="write the table here (a folder gets SLUG/configs.json) instead of solutions/SLUG/configs.json")
    u.add_argument("--reps", type=int, default=20, help="timed calls per candidate and call (GPU)")
    u.add_argument("--kernels", help="only these kernels of the table, comma-separated (the others keep their entries)")

    n = sub.add_parser("new", help="scaffold a new assignment: solution, table, spec, handout, tests, notebook (instructors)")
    n.add_argument("slug", metavar="SLUG", help="the new assignment's slug: lower-case letters, digits and underscores")

    m = sub.add_parser("mutants", help="mutation testing of the grader: grade one-bug variants of the solutions (instructors)")
    m.add_argument("slugs", nargs="*", metavar="SLUG", help="assignments whose solutions are mutated (default: all)")
    m.add_argument("--sample", type=int, metavar="N", help="grade N mutants drawn at random (not equivalent ones); "
                   "without it every mutant is graded and results/mutants/ is brought up to date")
    m.add_argument("--seed", type=int, default=20261121, help="seeds the sample and the inputs")
    m.add_argument("--json", type=Path, metavar="FILE", help="also write the outcomes here")
    m.add_argument("--jobs", type=int, default=1, help="mutants graded at once (one worker process each)")
    m.add_argument("--list", action="store_true", help="only list the mutants, grade nothing")

    o = sub.add_parser("portability", help="compile every solution kernel for every GPU architecture and check it fits (no GPU needed)")
    o.add_argument("slugs", nargs="*", metavar="SLUG", help="solutions to compile (default: all)")
    o.add_argument("--arch", type=int, action="append", help="only these architectures, e.g. 75 for sm_75 (default: 75 80 86 89 90 100 120)")
    o.add_argument("--pair", action="append", metavar="SLUG:ARCH", help="only these solutions on these architectures")
    o.add_argument("--workers", type=int, help="compilations at once (default: one per CPU core)")
    o.add_argument("--largest", action="store_true", help="quick: only each kernel's largest launches per architecture")
    o.add_argument("--json", type=Path, metavar="FILE", help="also write every compilation's numbers here")
    return p


def _unknown_slugs(slugs: list[str]) -> str:
    """A sentence naming the slugs the course does not have, or ''."""
    unknown = [s for s in slugs if s not in SLUGS]
    return f"Unknown assignment {', '.join(unknown)}: the course has {', '.join(SLUGS)}." if unknown else ""


def _submission_files(args: argparse.Namespace, console: Console) -> dict[str, Path] | None:
    """slug -> kernels.py to grade, or None after explaining what is wrong with the arguments."""
    if problem := _unknown_slugs(args.slugs):
        console.print(problem)
        return None
    slugs = args.slugs or SLUGS
    if args.solutions:
        return {s: REPO_ROOT / "solutions" / s / "kernels.py" for s in slugs}
    if args.submission is None:
        return {s: REPO_ROOT / "assignments" / s / "kernels.py" for s in slugs}
    path = args.submission.resolve()
    if path.is_file():
        if len(args.slugs) == 1:
            return {args.slugs[0]: path}
        if not args.slugs and path.parent.name in SLUGS:
            return {path.parent.name: path}
        console.print(f"Name the assignment that {path.name} is for, e.g. `python -m autograder grade rmsnorm --submission {args.submission}`.")
        return None
    if not path.is_dir():
        console.print(f"There is no file or folder {args.submission}: pass a folder shaped like assignments/, or a kernels.py.")
        return None
    if (path / "kernels.py").exists() and len(args.slugs) == 1:
        return {args.slugs[0]: path / "kernels.py"}
    found = {s: path / s / "kernels.py" for s in slugs if (path / s / "kernels.py").exists() or args.slugs}
    if not found:
        console.print(f"{args.submission} holds no SLUG/kernels.py for {', '.join(slugs)}: lay it out like assignments/.")
        return None
    return found


def hints_used(files: dict[str, Path]) -> dict[str, list[int]]:
    """task -> hint levels recorded beside each graded kernels.py."""
    from autograder.hints import used

    found: dict[str, list[int]] = {}
    for path in files.values():
        found.update(used(path.parent))
    return found


def cmd_grade(args: argparse.Namespace) -> int:
    from autograder.concurrent import Phases, grade_assignments, jobs_for
    from autograder.doctor import resolve_device, run_doctor
    from autograder.grade import AssignmentResult
    from autograder.hints import describe, used
    from autograder.report import grading_header, print_result, write_json
    from autograder.runner import end_every_child, guard_the_grader

    console = _console()
    err = _console(stderr=True)
    files = _submission_files(args, console)
    if files is None:
        return 2
    if args.skip_doctor:
        device = resolve_device(args.device)
    else:
        doc = run_doctor(args.device)
        if doc.problem:
            console.print(f"[red]The install check failed.[/red] {doc.problem}")
            return 2
        device = doc.device
    where = "GPU tier (float32, float16, bfloat16; speed graded)" if device == "cuda" else "CPU tier (Triton interpreter, float32; speed not graded)"
    header = grading_header(device, list(files))
    from autograder.grade import Selection

    selection = Selection(max_cases=args.max_cases)
    console.print(f"Grading {', '.join(files)} on the {where}.\n{header}\n", highlight=False, markup=False)

    def progress(slug: str) -> Callable[[str], None]:
        return status.update if status is not None else lambda s: err.print(s, highlight=False)

    def done(result: AssignmentResult) -> None:
        print_result(console, result, args.verbose)
        if note := describe(used(files[result.slug].parent)):
            console.print(note + "\n", markup=False, highlight=False)  # task names from the student's own file

    phases = Phases()
    start = time.perf_counter()
    jobs = args.jobs or jobs_for(list(files), device)
    guard_the_grader()
    try:
        with err.status("grading") if err.is_terminal else contextlib.nullcontext() as status:
            results = grade_assignments(files, device, jobs, args.seed, args.timeout, args.reps, progress, selection,
                                        done, phases)  # fmt: skip
    except KeyboardInterrupt:
        end_every_child()
        err.print("Grading stopped: no grade was written.")
        return 130
    end_every_child()  # nothing a submission started may outlive the grading and rewrite what is written below
    total = sum(r.score(False) for r in results)
    most = sum(r.max_score(False) for r in results)
    bonus = sum(r.score(True) for r in results)
    console.print(f"[bold]Total: {total:.1f}/{most:.1f} points, bonus {bonus:.1f}.[/bold]")
    each = ", ".join(f"{slug} {s:.0f}" for slug, s in phases.per_speed_s.items())
    speed = f", speed {phases.speed_s:.1f} s: {each}" if phases.per_speed_s else ""
    err.print(f"Graded in {time.perf_counter() - start:.1f} s (correctness {phases.correctness_s:.1f} s{speed}; "
              f"{min(jobs, phases.gradings or len(files))} at once).", highlight=False)  # fmt: skip
    if args.json and "{slug}" in str(args.json):
        for result in results:
            path = Path(str(args.json).replace("{slug}", result.slug))
            hints = hints_used({result.slug: files[result.slug]})
            write_json(path, [result], grading_header(device, [result.slug]), hints)
            console.print(f"Wrote {path}.")
    elif args.json:
        write_json(args.json, results, header, hints_used(files))
        console.print(f"Wrote {args.json}.")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from autograder.release import release

    slugs = args.slugs or SLUGS
    differing = release(slugs, check=args.check)
    if args.check:
        if differing:
            print("assignments/ and notebooks/ are not what the release makes from solutions/; these differ:")
            print("\n".join(f"  {p}" for p in differing))
            print("Run `python -m autograder release` (or `make release`) and commit the result.")
            return 1
        print(f"assignments/ matches solutions/ for {', '.join(slugs)}, and notebooks/ matches solutions/notebooks/.")
        return 0
    print("\n".join(f"wrote {p}" for p in differing) or "assignments/ and notebooks/ were already up to date.")
    return 0


def cmd_hint(args: argparse.Namespace) -> int:
    from autograder.hints import LOG, HintError, show

    slug = args.task.split(".")[0]
    if problem := _unknown_slugs([slug]):
        print(f"{args.task} is not a task of the course. {problem}")
        return 2
    folder = args.submission or REPO_ROOT / "assignments" / slug
    try:
        text, level, total = show(folder, args.task, args.level)
    except HintError as exc:
        print(exc)
        return 2
    print(f"Hint {level} of {total} for {args.task}:\n")
    print(text)
    more = f" Run it again for hint {level + 1}." if level < total else " That is the last one."
    print(f"\n(Recorded in {folder / LOG}: your grade lists the hints you used.{more})")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from autograder.doctor import run_doctor

    console = _console()
    doc = run_doctor(args.device)
    for ok, text in doc.lines:
        console.print(f"[green]ok[/green]   {text}" if ok else f"[yellow]note[/yellow] {text}")
    if doc.problem:
        console.print(f"[red]problem[/red] {doc.problem}")
        return 2
    console.print("The install works: grade with `make grade` or `python -m autograder grade`.")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from autograder.bench import run_bench

    if args.replot:
        from autograder.plots import replot

        for path in replot(args.out or REPO_ROOT / "results" / "h200"):
            print(f"wrote {path} and {path.with_suffix('.md')}")
        return 0
    return run_bench(args.slugs or SLUGS, args.out, args.quick)


def cmd_batch(args: argparse.Namespace) -> int:
    from autograder.batch import BatchError, discover, run_batch, slurm_script, write_scores
    from autograder.doctor import resolve_device

    if problem := _unknown_slugs(args.slugs):
        print(problem)
        return 2
    slugs = args.slugs or SLUGS
    out = (args.out or args.folder.with_name(args.folder.name + "_graded")).resolve()
    folder = args.folder.resolve()
    try:
        if args.merge:
            csv_path, board = write_scores(out, [s.student for s in discover(folder)])
            print(f"Wrote {csv_path} and {board}.")
            return 0
        if args.slurm:
            subs = discover(folder)
            out.mkdir(parents=True, exist_ok=True)
            (out / "logs").mkdir(exist_ok=True)
            path = out / "grade_array.sbatch"
            path.write_text(slurm_script(folder, out, slugs, len(subs), args.grade_arg))
            print(f"Wrote {path}: submit it with `sbatch {path}`; its header says how to merge the results after.")
            return 0
        device = resolve_device(args.device)
        outcomes = run_batch(folder, out, slugs, device, args.jobs, args.only_index, args.grade_arg, args.timeout)
    except BatchError as exc:
        print(exc)
        return 2
    failed = [o for o in outcomes if o.status == "failed"]
    for o in failed:
        print(f"{o.student}: {o.message}")
    return 1 if failed else 0


def cmd_gradescope(args: argparse.Namespace) -> int:
    from autograder.gradescope import build_bundle

    if problem := _unknown_slugs(args.slugs):
        print(problem)
        return 2
    path = build_bundle(args.slugs or SLUGS, args.out)
    print(f"Wrote {path}: upload it as the assignment's autograder on Gradescope (base image Ubuntu 24.04).")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from autograder.tune import tune

    if problem := _unknown_slugs(args.slugs):
        print(problem)
        return 2
    for slug in args.slugs:
        out = args.out / slug / "configs.json" if args.out is not None and args.out.suffix != ".json" else args.out
        try:
            kernels = set(args.kernels.split(",")) if args.kernels else None
            tune(slug, args.gpu_name, args.smoke, out, args.reps, kernels=kernels)
        except RuntimeError as exc:
            print(exc)
            return 2
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from autograder.scaffold import next_steps, scaffold

    try:
        written = scaffold(args.slug)
    except ValueError as exc:
        print(exc)
        return 2
    print("\n".join(f"wrote {p.relative_to(REPO_ROOT)}" for p in written))
    print(next_steps(args.slug))
    return 0


def cmd_mutants(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from autograder import mutants as mt

    if problem := _unknown_slugs(args.slugs):
        print(problem)
        return 2
    slugs = args.slugs or SLUGS
    if args.list:
        for slug in slugs:
            for m in mt.mutants(mt.solution_source(slug)):
                print(f"{slug}:{m.line}  {m.id}")
        return 0
    outcomes: dict[str, list] = {}
    if args.sample is not None:
        for slug, mutant in mt.sample(slugs, args.sample, args.seed):
            outcomes.setdefault(slug, []).extend(mt.run(slug, [mutant], args.seed, 1, store=None))
    else:
        for slug in slugs:
            outcomes[slug] = mt.run(slug, seed=args.seed, jobs=args.jobs)
            print(f"wrote {mt.write_summary()}")
    live = {slug: [o.id for o in out if o.status == "survived"] for slug, out in outcomes.items()}
    equivalents = mt.load_equivalents()
    for slug, ids in live.items():
        killed = sum(o.status == "killed" for o in outcomes[slug])
        print(f"{slug}: {killed} of {len(outcomes[slug])} mutants killed")
        for i in ids:
            print(f"  survived{' (equivalent)' if i in equivalents.get(slug, {}) else ''}: {i}")
    if args.json:
        args.json.write_text(json.dumps({s: [asdict(o) for o in out] for s, out in outcomes.items()}, indent=1))
        print(f"Wrote {args.json}.")
    return 1 if any(i not in equivalents.get(s, {}) for s, ids in live.items() for i in ids) else 0


def cmd_portability(args: argparse.Namespace) -> int:
    from autograder.portability import run_in_child

    if problem := _unknown_slugs(args.slugs):
        print(problem)
        return 2
    argv = [*args.slugs]
    argv += [f"--arch={a}" for a in args.arch or []] + [f"--pair={p}" for p in args.pair or []]
    argv += [f"--workers={args.workers}"] if args.workers else []
    argv += ["--largest"] if args.largest else []
    argv += [f"--json={args.json.resolve()}"] if args.json else []
    return run_in_child(argv)


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("AUTOGRADER_DIE_WITH_PARENT") == "1":  # a batch's grading process ends with the batch
        from autograder.lifecycle import die_with_parent

        die_with_parent()
    args = _parser().parse_args(argv)
    commands = {"grade": cmd_grade, "release": cmd_release, "doctor": cmd_doctor, "bench": cmd_bench,
                "batch": cmd_batch, "gradescope": cmd_gradescope, "tune": cmd_tune, "new": cmd_new, "hint": cmd_hint, "mutants": cmd_mutants,
                "portability": cmd_portability}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
