"""The replayer process: replays the worker's tapes on new inputs, and times them.

Trusted, and kept that way: it never imports or runs kernels.py. It reads the submission's kernels
from the source text the grader read before any worker started (autograder/kernel_source.py), builds
every input itself from the grader's seeds with the spec's own code, and runs a tape's ops from
PyTorch's implementations and its launches with those kernels (autograder/replay.py). Under the CPU
interpreter a launch runs only after that exact specialization compiled for a GPU
(autograder/kernel_check.py).

Requests (from the grader only):
- "case": replay a correctness call's tape on the inputs of a new seed; reply with the outputs.
- "warm": replay a speed case's tape and run its baseline once each, on new inputs, untimed, so that the
  kernels are compiled before "time" runs (the grader sends it while other work may share the GPU); the
  reply says only that it ended: the timing judges the replay.
- "time": time a recorded call's tape against the baseline, exactly as autograder/timing.py times
  anything (new inputs every call, made outside the timed region; L2 flushed; CUDA events; a
  device-wide synchronize), keeping the outputs of the calls the grader asked for.
"""

from __future__ import annotations

import io
import os
import random
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from autograder.lifecycle import device_usable, refuse_ptrace, watch_lifeline
from autograder.sandbox import confine_replayer, restrict_process

GPU_MEMORY_FRACTION = 0.5  # the worker (0.75) and the grader's references share the GPU with it
HOST_MEMORY_BUDGET = 16 << 30  # address space the replayer may add to what it holds after its imports
CHECKED_OUTPUT_BUDGET = 8 << 30  # bytes of kept timed outputs left on the GPU; the rest wait in host memory
# Bytes of carried constants (a lookup table, say) that a part with Part.setup_allowance may read beyond its allowance.
STATE_SLACK = 256


