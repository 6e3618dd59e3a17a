"""The grader against cheating: every cheat in tests/submissions/cheats/, wrapped around each
assignment's honest solution, fails with the sentence that names the defence that stopped it; the
honest solution and honest variants pass every defence.

To cover a new assignment, add one `Adaptor` line to ADAPTORS (its slug, one small CPU case, a small
shape for its first speed case, and a PyTorch function per API name). Each cheat is graded on that one
case (and, for the timing cheats, on the small speed case, timed on the CPU). The cheats whose defence
depends on the assignment's call and outputs, and every attack on the worker's records, run for every
assignment (about a second each here, the worker forked by the zygote); those whose defence lives
wholly in the worker run on the first assignment only.

On a GPU: AUTOGRADER_TEST_DEVICE=cuda grades the same small cases on the GPU, and
AUTOGRADER_CHEAT_REPORT=DIR writes what each cheat got there (the "cheats" stage of scripts/gpu_run.sh runs both).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder.checking import physical_floor
from autograder.grade import AssignmentResult, CaseResult, Peaks, Selection, grade_assignment, speed_verdict
from autograder.spec import SpeedCase
from autograder.specs import SLUGS, load_spec
from conftest import REPO_ROOT, SEED, SUBMISSIONS

CHEATS = SUBMISSIONS / "cheats"
REPS = 4  # timed calls per speed case in these tests: each checked, each on new inputs
DEVICE = os.environ.get("AUTOGRADER_TEST_DEVICE", "cpu")  # cuda: the same small cases, graded on the GPU
REPORT = os.environ.get("AUTOGRADER_CHEAT_REPORT", "")  # a folder: one line per cheat graded, for the record


@dataclass(frozen=True)
class Adaptor:
    """How the generic cheats reach one assignment."""

    slug: str
    case: str  # the name of one small CPU-tier case of `task`
    speed: dict = field(default_factory=dict)  # merged into its first speed case: a small float32 shape
    # Python source of a dict: API function name -> a PyTorch function with the same signature (what a
    # cheat computes the answer with).
    torch_impl: str = "{}"
    wrap: tuple[str, ...] = ()  # the API functions the cheats wrap (default: all; leave out e.g. a `prepare`)
    task: str = ""  # the part `case` belongs to, and whose speed case is timed (default: the first part)


# One line per assignment.
ADAPTORS = [
    Adaptor("rmsnorm", "(3x100) float32 eps=1e-06", {"shape": [5, 96], "dtype": "float32"},
            "{'rmsnorm': lambda x, weight, eps=1e-6: torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)}"),
    Adaptor("fusion", "(3x333) float32", {"shape": [4, 256], "dtype": "float32"},
            "{'gelu': lambda x: torch.nn.functional.gelu(x, approximate='tanh'), 'softmax': lambda x: torch.softmax(x, -1)}"),
    Adaptor("coalescing", "(33x17) float32", {"shape": [64, 96], "dtype": "float32"},
            "{'transpose': lambda x: x.t().contiguous()}"),
    Adaptor("tiling", "(33x17x45) float32", {"shape": [32, 32, 32], "dtype": "float32"},
            "{'matmul': lambda a, b: a @ b}"),
    Adaptor("rope", "(2x3x7x24) float32", {"shape": [1, 2, 16, 32], "dtype": "float32"},
            "{'rope': lambda x, cos, sin: torch.cat([x[..., :x.shape[-1] // 2] * cos - x[..., x.shape[-1] // 2:] * sin, "
            "x[..., x.shape[-1] // 2:] * cos + x[..., :x.shape[-1] // 2] * sin], -1)}"),
    Adaptor("swiglu", "(3x100) float32", {"shape": [4, 256], "dtype": "float32"},
            "{'swiglu': lambda gate, up: torch.nn.functional.silu(gate) * up}"),
    Adaptor("flash_attention", "(1x2x64x16) float32 causal=False", {"shape": [1, 2, 64, 16], "dtype": "float32"},
            "{'flash_attention': lambda q, k, v, causal=False, scale=None: torch.nn.functional.scaled_dot_product_attention("
            "q, k, v, is_causal=causal, scale=scale, enable_gqa=True)}"),
    Adaptor("quant_matmul", "float32 M=3 K=64 N=5", {"M": 2, "K": 64, "N": 16, "dtype": "float32"},
            "{'w8a16_matmul': lambda x, w, s: x @ (w.to(x.dtype) * s[:, None]).T}",
            wrap=("w8a16_matmul",), task="quant_matmul.w8a16"),
]  # fmt: skip
COVERED = [a for a in ADAPTORS if a.slug in SLUGS]
BY_SLUG = {a.slug: a for a in COVERED}


def test_every_assignment_has_an_adaptor() -> None:
    assert sorted(BY_SLUG) == sorted(SLUGS), "add an Adaptor line for each assignment in ADAPTORS"


# The sentence of the replay: the call's launches, replayed on new inputs, did not give the answer.
REPLAYED = "replayed by the grader on new inputs"

# cheat -> (when it cheats, the status its case gets, a phrase of the message).
# "case": the graded correctness call; "speed": the call recorded for timing, and the timed replays.
CHEAT_RESULTS = {
    "fallback_in_except": ("case", "failed", "computed with PyTorch"),
    "alias_input": ("case", "failed", "shares memory with the input"),
    "partial_write": ("case", "failed", "elements are NaN"),
    "edit_inputs": ("case", "failed", "changed its input"),
    "lazy_subclass": ("case", "failed", "a subclass of torch.Tensor"),
    "cache_by_shape": ("speed", "failed", "launched none of your Triton kernels"),
    "replay_after_warmup": ("speed", "failed", "is not reproduced"),  # "The output of timed call ... was wrong: ..."
    "branch_on_timing": ("speed", "failed", "is not reproduced"),
    # Attacks on the worker's records (issue 15): each switches them off, or forges them, and is stopped by
    # the replay in the grader's replayer, by a check of the tape as data, or by the audit hook.
    "frame_walk": ("case", "failed", REPLAYED),
    "traceback_frames": ("case", "failed", REPLAYED),
    "generator_frames": ("case", "failed", REPLAYED),
    "dispatch_mode_stack": ("case", "failed", REPLAYED),
    "function_globals": ("case", "failed", REPLAYED),
    "hook_closure": ("case", "failed", REPLAYED),
    "inspect_stack": ("case", "failed", REPLAYED),
    "traceback_walk_stack": ("case", "failed", REPLAYED),
    "profiler_hook": ("case", "error", "installed a profiler hook"),
    "reimport_worker": ("case", "failed", "computed with PyTorch"),
    "launcher_window": ("case", "failed", REPLAYED),
    "stale_buffer": ("case", "failed", REPLAYED),
    "jit_python_escape": ("case", "failed", "The grader does not run your kernel _escape_kernel"),
    "smuggled_values": ("case", "failed", REPLAYED),
    "forged_tape": ("case", "failed", REPLAYED),
    "forged_alias": ("case", "failed", "shares memory with the input"),
    "alias_set_in_place": ("case", "failed", REPLAYED),
    "borrowed_course_op": ("case", "failed", "not from your kernels.py"),
    # Their defences do not depend on what the assignment computes: graded on the first assignment only.
    "compile_reference": ("case", "failed", "computed with PyTorch"),
    "own_course_op": ("case", "failed", "computed with PyTorch"),
    "reenable_compile": ("case", "failed", "switched torch.compile back on"),
    "thread_compute": ("case", "error", "started a thread"),
    "process_through_a_library": ("case", "error", "started another process"),
    "move_into_place": ("case", "error", "moved a file"),
    "native_module": ("case", "error", "loaded native code"),
    "build_native_module": ("case", "error", "started another process"),
    "tensor_as_constexpr": ("case", "failed", "passes a Tensor to its constexpr parameter `X`"),
    "host_function_in_kernel": ("case", "failed", "it reads `tl.str_to_ty`"),
    "forged_op_overload": ("case", "failed", "computed with PyTorch (aten.unfold)"),
    "annotation_code": ("case", "failed", "its parameter `n_cols` is annotated with"),
    # Red team 4's, each written for the assignment where its cheat is an answer (ONE_ASSIGNMENT): a transpose by a
    # forged input layout, or by a composite op; the INT8 matmul timed on the baseline's dequantized weights.
    "forged_input_layout": ("case", "failed", "lays the input `x` out in memory otherwise than the grader gave it"),
    "composite_op_record": ("case", "failed", "never holds (aten.to.dtype"),
    # Red team 6's: a transpose by fill_.Tensor, element by element from 0-d views of the input.
    "fill_from_tensor": ("case", "failed", "computed with PyTorch (aten.fill_)"),
    "baseline_setup_input": ("speed", "failed", "names an input `_dense` the call was not given"),
    "disable_recorder": ("case", "failed", "switched off the grader's record of PyTorch ops"),
    "host_compute": ("case", "failed", "Tensor.numpy (reads tensor data into Python)"),
    "gc_tamper": ("case", "error", "searched the interpreter's objects with gc"),
    "sys_modules_tamper": ("case", "failed", "computed with PyTorch"),
    "patch_timers": ("case", "failed", "which the grader relies on"),
    "swap_code": ("case", "error", "replaced `__code__` of synchronize"),
    "forged_code_name": ("case", "error", "made code that claims to come from"),
    "library_write": ("case", "error", ".autograder_forged_by_a_submission' for writing"),
    "endless_loop": ("case", "timeout", "took longer than 3 s"),
    "huge_allocation": ("case", "error", "tried to allocate 4.0"),  # "4.0 TiB" on a CPU, "4.00 TiB" from CUDA
    "segfault": ("case", "error", "crashed with SIGSEGV"),
    "sys_exit": ("case", "error", "called sys.exit(0)"),
    "os_exit_in_timing": ("speed", "error", "exited with code 0"),
}
# Where an assignment's own rule stops a cheat before the generic defence sees it: the transpose
# assignment refuses every PyTorch copy, so the partial write (a copy of half the answer) never gets
# as far as the NaN check.
CAUGHT_EARLIER = {("coalescing", "partial_write"): "computed with PyTorch (aten.copy_)"}
# On a GPU some cheats fail earlier, with another sentence: a CUDA tensor has no .numpy(), and Triton's
# compiler refuses a kernel that calls a Python function before the replay ever sees it.
ON_A_GPU = {
    "host_compute": ("case", "error", "numpy"),
    "jit_python_escape": ("case", "error", "_compute_in_python"),  # Triton names the Python function it refuses
}
RECORD_ATTACKS = ["frame_walk", "traceback_frames", "generator_frames", "dispatch_mode_stack", "function_globals",
                  "hook_closure", "inspect_stack", "traceback_walk_stack", "profiler_hook", "reimport_worker",
                  "launcher_window", "stale_buffer", "jit_python_escape", "smuggled_values", "forged_tape",
                  "forged_alias", "alias_set_in_place"]  # fmt: skip
PER_ASSIGNMENT = ["fallback_in_except", "alias_input", "partial_write", "edit_inputs", "lazy_subclass",
                  "cache_by_shape", "replay_after_warmup", "branch_on_timing", "borrowed_course_op", *RECORD_ATTACKS]  # fmt: skip
# Cheats written for one assignment, whose answer they fake: graded on that one.
ONE_ASSIGNMENT = {"forged_input_layout": "coalescing", "composite_op_record": "coalescing", "fill_from_tensor": "coalescing",
                  "baseline_setup_input": "quant_matmul"}  # fmt: skip
MATRIX = [(a.slug, c) for a in COVERED for c in PER_ASSIGNMENT]
MATRIX += [(COVERED[0].slug, c) for c in CHEAT_RESULTS if c not in PER_ASSIGNMENT and c not in ONE_ASSIGNMENT] if COVERED else []
MATRIX += [(slug, c) for c, slug in ONE_ASSIGNMENT.items() if slug in BY_SLUG]


def cheat_source(slug: str, cheat: str) -> str:
    """The honest solution of `slug` with the cheat appended and wrapped around every API function."""
    adaptor = BY_SLUG[slug]
    api = list(adaptor.wrap or load_spec(slug).api)
    honest = (REPO_ROOT / "solutions" / slug / "kernels.py").read_text()
    header = (
        f"\n\n# ---- cheat {cheat!r}, appended by tests/test_integrity.py ----\n"
        f"import torch\nSLUG = {slug!r}\nAPI = {api!r}\nTORCH_IMPL = {adaptor.torch_impl}\n"
    )
    body = (CHEATS / f"{cheat}.py").read_text()
    footer = "\nfor _name in API:\n    globals()[_name] = _cheat(globals()[_name], _name)\n"
    return honest + header + body + footer


_cache: dict[tuple, AssignmentResult] = {}


def graded(slug: str, path: Path, speed: bool, timeout: float = 60.0) -> AssignmentResult:
    key = (slug, str(path), speed, timeout)
    if key not in _cache:
        adaptor = BY_SLUG[slug]
        task = adaptor.task or load_spec(slug).parts[0].task
        selection = Selection(tasks={task}, names={adaptor.case}, speed=speed, max_speed_cases=1 if speed else 0,
                              speed_params=adaptor.speed, case_tier="cpu")  # fmt: skip
        _cache[key] = grade_assignment(slug, path, DEVICE, seed=SEED, timeout=timeout, reps=REPS, selection=selection,
                                       import_timeout=120.0)  # fmt: skip
    return _cache[key]


def graded_cheat(slug: str, cheat: str, tmp_root: Path) -> AssignmentResult:
    path = tmp_root / slug / cheat / "kernels.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(cheat_source(slug, cheat))
    phase = CHEAT_RESULTS[cheat][0]
    return graded(slug, path, speed=phase == "speed", timeout=3.0 if cheat == "endless_loop" else 60.0)


@pytest.fixture(scope="session")
def cheat_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cheats")


def one(result: AssignmentResult, kind: str) -> CaseResult:
    found = [c for c in result.cases if c.kind == kind]
    assert len(found) == 1, [(c.name, c.kind, c.status) for c in result.cases]
    return found[0]


def test_every_cheat_file_is_in_the_table() -> None:
    on_disk = {p.stem for p in CHEATS.glob("*.py")}
    assert on_disk == set(CHEAT_RESULTS) | {"cache_by_content", "cache_by_data_ptr", "write_results"}


def _report(slug: str, cheat: str, case: CaseResult) -> None:
    """One line of the record a GPU run leaves (results/<gpu>/cheat_suite.txt is made from these)."""
    if not REPORT:
        return
    first = case.message.splitlines()[0] if case.message else ""
    with open(Path(REPORT) / f"cheat_suite.{os.getpid()}.tsv", "a") as f:
        f.write(f"{slug}\t{cheat}\t{case.kind}\t{case.status}\t{case.score:g}/{case.max_score:g}\t{first}\n")


@pytest.mark.parametrize(("slug", "cheat"), MATRIX)
def test_cheat_fails_with_the_sentence_that_names_its_defence(slug: str, cheat: str, cheat_root: Path) -> None:
    phase, status, phrase = (ON_A_GPU if DEVICE == "cuda" else {}).get(cheat, CHEAT_RESULTS[cheat])
    phrase = CAUGHT_EARLIER.get((slug, cheat), phrase)
    result = graded_cheat(slug, cheat, cheat_root)
    correctness = one(result, "correctness")
    if phase == "case":
        _report(slug, cheat, correctness)
        assert (correctness.status, correctness.score) == (status, 0.0), correctness
        assert phrase in correctness.message, correctness.message
        assert "Traceback" not in correctness.message
    else:
        timed = one(result, "speed")
        _report(slug, cheat, timed)
        assert correctness.status == "passed", correctness  # it behaves while it is being checked ...
        assert (timed.status, timed.score) == (status, 0.0), timed  # ... and is caught when it is timed
        assert phrase in timed.message, timed.message


def _timing_message_only(case: CaseResult) -> None:
    """A speed case judged on its times alone: no defence had anything to say about it."""
    assert case.status in ("passed", "failed") and case.extra, case
    assert case.message.split(" ")[1] == "us,", case.message  # "12345.6 us, 0.01x eager PyTorch ..."
    assert 0.0 <= case.extra["checked_error"] < 1.0, case.extra  # the checked timed outputs' error, of the tolerance


@pytest.mark.parametrize("slug", [a.slug for a in COVERED])
def test_the_honest_solution_passes_every_defence(slug: str) -> None:
    result = graded(slug, REPO_ROOT / "solutions" / slug / "kernels.py", speed=True)
    assert one(result, "correctness").status == "passed"
    _timing_message_only(one(result, "speed"))  # on the CPU it is slow, and says so, nothing more


@pytest.mark.parametrize("slug", [a.slug for a in COVERED[:1]])
def test_a_content_cache_never_hits_because_no_two_calls_share_inputs(slug: str, cheat_root: Path) -> None:
    path = cheat_root / slug / "cache_by_content" / "kernels.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cheat_source(slug, "cache_by_content"))
    result = graded(slug, path, speed=True)
    correctness = one(result, "correctness")
    if DEVICE == "cuda":  # GPU memory is out of the cache's reach: reading it takes a PyTorch copy or native code
        assert correctness.status == "error" and "native code" in correctness.message, correctness.message
        return
    assert correctness.status == "passed", correctness.message
    _timing_message_only(one(result, "speed"))  # every timed call launched its kernels: the cache never hit


@pytest.mark.parametrize("slug", [a.slug for a in COVERED[:1]])
def test_an_address_cache_is_caught_whenever_it_hits(slug: str, cheat_root: Path) -> None:
    """Whether a freed input's address comes back is up to the allocator (on a GPU it usually does):
    a hit is caught, and without one the cheat is just the honest solution, timed as such."""
    path = cheat_root / slug / "cache_by_data_ptr" / "kernels.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cheat_source(slug, "cache_by_data_ptr"))
    timed = one(graded(slug, path, speed=True), "speed")
    if "launched none" in timed.message or "The output of timed call" in timed.message:
        assert timed.score == 0.0
    else:
        _timing_message_only(timed)


# Honest variants of the RMSNorm forward, shaped nothing like the solution (one logs, warns, asserts and
# keeps a buffer across calls): each passes odd sizes and is timed without a word from any defence.
HONEST_RMSNORM = ["honest_autotuned", "honest_reversed_order", "honest_inplace_own_output", "honest_logging",
                  "correct_minimal"]  # fmt: skip


@pytest.mark.skipif("rmsnorm" not in SLUGS, reason="no rmsnorm spec")
@pytest.mark.parametrize("name", HONEST_RMSNORM)
def test_honest_rmsnorm_variants_pass_every_defence(name: str) -> None:
    selection = Selection(tasks={"rmsnorm.forward"}, names={"(3x100) float32 eps=1e-06", "(2x5x129) float32 eps=1e-05",
                          "(9x96) float32 eps=1e-05 scale=0.001"}, speed=True, max_speed_cases=1,
                          speed_params={"shape": [5, 300], "dtype": "float32"}, case_tier="cpu")  # fmt: skip
    result = grade_assignment("rmsnorm", SUBMISSIONS / "rmsnorm" / f"{name}.py", DEVICE, seed=SEED, timeout=120.0,
                              reps=REPS, selection=selection)  # fmt: skip
    cases = [c for c in result.cases if c.kind == "correctness"]
    assert len(cases) == 3 and all(c.status == "passed" for c in cases), [(c.name, c.message) for c in cases]
    _timing_message_only(one(result, "speed"))


# Red team 26: a scratch tensor made under another default dtype, inside the call and restored (honest), or with the
# default left changed from the file's import on (refused with a sentence that says what was done, not "patched").
DEFAULT_DTYPE = {
    "restored": ("    n = x.numel()\n    _gelu_kernel", "    previous = torch.get_default_dtype()\n"
                 "    torch.set_default_dtype(torch.float64)\n    try:\n        flag = torch.zeros(1)  # float64\n"
                 "    finally:\n        torch.set_default_dtype(previous)\n    n = x.numel()\n    _gelu_kernel"),
    "left changed": ("import triton\n", "import triton\n\ntorch.set_default_dtype(torch.float64)\n"),
}


@pytest.mark.parametrize("how", list(DEFAULT_DTYPE))
def test_a_default_dtype_changed_and_restored_passes_and_one_left_changed_says_so(how: str, tmp_path: Path) -> None:
    old, new = DEFAULT_DTYPE[how]
    source = (SUBMISSIONS / "fusion" / "correct_minimal.py").read_text()
    assert source.count(old) == 1, "correct_minimal.py changed: update this test's edit"
    path = tmp_path / "kernels.py"
    path.write_text(source.replace(old, new))
    selection = Selection(tasks={"fusion.gelu"}, max_cases=3)
    result = grade_assignment("fusion", path, "cpu", seed=SEED, timeout=120.0, selection=selection)
    cases = [c for c in result.cases if c.kind == "correctness"]
    assert len(cases) == 3
    if how == "restored":
        assert all(c.status == "passed" for c in cases), [(c.name, c.message) for c in cases]
    else:
        for c in cases:
            assert c.status != "passed" and "changed PyTorch's default dtype to torch.float64" in (c.message or ""), c
            assert "patch" not in (c.message or ""), c.message


@pytest.mark.skipif("rmsnorm" not in SLUGS, reason="no rmsnorm spec")
def test_fake_results_are_neither_printed_nor_written(cheat_root: Path, tmp_path: Path) -> None:
    slug = "rmsnorm"
    cheat = cheat_root / slug / "write_results" / "kernels.py"
    cheat.parent.mkdir(parents=True, exist_ok=True)
    cheat.write_text(cheat_source(slug, "write_results"))
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", slug, "--submission", str(cheat), "--device", "cpu",
         "--seed", str(SEED), "--json", str(out), "--skip-doctor", "--max-cases", "1"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "FORGED" not in proc.stdout + proc.stderr  # its prints went to the worker's log
    time.sleep(2.0)  # longer than the delayed writer it tried to leave behind would wait
    data = json.loads(out.read_text())
    assert data["score"] == 0
    messages = [t["output"] for t in data["tests"]]
    assert all(f"opened {str(out)!r} for writing" in m for m in messages), messages


@pytest.mark.skipif("rmsnorm" not in SLUGS or not sys.platform.startswith("linux"), reason="no rmsnorm spec; Linux only")
def test_a_process_left_behind_cannot_rewrite_the_results(tmp_path: Path) -> None:
    # Started through torch.multiprocessing in a new session, it outlives the worker and waits to rewrite the
    # results at full marks (it did, before the grader ended every process left before writing them).
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", "rmsnorm", "--submission",
         str(SUBMISSIONS / "rmsnorm" / "cheat_outlives_the_grading.py"), "--device", "cpu", "--seed", str(SEED),
         "--json", str(out), "--skip-doctor", "--max-cases", "1"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    time.sleep(3.0)  # the rewriter polls every 50 ms
    assert json.loads(out.read_text())["score"] == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_a_detached_grandchild_is_adopted_and_ended() -> None:
    # A child that double-forks a sleeper in a new session and exits: the sleeper becomes the process's child
    # (adopt_orphans), and end_children ends it.
    script = (
        "import os, sys, time\n"
        "from autograder.lifecycle import adopt_orphans, end_children, _children\n"
        "assert adopt_orphans()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(0.5)\n"
        "os.waitpid(-1, 0)\n"
        "left = _children()\n"
        "print(len(left), end_children(), _children())\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["1", "1", "[]"], (proc.stdout, proc.stderr)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_a_chain_of_sleepers_longer_than_any_count_of_passes_is_ended_whole() -> None:
    # Red team 10: a chain of 80 processes, each the parent of the next, in a session of its own. Ending children a
    # generation per pass (50 passes) left the last 30 running after the grading.
    script = (
        "import os, time\n"
        "from autograder.lifecycle import adopt_orphans, end_children, _process_table, _below\n"
        "assert adopt_orphans()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    for _ in range(80):\n"
        "        if os.fork():\n"
        "            time.sleep(120)\n"
        "            os._exit(0)\n"
        "    time.sleep(120)\n"
        "    os._exit(0)\n"
        "deadline = time.monotonic() + 30\n"
        "while len(_below(_process_table(), os.getpid())) < 81 and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "before = len(_below(_process_table(), os.getpid()))\n"
        "t0 = time.monotonic()\n"
        "ended = end_children()\n"
        "print(before, ended, len(_below(_process_table(), os.getpid())), round(time.monotonic() - t0, 1))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    before, ended, left, seconds = proc.stdout.split()
    assert (before, ended, left) == ("81", "81", "0"), (proc.stdout, proc.stderr)
    assert float(seconds) < 5.0


# --------------------------------------------------------------------------------------------------
# Defences tested without a worker
# --------------------------------------------------------------------------------------------------

SPEED = SpeedCase("t", {"shape": [1 << 20], "dtype": "bfloat16"}, 10, 8.0, lambda p: 4 << 20,
                  flops=lambda p: 10**12)  # fmt: skip
PEAKS = Peaks(copy_gbps=4000.0, matmul_tflops=700.0)


def test_a_time_below_the_bandwidth_floor_is_a_measurement_error() -> None:
    # 4 MiB moved in 0.5 us would be 8.4 TB/s: more than 1.5x the measured copy bandwidth.
    score, status, message, _ = speed_verdict(SPEED, SPEED.params, {"submission": [5e-4] * 5, "baseline": [1.0] * 5}, 4000.0, PEAKS)
    assert (score, status) == (0.0, "failed")
    assert "below the physical floor" in message and "measurement error" in message


def test_a_time_below_the_flop_floor_is_a_measurement_error() -> None:
    # 1 TFLOP in 1 ms would be 1000 TFLOP/s: more than 1.5x the measured matmul rate (bandwidth is fine).
    assert "1.5x the matmul rate" in physical_floor(1.0, 4 << 20, 10**12, 4000.0, 400.0)
    assert physical_floor(2.0, 4 << 20, 10**12, 4000.0, 700.0) == ""


def test_a_plausible_time_is_scored_as_usual() -> None:
    score, status, message, extra = speed_verdict(SPEED, SPEED.params, {"submission": [1.5] * 5, "baseline": [15.0] * 5}, 4000.0, PEAKS)
    assert (score, status) == (10.0, "passed") and extra["speedup"] == pytest.approx(10.0)


@pytest.mark.parametrize("ms", [0.0, -1.0, float("nan")])
def test_a_time_that_is_not_positive_is_refused(ms: float) -> None:
    assert "not positive" in physical_floor(ms, 1, None, 4000.0, 700.0)


def test_a_forged_reply_cannot_run_code_in_the_grader(tmp_path: Path) -> None:
    """Replies are decoded with torch.load(weights_only=True): a pickle that would run code is refused."""
    import pickle

    from autograder.runner import decode_reply

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple:
            return (Path.touch, (marker,))

    assert decode_reply(pickle.dumps({"status": "ok", "x": Payload()}, protocol=2)) is None
    assert not marker.exists()
    assert decode_reply(b"garbage") is None


def test_the_address_space_cap_refuses_a_huge_allocation_with_a_sentence() -> None:
    code = (
        "import torch\n"
        "from autograder.integrity import limit_host_memory, memory_problem\n"
        "cap = limit_host_memory(256 << 20)\n"
        "try:\n"
        "    torch.empty(1 << 30, dtype=torch.uint8)\n"  # 1 GiB, never touched: only the cap refuses it
        "    print('allocated')\n"
        "except BaseException as exc:\n"
        "    print(memory_problem(exc, cap))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert "Your code tried to allocate 1.0 GiB, more than the 256.0 MiB a graded call may use." in proc.stdout, proc


def test_a_launch_on_another_stream_is_counted() -> None:
    from autograder import worker

    watch = worker._Watch("/nowhere/kernels.py")
    watch.stream = 1

    def fn() -> None:
        pass

    fn.__code__ = fn.__code__.replace(co_filename="/nowhere/kernels.py")
    streams = iter([1, 2])
    watch.current_stream = lambda: next(streams)
    watch.saw_launch(fn)
    watch.saw_launch(fn)
    assert (watch.launches, watch.other_stream) == (2, 1)


def test_a_triton_kernel_from_another_file_is_refused() -> None:
    from autograder import worker

    watch = worker._Watch("/nowhere/kernels.py")

    def _borrowed_kernel() -> None:
        pass

    watch.saw_launch(_borrowed_kernel)  # defined in this test file, not in the submission
    assert watch.launches == 0
    assert watch.forbidden == ["the Triton kernel _borrowed_kernel from test_integrity.py, not from your kernels.py"]


def test_a_device_to_host_copy_is_refused() -> None:
    from autograder import worker

    class Fake:
        def __init__(self, device: str) -> None:
            self.device = type("D", (), {"type": device})()

    watch = worker._Watch("/nowhere/kernels.py")
    watch.saw_op("aten._to_copy.default", (Fake("cuda"),), Fake("cpu"))
    watch.saw_op("aten.copy_.default", (Fake("cuda"), Fake("cpu")), None)  # host to device: fine
    assert watch.forbidden == ["a copy from the GPU to the CPU (.cpu(), .to('cpu'), .tolist())"]


def test_a_library_write_for_the_submission_may_go_to_caches_and_temporary_files_only(tmp_path: Path) -> None:
    from autograder.integrity import Guard

    guard = Guard(str(tmp_path / "kernels.py"))
    venv_torch = str(tmp_path / "venv" / "torch") + os.sep  # a venv under the temporary directory, as in CI's clone
    guard._trusted, guard._write_dirs = (venv_torch,), (str(tmp_path) + os.sep, "/cache/triton" + os.sep)
    assert guard._writable(tmp_path / "scratch.bin") and guard._writable("/cache/triton/abc/kernel.cubin")
    assert guard._writable(str(tmp_path)) and guard._writable(3) and guard._writable(os.devnull)
    assert not guard._writable(venv_torch + "evil.py")  # a trusted file, even inside an allowed directory
    assert not guard._writable("/etc/results.json") and not guard._writable(os.path.expanduser("~/x.py"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
def test_a_grading_given_up_on_is_ended_with_everything_it_detached() -> None:
    # Red team 10: a batch's backstop killed only the grading process; what its submission had detached, adopted by
    # that process, went to init and kept running. end_tree ends the tree under it first, then it.
    script = (
        "import os, time\n"
        "from autograder.lifecycle import adopt_orphans\n"
        "assert adopt_orphans()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    for _ in range(20):\n"
        "        if os.fork():\n"
        "            time.sleep(120)\n"
        "            os._exit(0)\n"
        "    time.sleep(120)\n"
        "    os._exit(0)\n"
        "time.sleep(120)\n"
    )
    from autograder.lifecycle import _below, _process_table, end_tree

    grader = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 30
        while len(_below(_process_table(), grader.pid)) < 21 and time.monotonic() < deadline:
            time.sleep(0.05)
        under = set(_below(_process_table(), grader.pid))
        assert len(under) == 21
        assert end_tree(grader.pid) == 22
        grader.wait(10)
        time.sleep(0.5)
        table = _process_table()
        assert not [pid for pid in under if pid in table and table[pid][1] != b"Z"]
    finally:
        grader.kill()
