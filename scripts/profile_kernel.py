"""Module 01's profilers on one course kernel: Nsight Compute (`ncu`, where installed) and Triton's proton.

    OUT=/some/dir python3 scripts/profile_kernel.py           (repository root, PYTHONPATH=.; STAGES=profile in gpu_run.sh)

Profiles the rmsnorm forward on a (16384, 4096) bf16 input twice: the course's solution, and
tests/submissions/rmsnorm/slow_spills.py (one warp holding two rows: it spills), so that the two reports
differ where a profiler should show it: DRAM throughput, occupancy and its limiter, registers, local-memory
traffic (spills), and the warps' stall reasons. Writes under $OUT:

    ncu_<which>.txt          `ncu` sections SpeedOfLight, LaunchStats, Occupancy, WarpStateStats,
                             MemoryWorkloadAnalysis of one launch (or why ncu did not run)
    ncu_<which>_local.txt    local-memory (spill) bytes loaded and stored, as ncu metrics
    proton_<which>.hatchet   proton's profile of 20 calls; proton_<which>.txt: its viewer's table
    profile_summary.txt      the commands run and what each returned

`--run WHICH` is the child ncu launches: it only runs the kernel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import course.env  # noqa: E402,F401  (before triton)
import torch  # noqa: E402

SHAPE = (16384, 4096)
WHICH = {
    "solution": REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py",
    "slow_spills": REPO_ROOT / "tests" / "submissions" / "rmsnorm" / "slow_spills.py",
}
KERNEL_NAMES = "regex:rmsnorm|_rows_kernel"  # the solution's forward kernel and the spilling one
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "MemoryWorkloadAnalysis")
LOCAL_METRICS = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"


def calls(which: str) -> tuple:
    from course.loader import load_module

    mod = load_module(WHICH[which], f"profiled_{which}")
    x = torch.randn(*SHAPE, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(SHAPE[1], device="cuda", dtype=torch.bfloat16)
    return mod.rmsnorm, x, w


def run_child(which: str, n: int = 5) -> None:
    fn, x, w = calls(which)
    for _ in range(n):
        fn(x, w)
    torch.cuda.synchronize()


def ncu(which: str, out: Path, summary: list[str]) -> None:
    tool = shutil.which("ncu")
    if tool is None:
        line = "ncu: not installed on this machine (command -v ncu finds nothing); the Nsight Compute part did not run."
        (out / f"ncu_{which}.txt").write_text(line + "\n")
        summary.append(line)
        return
    child = [sys.executable, str(Path(__file__).resolve()), "--run", which]
    # Skip the launches that compile and warm up; profile one steady-state launch.
    base = [tool, "--target-processes", "all", "--kernel-name", KERNEL_NAMES, "--launch-skip", "2", "--launch-count", "1"]
    for suffix, extra in (("", [a for s in SECTIONS for a in ("--section", s)]), ("_local", ["--metrics", LOCAL_METRICS])):
        cmd = base + extra + child
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        (out / f"ncu_{which}{suffix}.txt").write_text(f"$ {' '.join(cmd)}\n(exit {proc.returncode})\n{proc.stdout}\n{proc.stderr}")
        summary.append(f"ncu {which}{suffix}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


def proton(which: str, out: Path, summary: list[str]) -> None:
    try:
        import triton.profiler as proton_api
    except ImportError as exc:
        summary.append(f"proton: not available in this Triton ({exc})")
        return
    fn, x, w = calls(which)
    fn(x, w)  # compile outside the profile
    torch.cuda.synchronize()
    name = str(out / f"proton_{which}")
    try:
        proton_api.start(name, hook="triton")
    except TypeError:  # a proton without launch hooks
        proton_api.start(name)
    with proton_api.scope(f"rmsnorm {which} x20"):
        for _ in range(20):
            fn(x, w)
        torch.cuda.synchronize()
    proton_api.finalize()
    files = sorted(out.glob(f"proton_{which}*"))
    summary.append(f"proton {which}: wrote {[f.name for f in files]}")
    hatchet = next((f for f in files if f.suffix == ".hatchet"), None)
    if hatchet is not None:
        view = subprocess.run([sys.executable, "-m", "triton.profiler.viewer", "-m", "time/ms", str(hatchet)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        (out / f"proton_{which}.txt").write_text(f"(exit {view.returncode})\n{view.stdout}\n{view.stderr}")
        summary.append(f"proton viewer {which}: exit {view.returncode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", choices=sorted(WHICH), help="(the child ncu profiles) run this kernel and exit")
    args = parser.parse_args()
    if args.run:
        run_child(args.run)
        return
    out = Path(os.environ.get("OUT", "/tmp/profile_out"))
    out.mkdir(parents=True, exist_ok=True)
    summary = [f"{torch.cuda.get_device_name()}; torch {torch.__version__}; ncu at {shutil.which('ncu')}"]
    for which in WHICH:
        for step in (ncu, proton):
            try:
                step(which, out, summary)
            except Exception as exc:  # noqa: BLE001  (one profiler failing must not lose the other's output)
                summary.append(f"{step.__name__} {which}: FAILED {type(exc).__name__}: {exc}")
    (out / "profile_summary.txt").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