class _Replayer:
    def __init__(self, slug: str, submission_file: str, source: str, device_name: str) -> None:
        import torch

        from autograder import kernel_check, kernel_source
        from autograder.specs import load_spec

        self.torch = torch
        self.spec = load_spec(slug)
        self.device = torch.device(device_name)
        self.interpret = device_name == "cpu"
        self._baseline_pool: Any = None
        self.submission_file = submission_file
        self.problem = ""
        try:
            self.kernels = kernel_source.read(source, submission_file)
            kernel_source.check(self.kernels)
            self.launchable = kernel_source.build(self.kernels, interpret=self.interpret)
            self.check = kernel_check.CompileCheck(kernel_source.build(self.kernels, interpret=False)).check if self.interpret else None
            if self.interpret:
                from autograder.replay import install_bounds_checks

                install_bounds_checks()  # strict as well in the replayer's own process (main)
        except SyntaxError:
            self.problem = "kernels.py has a syntax error, so the grader cannot read its kernels."
            self.launchable, self.check = {}, None

    def replay(self, tape: dict) -> Any:
        from autograder.replay import Replay

        return Replay(tape, self.launchable, self.kernels.refused if not self.problem else {}, self.device,
                      check=self.check, refused_ops=self.spec.forbidden_ops, bounds=self.interpret)  # fmt: skip

    def case(self, request: dict) -> dict:
        from autograder.replay import ReplayRefused, counting_writes

        torch = self.torch
        if self.problem:
            return {"status": "refused", "message": self.problem}
        part = self.spec.part(request["task"])
        params = request["params"]

        def made() -> dict:  # the case's inputs, made anew from its seed: the same values each time
            inputs = part.inputs(params, request["seed"], self.device, request.get("fixed_seed"))
            return {**inputs, **self._prepared(part, request, inputs)}

        try:
            inputs = made()
        except ReplayRefused as exc:
            return {"status": "refused", "message": str(exc)}
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True  # fresh memory is NaN, as in the worker
        try:
            # The grader's own launch of the part's kernel comes first, on inputs of its own: memory that no replayed
            # kernel has written (a red team's replay wrote the address of its output into an input, and the kernel,
            # launched on those inputs, read the answer there), and no replay's output in the process to be found.
            probe = self._probe(part, made(), params) if part.kernel_probe is not None else None
            given = {k: torch.Tensor.clone(v) for k, v in inputs.items()}
            problem, tape = self._kept_state(part, request)
            if problem:
                return {"status": "refused", "message": problem}
            replay = self.replay(tape)
            bound = replay.bind(inputs)
            budget = part.write_budget(inputs, params) if part.write_budget is not None and self.interpret else None
            with counting_writes(part.write_budget_counts_moves) as written:
                outputs = replay.run(bound)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            if budget is not None and written[0] > budget:
                counted = ("PyTorch's copies count as stores here" if part.write_budget_counts_moves
                           else "a copy into another dtype counts as a store")
                return {"status": "refused", "over_write_budget": True, "message": (
                    f"Your kernels stored {written[0]:,} bytes in this call ({counted}), "
                    f"{written[0] / max(budget, 1):.2f} times the "
                    f"{budget:,} this part allows, counted on the CPU tier: {part.write_budget_says}"
                )}
            changed = [k for k in given if not _same_values(given[k], inputs[k])]
            if changed:  # the worker refuses this too; a changed record would meet it only here
                return {"status": "refused", "message": (
                    f"Your call, replayed on new inputs, changed its input `{changed[0]}`: a call must leave its "
                    "inputs (and what its setup step returned) as it found them, and write only tensors it allocated."
                )}
        except ReplayRefused as exc:
            return {"status": "refused", "message": str(exc)}
        except Exception as exc:  # noqa: BLE001  (a kernel that fails on new inputs fails its case)
            return {"status": "error", "message": _first_lines(f"{type(exc).__name__}: {exc}")}
        finally:
            torch.use_deterministic_algorithms(False)
            torch.utils.deterministic.fill_uninitialized_memory = False
        reply = {"status": "ok", "outputs": {k: v for k, v in outputs.items() if type(v) is torch.Tensor}}
        if probe is not None:
            reply["probe"] = probe
        return reply

    def _prepared(self, part: Any, request: dict, inputs: dict) -> dict:
        """What the worker's setup step returned, on this device, as inputs of the replay. Only a part with a setup
        step has any, and none may take the name of an input the grader made (its size is judged by _kept_state)."""
        from autograder.replay import ReplayRefused

        prepared = request.get("prepared") or {}
        if prepared and part.setup is None:
            raise ReplayRefused("The record of your call brings tensors from a setup step that this part does not have.")
        if not all(isinstance(k, str) and type(v) is self.torch.Tensor for k, v in prepared.items()):
            raise ReplayRefused("The record of your call is malformed.")
        clash = sorted(set(prepared) & set(inputs))
        if clash:
            raise ReplayRefused(f"The record of your call gives its setup step's tensors the names of its inputs ({', '.join(clash)}).")
        return {k: _compact(v, self.device) for k, v in prepared.items()}

    def _kept_state(self, part: Any, request: dict, seed: int | None = None) -> tuple[str, dict]:
        """For a part whose replay keeps some inputs (Part.setup_allowance): ('', the tape to replay) if what setup
        returned plus the nonzero memory the tape carried from before the call fit the allowance; past it, the tape with
        that carried memory's nonzero bytes poisoned, if that does not change the result (a workspace overwritten
        before it is read); else (the sentence, tape). Every replay then runs on the poisoned memory: a kernel can
        branch on what carried memory holds (a red team's checked a flag and a sample of the weights, and multiplied by
        the dequantized weights it had kept only where both matched), so no comparison of results proves the memory
        unused; only what the replay reads can be made worthless. `seed`: of the inputs compared on (the request's)."""
        tape = request["tape"]
        if part.setup_allowance is None:
            return "", tape
        torch = self.torch
        carried = {sid: t for sid, t in tape.get("carried", {}).items() if bool(t.any())}
        held = sum(int(t.numel()) * t.element_size() for t in request.get("prepared", {}).values())
        params = request["params"]
        seed = request["seed"] if seed is None else seed
        prepared: dict = {}

        def inputs() -> dict:
            made = part.inputs(params, seed, self.device, request.get("fixed_seed"))
            if not prepared:  # checked and copied once, for the allowance and both replays
                prepared.update(self._prepared(part, request, made))
            return {**made, **{k: _compact(v, self.device) for k, v in prepared.items()}}

        limit = part.setup_allowance(inputs())
        kept = ", ".join(f"`{name}`" for name in part.setup_reads)
        if held > limit:  # checked in the worker too, where the submission runs: here is where it counts
            return (
                f"Your setup step (prepare()) returned {held:,} bytes of tensors, more than the {limit:,} bytes that "
                f"may be derived from {kept}: a prepared layout may re-arrange them, not widen them (dequantize). "
                "Return a re-arranged layout, and compute from it in your kernel on every call."
            ), tape
        allowed = limit + STATE_SLACK
        extra = sum(int(t.numel()) * t.element_size() for t in carried.values())
        if held + extra <= allowed:
            return "", tape
        # Every nonzero byte poisoned; zeros stay (counters a call leaves at zero, as the course's W4A16 split launch
        # keeps its arrival counters, are legitimate), and carry one bit a byte: never faster than the weights.
        poisoned = {**tape, "carried": {sid: t.masked_fill(t != 0, 0xFF) if sid in carried else t
                                        for sid, t in tape["carried"].items()}}  # fmt: skip
        plain = self.replay(tape)
        outputs = plain.run(plain.bind(inputs()))
        blank = self.replay(poisoned)
        without = blank.run(blank.bind(inputs()))
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        if not _differ(outputs, without):
            return "", poisoned
        besides = f", besides the {held:,} bytes your setup step returned" if held else ""
        return (
            f"Your call read {extra:,} bytes of memory kept from before it (a module-level buffer, or state your "
            f"setup step kept) that change its result{besides}. {kept} stay the same from call to call, so such "
            f"state could hold what is computed from them (the weights dequantized): together the two may hold at "
            f"most {allowed - STATE_SLACK:,} bytes derived from them, room to re-arrange them, not to widen them. "
            "Compute from them in your kernel on every call, and return a re-arranged layout from the setup step "
            "(prepare())."
        ), tape

    def _probe(self, part: Any, inputs: dict, params: dict) -> dict:
        """The part's kernels launched by the grader itself (Part.kernel_probe) on the case's inputs, made for it alone:
        its outputs, or {"error": sentence} where a launch failed; with either, under "kernels", the names of the
        kernels it launched, for the sentence of a wrong result."""
        from autograder.replay import ReplayRefused, bounded, out_of_bounds

        torch = self.torch
        check, interpret, launchable = self.check, self.interpret, self.launchable
        launched: list[str] = []

        class Checked:  # kernel[grid](...), compiled for a GPU first where it runs under the interpreter, as in a replay
            def __init__(self, name: str) -> None:
                self.name = name
                if name not in launched:
                    launched.append(name)
                self.kernel = launchable.get(name)
                if self.kernel is None:
                    raise ReplayRefused(f"kernels.py has no @triton.jit function `{name}` at its top level for the "
                                        "grader to launch.")  # fmt: skip

            def __getitem__(self, grid: tuple) -> Any:
                name, kernel = self.name, self.kernel

                def run(*args: Any, **kwargs: Any) -> Any:
                    problem = check(name, list(args), kwargs) if check is not None else ""
                    if problem:
                        raise ReplayRefused(f"Your kernel {name} does not compile for a GPU with the grader's arguments:\n{problem}")
                    if not interpret:
                        return kernel[grid](*args, **kwargs)
                    try:  # only the memory of the tensors the grader gives it, as a replayed launch
                        with bounded(_storages_of([*args, *kwargs.values()])):
                            return kernel[grid](*args, **kwargs)
                    except Exception as exc:
                        cause = out_of_bounds(exc)
                        if cause is None:
                            raise
                        raise ReplayRefused(f"Your kernel {name}, launched by the grader, made {cause}.") from None

                return run

        try:
            outputs = part.kernel_probe(Checked, inputs, params, self.device)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
        except ReplayRefused as exc:
            return {"error": str(exc), "kernels": launched}
        except Exception as exc:  # noqa: BLE001  (a kernel that fails the grader's launch fails its case)
            return {"error": _first_lines(f"{type(exc).__name__}: {exc}"), "kernels": launched}
        return {**{k: v for k, v in outputs.items() if type(v) is torch.Tensor}, "kernels": launched}

    def warm(self, request: dict) -> dict:
        """Run the tape and the baseline once each: their compilations then lie outside the timing."""
        torch = self.torch
        if self.problem:
            return {"status": "refused", "message": self.problem}
        sc = self.spec.speed[request["index"]]
        part = self.spec.part(request["task"])
        params = request["params"]
        try:
            inputs = part.inputs(params, request["seed"], self.device, request.get("fixed_seed"))
            given = {**inputs, **self._prepared(part, request, inputs)}
            if sc.baseline_setup is not None:
                inputs.update(sc.baseline_setup(inputs, params))
            replay = self.replay(request["tape"])
            replay.run(replay.bind(given))
            with self.baseline_memory():
                (sc.baseline or self.spec.baseline)(inputs, params)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001  (the timing meets the same failure, and reports it)
            return {"status": "error", "message": _first_lines(f"{type(exc).__name__}: {exc}")}
        return {"status": "ok"}

    def baseline_memory(self) -> Any:
        """On a GPU, the baseline allocates from a memory pool of its own. Its returned output is poisoned after each
        call, but the blocks it frees (its intermediates: an answer in float32 before the cast, a normalised row before
        its weight) would otherwise go back to PyTorch's caching allocator, which may hand them to the next replayed
        call, and a kernel on a GPU reads wherever it points."""
        if self._baseline_pool is None:
            self._baseline_pool = baseline_pool(self.device)
        return self._baseline_pool()

    def time(self, request: dict) -> dict:
        """Time the tape (as "submission") and the baseline, interleaved, each call on new inputs."""
        from autograder import timing
        from autograder.diagnose import facts_from_compiled
        from autograder.replay import ReplayRefused

        torch, spec, device = self.torch, self.spec, self.device
        if self.problem:
            return {"status": "refused", "message": self.problem}
        sc = spec.speed[request["index"]]
        part = spec.part(request["task"])
        params = request["params"]
        baseline = sc.baseline or spec.baseline
        fixed_seed = request.get("fixed_seed")
        kept: dict[int, Any] = {}
        draw = CheckedCalls(int(request.get("check", 0)))
        try:
            prepared = (self._prepared(part, request, part.inputs(params, request["seeds"][0], device, fixed_seed))
                        if request.get("prepared") else {})  # inputs made only to check the names against
            # compared on a warm-up call's inputs: what those replays leave in freed memory answers no timed call
            state, tape = self._kept_state(part, request, seed=request["warmup_seeds"][0])
            replay = self.replay(tape)
        except ReplayRefused as exc:
            return {"status": "refused", "message": str(exc)}
        except Exception as exc:  # noqa: BLE001  (the timing would meet the same failure)
            return {"status": "error", "message": _first_lines(f"{type(exc).__name__}: {exc}")}
        if state:
            return {"status": "refused", "message": state}
        baseline_extra: dict = {}

        def make(seed: int) -> dict:
            inputs = part.inputs(params, seed, device, fixed_seed)
            # The call's inputs, never what the baseline's setup made; what setup returned, copied anew for every call
            # (outside the timed region), so that nothing a call writes there reaches the next (a red team's counter
            # of calls, kept in a setup tensor, had the calls after the checked ones do nothing). The baseline gets
            # copies of its own: nothing the replay writes into its inputs reaches the baseline's call.
            bound = replay.bind({**inputs, **{k: _compact(v, device) for k, v in prepared.items()}})
            own = {torch.Tensor.untyped_storage(t).data_ptr() for t in inputs.values()}
            inputs = {k: torch.Tensor.clone(v) for k, v in inputs.items()}
            if sc.baseline_setup is not None:  # the baseline's offline step, outside the timed region
                if fixed_seed is None or not baseline_extra:
                    baseline_extra.clear()
                    baseline_extra.update(sc.baseline_setup(inputs, params))
                inputs = {**inputs, **baseline_extra}
            return {"inputs": inputs, "state": bound, "own": own}

        current: dict[str, Any] = {}
        last: list[Any] = [None]

        def submission(arg: dict) -> Any:
            last[0] = arg
            return replay.run(arg["state"])

        def baseline_call(arg: dict) -> Any:
            with self.baseline_memory():
                return baseline(arg["inputs"], params)

        def timed_inputs(r: int) -> dict:
            current.clear()  # the previous rep's inputs are dropped before the next are made
            current["arg"] = make(request["seeds"][r])
            return current["arg"]

        nan = float("nan")

        def after(name: str, r: int, result: Any) -> None:
            """Right after the end event, on the same stream: keep the output of a call drawn for checking, then poison
            what was returned, and everything else the replayed call allocated."""
            tensors = list(result.values()) if isinstance(result, dict) else [result]
            tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
            if name == "submission" and r >= 0 and tensors:
                take, dropped = draw.offer(r)
                if dropped is not None:
                    del kept[dropped]
                if take:
                    # a speed call returns one tensor (docs/adding-an-assignment.md)
                    kept[r] = torch.Tensor.clone(tensors[0])
            for t in tensors:
                # A freed output must not hand the next call an answer: neither the baseline's nor the replay's.
                if t.is_floating_point():
                    t.fill_(nan)
                elif t.dtype != torch.bool and not t.is_complex():
                    t.fill_(torch.iinfo(t.dtype).min)
            if name == "submission" and r >= 0 and last[0] is not None:
                # Every storage of the timed call but its inputs, whatever the tape calls it (a red team labelled a
                # workspace an input, and a counter in it outlived the call): memory a next call may be handed. (A
                # warm-up call's state serves the next warm-up calls, and its memory stays held until the timing ends.)
                for storage in last[0]["state"].storages.values():
                    if storage.nbytes() and storage.data_ptr() not in last[0]["own"]:
                        torch.empty(0, dtype=torch.uint8, device=device).set_(storage).fill_(0xFF)
                last[0] = None

        def settle(r: int) -> None:
            if device.type != "cuda" or r not in kept:
                return
            held = sum(t.numel() * t.element_size() for t in kept.values() if t.device.type == "cuda")
            if held > CHECKED_OUTPUT_BUDGET:
                kept[r] = kept[r].cpu()

        try:
            warm = [make(s) for s in request["warmup_seeds"]]
            times = timing.time_calls(
                {"submission": submission, "baseline": baseline_call}, warm, timed_inputs, len(request["seeds"]), device,
                warmup_ms=request.get("warmup_ms", 100.0), min_warmup_calls=request.get("warmup_calls", 10),
                after=after, settle=settle, min_reps=request.get("min_reps"), settled_spread=request.get("settled_spread", 0.0),
            )  # fmt: skip
            copy_gbps = timing.copy_bandwidth_gbps(device) if device.type == "cuda" else 0.0
            kernels = [k.plain() for k in (facts_from_compiled(*launch) for launch in replay.launched.values()) if k]
        except ReplayRefused as exc:
            return {"status": "refused", "message": str(exc)}
        except Exception as exc:  # noqa: BLE001
            return {"status": "error", "message": _first_lines(f"{type(exc).__name__}: {exc}")}
        finally:
            current.clear()
        return {"status": "ok", "times": times, "copy_gbps": copy_gbps, "kernels": kernels,
                "outputs": {str(r): t for r, t in kept.items()}}


