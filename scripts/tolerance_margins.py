"""How much of its tolerance each reference solution uses, case by case, over many inputs.

The grader passes an output whose every element is within the case's tolerance. This script measures what fraction
of that tolerance the solutions' outputs reach (the largest over the elements, as the grader's comparison reports
it), at the speed cases' shapes, where the sums are longest and the inputs largest, and with --all-cases at every
correctness case of the tier. A solution that comes near 1 will fail some gradings of the same code: on 2026-12-06
the INT4 decode's reference kernel failed one timed call in five gradings on an H100, at 0.84 of the tolerance in an
emulation, where the tolerance test had only checked 256 keys (lecture 08, section 10).

    python scripts/tolerance_margins.py                               # every speed case, 20 inputs each (GPU)
    python scripts/tolerance_margins.py flash_attention --inputs 50 --all-cases
    python scripts/tolerance_margins.py rmsnorm --inputs 3           # on a CPU: the CPU tier's correctness cases

Writes a JSON (GPU, versions, date, the seeds, every case's errors) and a markdown table beside it, worst first.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

from autograder.bench import gpu_slug  # noqa: E402
from autograder.spec import Assignment, Case, Params, Part  # noqa: E402
from autograder.specs import SLUGS, load_spec  # noqa: E402
from autograder.worker import _tensors_of  # noqa: E402  (how the worker takes a speed call's output)
from course.comparison import compare  # noqa: E402
from course.device import INTERPRETER, Device, cuda_device, not_gradeable  # noqa: E402
from course.loader import load_kernels  # noqa: E402
from course.results import markdown_table, run_meta  # noqa: E402

# Above this fraction of the tolerance the table marks a case, unless the output's own rounding to its dtype (which
# every kernel pays, and which does not grow with unlucky inputs) accounts for it.
NEAR = 0.5
AT_ROUNDING = 0.02  # a worst error within this of the rounded reference's is the rounding


def graded_cases(spec: Assignment, tier: str, all_cases: bool, gpu: Device = INTERPRETER
                 ) -> Iterator[tuple[str, Part, Callable, Params]]:
    """(kind, part, call, params) of the speed cases (GPU only) and, with all_cases or on the CPU, the tier's cases;
    none that the grader would not grade on this GPU (bfloat16 without its tensor cores)."""
    cases = []
    if tier == "gpu":
        cases += [("speed", spec.part(sc.task), sc.call or spec.speed_call, sc.params) for sc in spec.speed]
    if all_cases or tier == "cpu":
        cases += [("correctness", part, part.call, case.params) for part in spec.parts for case in part.cases_for(tier)]
    yield from (c for c in cases if not not_gradeable(gpu, c[3].get("dtype", "")))


def errors_of_one_call(module: ModuleType, part: Part, call: Callable, params: Params, seed: int,
                       device: torch.device) -> tuple[float, float]:
    """The largest error of one call's outputs on the inputs of `seed`, as a fraction of the case's tolerance; and
    the same for the float64 reference rounded to the outputs' dtypes, the part of it no kernel can avoid."""
    inputs = part.inputs(params, seed, device)
    if part.setup is not None:  # the submission's offline step, as the worker runs it
        inputs = {**inputs, **part.setup(module, inputs, params)}
    out = call(module, inputs, params)
    reference = part.reference(inputs, params)
    if isinstance(out, dict):  # a part's call: every named output the reference has
        pairs = [(name, out[name], ref) for name, ref in reference.items()]
    else:  # a speed call: its first tensor against the reference's first, as the grader checks a timed call
        pairs = [("output", _tensors_of(out)[0], next(iter(reference.values())))]
    tolerance = part.tolerance(params)
    worst = max(compare(name, got, ref, tolerance).max_error for name, got, ref in pairs)
    floor = max(compare(name, ref.to(got.dtype), ref, tolerance).max_error for name, got, ref in pairs)
    del inputs, out, reference, pairs
    if device.type == "cuda":
        torch.cuda.empty_cache()  # a float64 attention reference at the speed shape holds gigabytes
    return worst, floor


