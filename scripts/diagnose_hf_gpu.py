"""Issue 21 on a GPU, in one go: the grader's "why slow" diagnosis, then the course's kernels inside a Hugging Face Llama.

    python scripts/diagnose_hf_gpu.py --out OUT [--parts diagnose,hf] [--layers 2]

1. diagnose: grades the first rmsnorm forward speed case of the solution and of
   tests/submissions/rmsnorm/slow_spills.py (one warp holding two rows: it spills) on this GPU, and checks
   that the slow one's report names the spills while the solution's reports its kernel and no spills.
2. hf (needs transformers, the [hf] extra; skipped with a sentence without it): a tiny random Llama,
   patched and not, compared on this GPU in float32 and bfloat16; then a few layers of Llama-3-8B's shape
   in bfloat16, compared, and timed patched against unpatched (SDPA): a prefill of 1 x 2048 tokens, and
   decode steps at batch 8 after a 2048-token prefill. Times are medians of CUDA-event timings after warm-up.

A GPU machine without transformers and without a network can take it from wheels carried with the tree:
`--wheels DIR` installs every wheel in DIR (no dependencies resolved, nothing downloaded) into a temporary
folder put on sys.path. Made here, for the GPU machine's Python (`python3 --version` there), e.g.:
    pip download transformers==5.23.0 --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_28_x86_64 -d hf_wheels
(about 30 MB; drop from DIR the wheels of packages the GPU image has already: numpy, packaging, pyyaml ...).

Writes OUT/diagnose_hf.json and OUT/diagnose_hf.txt (packed by the lead as one tarball if wanted), and prints a
short table last.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import statistics
import sys
import traceback
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import course.env  # noqa: E402,F401  (before triton)
import torch  # noqa: E402

LINES: list[str] = []


def say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def part_diagnose() -> dict[str, Any]:
    from autograder.grade import Selection, grade_assignment

    found: dict[str, Any] = {}
    for label, path in (("solution", REPO_ROOT / "solutions" / "rmsnorm" / "kernels.py"),
                        ("slow_spills", REPO_ROOT / "tests" / "submissions" / "rmsnorm" / "slow_spills.py")):  # fmt: skip
        selection = Selection(tasks={"rmsnorm.forward"}, max_cases=1, max_speed_cases=1)
        result = grade_assignment("rmsnorm", path, "cuda", selection=selection)
        speed = [c for c in result.cases if c.kind == "speed"]
        found[label] = [{"case": c.name, "status": c.status, "score": c.score, "message": c.message,
                         "kernels": c.extra.get("kernels")} for c in speed]  # fmt: skip
        for c in speed:
            say(f"[diagnose] {label} {c.name}: {c.status} {c.score:.2f}/{c.max_score:g}: {c.message}")
    found["cubin_vs_driver"] = _cubin_agrees_with_the_driver()
    say(f"[diagnose] the CPU path (cuobjdump on the cubin) against the driver: {found['cubin_vs_driver']}")
    slow = found["slow_spills"][0]["message"] if found["slow_spills"] else ""
    good = found["solution"][0]["message"] if found["solution"] else ""
    found["checks"] = {"slow_names_spills": "spills" in slow and "Kernel:" in slow,
                       "solution_has_kernel_facts": "Kernel:" in good and " 0 spilled" in good}  # fmt: skip
    say(f"[diagnose] checks: {found['checks']}")
    return found


def _cubin_agrees_with_the_driver() -> dict[str, Any]:
    """The spilling kernel launched here: its facts as the driver reports them (what the grader reads on a
    GPU) and as cuobjdump reads its cubin (what the CPU tests read); they must be the same."""
    from autograder.diagnose import facts_from_compiled, facts_from_cubin
    from course.loader import load_module

    mod = load_module(REPO_ROOT / "tests" / "submissions" / "rmsnorm" / "slow_spills.py", "slow_spills")
    x = torch.randn(16384, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    grid = (16384 // 2,)
    compiled = mod._rows_kernel[grid](x, w, y, 16384, 4096, 1e-6, ROWS=2, BLOCK_N=4096, num_warps=1)
    driver = facts_from_compiled("_rows_kernel", grid, compiled)
    cubin = facts_from_cubin("_rows_kernel", grid, compiled)
    return {"driver": driver.plain() if driver else None, "cubin": cubin.plain(), "same": driver == cubin}


def _median_ms(fn: Any, reps: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def part_hf(layers: int) -> dict[str, Any]:
    from course import hf_patch

    if not hf_patch.available():
        say(f"[hf] skipped: {hf_patch.missing_sentence()}")
        return {"skipped": hf_patch.missing_sentence()}
    from transformers import DynamicCache

    from course.llama import load_course_kernels

    dev = torch.device("cuda")
    kernels, _ = load_course_kernels(dev, prefer="solutions")
    out: dict[str, Any] = {"transformers": hf_patch.transformers.__version__, "layers": layers, "compare": {}}
    for dtype in (torch.float32, torch.bfloat16):
        r = hf_patch.compare_logits(kernels, hf_patch.tiny_config(2), dtype, dev, batch=2, seq=33, steps=4)
        out["compare"][f"tiny {dtype}"] = r
        say(f"[hf] tiny {dtype}: relative error {r['relative_error']:.2e}, same tokens {r['same_tokens']}, patched {r['patched']}")
    config = hf_patch.llama3_8b_config(layers)
    models = {"PyTorch (SDPA)": hf_patch.build_model(config, torch.bfloat16, dev)}
    models["course kernels"] = hf_patch.build_model(config, torch.bfloat16, dev)
    patched = hf_patch.patch(models["course kernels"], kernels)
    r = {"patched": patched, **hf_patch.compare_models(*models.values(), batch=1, seq=256, steps=4)}
    out["compare"]["llama3-8b shape bf16"] = r
    say(f"[hf] {layers} layers of Llama-3-8B bf16: relative error {r['relative_error']:.2e}, same tokens {r['same_tokens']}")
    timings: dict[str, dict[str, float]] = {}
    prompt, batch, context, steps = 2048, 8, 2048, 16
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, config.vocab_size, (1, prompt), generator=g).to(dev)
    decode_prompt = torch.randint(0, config.vocab_size, (batch, context), generator=g).to(dev)
    with torch.no_grad():
        for name, model in models.items():
            prefill = _median_ms(lambda m=model: m(input_ids=tokens, use_cache=False, logits_to_keep=1), reps=10)

            def decode(m: Any = model) -> None:
                cache = DynamicCache(config=config)
                m(input_ids=decode_prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
                nxt = decode_prompt[:, -1:]
                for _ in range(steps):
                    m(input_ids=nxt, past_key_values=cache, use_cache=True, logits_to_keep=1)

            def prefill_only(m: Any = model) -> None:
                m(input_ids=decode_prompt, past_key_values=DynamicCache(config=config), use_cache=True, logits_to_keep=1)

            # A decode step's time: (prefill + steps) minus the prefill alone, over the steps.
            step = (_median_ms(decode, reps=5) - _median_ms(prefill_only, reps=5)) / steps
            timings[name] = {"prefill_ms": prefill, "decode_step_ms": step}
            say(f"[hf] {name}: prefill 1x{prompt} {prefill:.2f} ms, decode step (batch {batch}, ~{context} keys) {step:.3f} ms")
    out["timings"] = timings
    out["setup"] = {"prefill_tokens": prompt, "decode_batch": batch, "decode_context": context, "decode_steps": steps}
    return out


def install_wheels(wheels: Path) -> None:
    """Every wheel of `wheels` into a temporary folder appended to sys.path (where transformers is missing)."""
    import subprocess
    import tempfile

    if importlib.util.find_spec("transformers") is not None:
        say(f"[hf] transformers is installed already; {wheels} not used")
        return
    target = Path(tempfile.mkdtemp(prefix="hf_site_"))
    cmd = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--target", str(target),
           *map(str, sorted(wheels.glob("*.whl")))]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    say(f"[hf] installing the wheels of {wheels}: exit {proc.returncode} {proc.stderr.strip()[-300:]}")
    if proc.returncode == 0:
        sys.path.append(str(target))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--parts", default="diagnose,hf")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--wheels", type=Path, help="a folder of wheels holding transformers and what it needs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.wheels is not None:
        install_wheels(args.wheels)
    results: dict[str, Any] = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                               "date": datetime.date.today().isoformat()}  # fmt: skip
    import triton

    results["triton"] = triton.__version__
    for part in args.parts.split(","):
        try:
            results[part] = part_diagnose() if part == "diagnose" else part_hf(args.layers)
        except Exception as exc:  # noqa: BLE001  (one part failing must not lose the other's numbers)
            results[part] = {"error": traceback.format_exc()}
            say(f"[{part}] FAILED: {type(exc).__name__}: {exc}")
    (args.out / "diagnose_hf.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    say("")
    say(f"{results['gpu']}, torch {results['torch']}, triton {results['triton']}")
    d = results.get("diagnose", {})
    if "checks" in d:
        say(f"diagnose checks: {d['checks']}")
    t = results.get("hf", {}).get("timings", {})
    if t:
        say(f"{'model (' + str(args.layers) + ' layers, Llama-3-8B shape)':40s} {'prefill ms':>11s} {'decode step ms':>15s}")
        for name, v in t.items():
            say(f"{name:40s} {v['prefill_ms']:11.2f} {v['decode_step_ms']:15.3f}")
    (args.out / "diagnose_hf.txt").write_text("\n".join(LINES) + "\n")


if __name__ == "__main__":
    main()