def baseline_pool(device: Any) -> Callable[[], Any]:
    """A factory of contexts in which the current thread's allocations on `device` come from one memory pool of their
    own (torch.cuda.MemPool), and go back to it when freed; on a CPU, or a PyTorch without memory pools, contexts that
    change nothing."""
    import contextlib

    import torch

    if device.type != "cuda" or not hasattr(torch.cuda, "MemPool") or not hasattr(torch.cuda, "use_mem_pool"):
        return contextlib.nullcontext
    # use_mem_pool wants a device with its index ("cuda" alone was refused on the first GPU run of this pool)
    index = device.index if device.index is not None else torch.cuda.current_device()
    pool = torch.cuda.MemPool()
    return lambda: torch.cuda.use_mem_pool(pool, torch.device("cuda", index))


class CheckedCalls:
    """Which timed calls' outputs the grader checks: a uniform draw of `k` from every timed call whose time counts,
    however many run (reservoir sampling), made as they run. A call cannot know whether it will be checked, so a replay
    that does less work in some calls is caught in proportion to how many (checks drawn from the first 20 calls let a
    red team's counter skip the work of every call after them)."""

    def __init__(self, k: int, rng: random.Random | None = None) -> None:
        self.k, self.rng = k, rng or random.SystemRandom()
        self.chosen: list[int] = []

    def offer(self, r: int) -> tuple[bool, int | None]:
        """Call r (0, 1, 2, ... in order) ran: (whether to keep its output, the earlier call it replaces, if any)."""
        if len(self.chosen) < self.k:
            self.chosen.append(r)
            return True, None
        slot = self.rng.randrange(r + 1)
        if slot >= self.k:
            return False, None
        dropped, self.chosen[slot] = self.chosen[slot], r
        return True, dropped