def measure(slugs: list[str], inputs: int, all_cases: bool, base_seed: int, device: torch.device,
            progress: Callable[[str], None] = print) -> list[dict]:
    """One row per case: the errors of `inputs` calls on new inputs, each as a fraction of the tolerance."""
    tier = "gpu" if device.type == "cuda" else "cpu"
    gpu = cuda_device(device.index or 0) if device.type == "cuda" else INTERPRETER
    rows = []
    for slug in slugs:
        module = load_kernels(slug, "solutions")
        spec = load_spec(slug)
        for kind, part, call, params in graded_cases(spec, tier, all_cases, gpu):
            name = Case(params, "gpu").name
            seeds = [base_seed + 1000 * len(rows) + i for i in range(inputs)]
            errors, floors = zip(*(errors_of_one_call(module, part, call, params, s, device) for s in seeds))
            rows.append({"slug": slug, "task": part.task, "case": name, "kind": kind, "seeds": seeds,
                         "errors": list(errors), "worst": max(errors), "median": statistics.median(errors),
                         "rounding": max(floors)})  # fmt: skip
            progress(f"{slug} {kind} {part.task} {name}: worst {max(errors):.3f} of the tolerance over {inputs} inputs")
    return rows


def markdown(rows: list[dict], meta: dict) -> str:
    """The cases worst first: which solutions come nearest their tolerance."""
    table = [[r["slug"], r["kind"], r["task"], r["case"], len(r["errors"]), f"{100 * r['worst']:.0f}%",
              f"{100 * r['median']:.0f}%", f"{100 * r['rounding']:.0f}%", _note(r)]
             for r in sorted(rows, key=lambda r: -r["worst"])]  # fmt: skip
    return "\n".join([
        f"# How much of its tolerance each solution uses ({meta['gpu']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']})",
        "", f"`{meta['command']}`", "",
        *markdown_table(["assignment", "kind", "task", "case", "inputs", "worst", "median", "rounding alone", "note"], table), "",
        "worst, median: over the calls, each call's largest error (over its elements and outputs) as a fraction of the",
        "case's tolerance, as the grader's comparison computes it; at 100% the grader fails the call. rounding alone: the",
        "same for the float64 reference rounded to the output's dtype, which no kernel avoids. note: 'near' where the",
        f"worst is above {NEAR:.0%} and more than the rounding; 'the rounding' where the rounding accounts for it.", "",
    ])  # fmt: skip


def _note(row: dict) -> str:
    if row["worst"] <= row["rounding"] + AT_ROUNDING:
        return "the rounding" if row["worst"] > NEAR else ""
    return "near" if row["worst"] > NEAR else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help=f"assignments (default: all of {', '.join(SLUGS)})")
    parser.add_argument("--inputs", type=int, default=20, help="calls on new inputs per case (default 20)")
    parser.add_argument("--all-cases", action="store_true", help="the tier's correctness cases too (always on a CPU)")
    parser.add_argument("--seed", type=int, help="first input seed (default: a new one, written to the JSON)")
    parser.add_argument("--out", type=Path, help="JSON to write (default results/<gpu>/tolerance_margins.json)")
    args = parser.parse_args(argv)
    slugs = args.slugs or SLUGS
    unknown = [s for s in slugs if s not in SLUGS]
    if unknown:
        print(f"Unknown assignment {', '.join(unknown)}: the course has {', '.join(SLUGS)}.")
        return 2
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    base_seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    command = "python scripts/tolerance_margins.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = {**run_meta(command), "base_seed": base_seed}
    rows = measure(slugs, args.inputs, args.all_cases, base_seed, device)
    folder = gpu_slug(torch.cuda.get_device_name()) if device.type == "cuda" else "cpu"
    out = args.out or REPO_ROOT / "results" / folder / "tolerance_margins.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "near": NEAR, "rows": rows}, indent=1) + "\n")
    table = markdown(rows, meta)
    out.with_suffix(".md").write_text(table)
    print(table)
    print(f"Wrote {out} and {out.with_suffix('.md')}.")
    return 1 if any(r["worst"] >= 1.0 for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
