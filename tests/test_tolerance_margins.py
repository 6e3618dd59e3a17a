"""scripts/tolerance_margins.py: the fraction of its tolerance a solution uses, measured the grader's way."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent


def _script():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("tolerance_margins", REPO_ROOT / "scripts" / "tolerance_margins.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cpu_tier_cases_of_a_solution_stay_well_inside_their_tolerance(tmp_path: Path) -> None:
    margins = _script()
    out = tmp_path / "margins.json"
    assert margins.main(["rmsnorm", "--inputs", "2", "--seed", "7", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["meta"]["base_seed"] == 7
    rows = report["rows"]
    assert {r["task"] for r in rows} == {"rmsnorm.forward", "rmsnorm.backward", "rmsnorm.linear"}
    assert all(len(r["errors"]) == 2 and 0.0 <= r["worst"] < margins.NEAR for r in rows), rows
    table = out.with_suffix(".md").read_text().splitlines()
    assert table[0].startswith("# How much of its tolerance") and any("| rmsnorm.linear |" in line for line in table)


def test_a_speed_call_is_checked_on_its_first_tensor_as_the_grader_checks_a_timed_call() -> None:
    """The speed branch, on a CPU-sized speed case: the solution inside its tolerance, a one-ulp-of-bf16 bias not."""
    margins = _script()
    from autograder.specs import load_spec
    from course.loader import load_kernels

    spec = load_spec("rmsnorm")
    module = load_kernels("rmsnorm", "solutions")
    sc = spec.speed[0]
    part, call = spec.part(sc.task), sc.call or spec.speed_call
    params = {**sc.params, "shape": [5, 300], "dtype": "float32"}
    cpu = torch.device("cpu")
    worst, rounding = margins.errors_of_one_call(module, part, call, params, 3, cpu)
    # No output of the dtype can be nearer the reference, element by element, than the reference rounded to it.
    assert 0.0 < rounding <= worst < margins.NEAR

    def biased(mod, inputs, p):  # noqa: ANN001, ANN202
        out = call(mod, inputs, p)
        return out + out.abs().mean() * 2.0**-7  # a bias of a bfloat16 ulp of the rows' size: far past float32's tolerance

    assert margins.errors_of_one_call(module, part, biased, params, 3, cpu)[0] > 1.0


def test_cases_the_grader_would_not_grade_on_a_gpu_are_left_out() -> None:
    """On a GPU without bfloat16 tensor cores (a T4, sm_75) the grader marks bfloat16 cases not gradeable; the
    margins skip them too instead of failing on them."""
    margins = _script()
    from autograder.specs import load_spec
    from course.device import Device

    spec = load_spec("rope")
    t4 = Device("Tesla T4", (7, 5), 40, 64 * 1024)
    h100 = Device("NVIDIA H100 80GB HBM3", (9, 0), 132, 227 * 1024)
    on_t4 = [p["dtype"] for *_, p in margins.graded_cases(spec, "gpu", True, t4)]
    on_h100 = [p["dtype"] for *_, p in margins.graded_cases(spec, "gpu", True, h100)]
    assert "bfloat16" in on_h100 and "bfloat16" not in on_t4
    assert len(on_t4) == len([d for d in on_h100 if d != "bfloat16"]) > 0