def _storages_of(values: list) -> list:
    """The storages of the tensors among a launch's arguments, and of the tensors its tensor descriptors describe."""
    import torch

    tensors = [v for v in values if type(v) is torch.Tensor]
    described = [getattr(v, "base", None) for v in values if type(v) is not torch.Tensor]  # TensorDescriptor.base
    tensors += [t for t in described if type(t) is torch.Tensor]
    return [torch.Tensor.untyped_storage(t) for t in tensors]


def _same_values(a: Any, b: Any) -> bool:
    """Whether a tensor still holds what it held: equal values, NaN where there was NaN."""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return torch.equal(a, b)


def _compact(tensor: Any, device: Any) -> Any:
    """A copy of a tensor from the worker in memory of its own, just large enough for its strides: what is counted is
    then all the replay can read (a red team's prepare() returned a one-element view of a storage that also held the
    dequantized weights, and the replay had adopted that whole storage)."""
    import torch

    fresh = torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device=device)
    torch.empty(0, dtype=torch.uint8, device=device).set_(torch.Tensor.untyped_storage(fresh)).fill_(0xFF)  # the gaps: NaN
    return fresh.copy_(tensor)


def _differ(a: dict, b: dict) -> bool:
    """Whether two replays' outputs differ by more than rounding: 1e-3 of the largest magnitude, NaN counting as a
    difference (a split launch that adds its partials in another order on each run stays the same)."""
    import torch

    for key, x in a.items():
        if type(x) is not torch.Tensor:
            continue
        y = b.get(key)
        if type(y) is not torch.Tensor or x.shape != y.shape:
            return True
        if torch.equal(x, y):
            continue
        x, y = x.double(), y.double()
        gap = (x - y).abs().nan_to_num(float("inf")).max().item() if x.numel() else 0.0
        if gap > 1e-3 * x.abs().nan_to_num(0.0).max().item():
            return True
    return False


def _first_lines(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def _plain(value: Any) -> Any:
    import torch

    if type(value) is torch.Tensor:
        return value.detach().cpu().contiguous().clone()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or type(value) in (bool, int, float, str):
        return value
    return repr(value)


def main(conn: Connection, lifeline: Connection, slug: str, submission_file: str, source: str, device_name: str,
         log_path: str) -> None:  # fmt: skip
    try:
        os.setsid()
    except OSError:
        pass
    refuse_ptrace()  # no worker (same user) may read or write this process's memory
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)  # a kernel's device_print under the interpreter lands here, not in the grader's output
    os.dup2(fd, 2)
    if device_name == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from autograder.integrity import limit_host_memory

    if device_name == "cuda":
        restrict_process()  # before CUDA's threads start, as in the worker
        index = torch.cuda.current_device()
        torch.cuda.set_per_process_memory_fraction(GPU_MEMORY_FRACTION, index)
        torch.empty(1, device="cuda")  # CUDA's context first: the host cap counts from what it holds
    limit_host_memory(HOST_MEMORY_BUDGET, gpu=device_name == "cuda")
    if device_name == "cuda":  # Triton's driver utilities, from the trusted cache, before the replayer has its own
        import triton.runtime.driver

        triton.runtime.driver.active.utils  # noqa: B018
    sys.dont_write_bytecode = True
    from autograder.kernel_source import narrow_code_generator

    narrow_code_generator()
    confinement = confine_replayer(source, gpu=device_name == "cuda")
    print(f"replayer directories: {confinement.root}; writes elsewhere: {confinement.enforced}; "
          f"{confinement.capabilities}; {confinement.syscalls}", file=sys.stderr)
    watch_lifeline(lifeline)  # after the confinement, as the worker's (red team 12)
    replayer = _Replayer(slug, submission_file, source, device_name)
    if device_name == "cpu":  # every interpreted access in this process outside a bounded launch is refused
        from autograder.replay import install_bounds_checks

        install_bounds_checks(strict=True)
    while True:
        try:
            request = torch.load(io.BytesIO(conn.recv_bytes()), weights_only=True)
        except EOFError:
            return
        if request.get("op") == "stop":
            return
        if request.get("op") == "case":
            reply = replayer.case(request)
        elif request.get("op") == "warm":
            reply = replayer.warm(request)
        elif request.get("op") == "time":
            reply = replayer.time(request)
        else:
            reply = {"status": "error", "message": f"unknown request {request.get('op')!r}"}
        restart = not device_usable(torch, device_name)
        if restart:  # a replayed kernel broke the GPU context (an illegal access): report it, then end this process
            said = _first_lines(str(reply.get("message") or "A replayed kernel failed on the GPU."))
            reply = {"status": "error", "restart": True, "message": said + " (The GPU reported an error that ends the "
                     "grader's replay process: the next case starts a fresh one.)"}
        reply["id"] = request.get("id")
        buf = io.BytesIO()
        torch.save(_plain(reply), buf)
        conn.send_bytes(buf.getvalue())
        if restart:
            os._exit(3)
        if device_name == "cuda":
            torch.cuda.empty_cache()
