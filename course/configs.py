"""Launch settings as data: each solution's `configs.json`, read the same way by every kernels.py.

A table maps a GPU's name (as torch.cuda.get_device_name() gives it, or "interpreter" for Triton's CPU
interpreter) to the settings of each kernel, per shape bucket:

    {"about": ..., "reference": "NVIDIA H200",
     "gpus": {"NVIDIA H200": {"meta": {"capability": [9, 0], "sms": 132, "smem_per_block": 232448,
                                       "date": ..., "torch": ..., "triton": ..., "command": ...},
                              "forward": {"cols<=512": {"elements": 2048, "num_warps": 2}, ...}},
              "interpreter": {...}}}

`python -m autograder tune SLUG` measures an entry on the GPU it runs on. A GPU with no entry of its own
(or a bucket its entry lacks) borrows the entry of a measured GPU of the same architecture that has no
more shared memory per block than it has: those settings compile and fit there. Failing that, the
solution's rules derive settings from the reference GPU's and the device's properties (shared memory,
SMs, TMA, bfloat16 tensor cores), so that every GPU gets settings that fit.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from course.device import Device

T = TypeVar("T")
_MISSING = object()

REPO_ROOT = Path(__file__).resolve().parent.parent
TABLE_NAME = "configs.json"

# rules(device, kernel, bucket, reference) -> settings, where reference is the reference GPU's settings
# for that kernel and bucket (None when the table has none).
Rules = Callable[[Device, str, str, Any], Any]


def same_as_reference(device: Device, kernel: str, bucket: str, reference: Any) -> Any:
    """The rule for kernels that keep nothing in shared memory: the reference GPU's settings fit anywhere."""
    if reference is None:
        raise LookupError(f"configs.json has no settings for {kernel} / {bucket} on any GPU, nor a rule for {device.name}.")
    return reference


class ConfigTable:
    """One solution's table, with the lookups its wrappers make on every call (cached per device)."""

    def __init__(self, data: dict, path: Path, rules: Rules = same_as_reference) -> None:
        self.data = data
        self.path = path
        self.rules = rules
        self._cache: dict[tuple[Device, str, str], Any] = {}
        self._forced: dict[tuple[str, str], Any] = {}
        self.forced_hits: set[tuple[str, str]] = set()  # forced (kernel, bucket) pairs that a pick returned
        self._memos: list[dict] = []  # the answers of the functions wrapped by `cached`

    @classmethod
    def beside(cls, kernels_file: str | Path, slug: str, rules: Rules = same_as_reference) -> ConfigTable:
        """The configs.json beside a kernels.py, else the course's released one for the assignment.

        A kernels.py graded on its own (a lone upload, a copy in a temporary folder) has no table beside
        it; it then launches with the settings the course ships for that assignment.
        """
        candidates = [Path(kernels_file).resolve().with_name(TABLE_NAME),
                      REPO_ROOT / "assignments" / slug / TABLE_NAME, REPO_ROOT / "solutions" / slug / TABLE_NAME]  # fmt: skip
        for path in candidates:
            if path.exists():
                return cls(json.loads(path.read_text()), path, rules)
        raise FileNotFoundError(
            f"{slug}: the launch settings live in {TABLE_NAME} beside kernels.py, and there is none beside "
            f"{Path(kernels_file).resolve()} nor in assignments/{slug}/: copy assignments/{slug}/{TABLE_NAME} there."
        )

    @property
    def gpus(self) -> dict[str, dict]:
        return self.data.get("gpus", {})

    def measured(self, name: str, kernel: str, bucket: str) -> Any | None:
        """The settings the named GPU's own entry holds, or None."""
        return self.gpus.get(name, {}).get(kernel, {}).get(bucket)

    def reference(self, kernel: str, bucket: str) -> Any | None:
        return self.measured(self.data.get("reference", ""), kernel, bucket)

    def stale(self) -> list[str]:
        """The measured GPU entries that lack a setting the reference GPU's entry for the same bucket has: settings
        measured before the kernel gained that setting, which the launch would fill with the old default (and so
        never use what the setting brings). A sentence for each, saying what to do."""
        ref_name = self.data.get("reference", "")
        found = []
        for name, entry in self.gpus.items():
            if name in (ref_name, "interpreter"):  # the interpreter's settings have shapes of their own (CPU cases)
                continue
            for kernel, buckets in entry.items():
                if kernel == "meta":
                    continue
                for bucket, settings in buckets.items():
                    missing = _missing_settings(self.reference(kernel, bucket), settings)
                    if missing:
                        found.append(
                            f"{self.path.parent.name}: {name}'s {kernel} [{bucket}] has no {', '.join(missing)}, which "
                            f"{ref_name}'s has: it was measured before the kernel took that setting. Tune it again on "
                            f"that GPU (python -m autograder tune {self.path.parent.name} --kernels {kernel}), or delete "
                            "the bucket so that the GPU borrows or derives it.")  # fmt: skip
        return found

    def borrowed(self, device: Device, kernel: str, bucket: str) -> Any | None:
        """Settings measured on another GPU of the device's architecture, with no more shared memory than it."""
        for name, entry in self.gpus.items():
            meta = entry.get("meta", {})
            if name == device.name or tuple(meta.get("capability", ())) != device.capability:
                continue
            if meta.get("smem_per_block", 1 << 62) <= device.smem_per_block:
                found = entry.get(kernel, {}).get(bucket)
                if found is not None:
                    return found
        return None

    def pick(self, device: Device, kernel: str, bucket: str) -> Any:
        """The settings of one kernel for one shape bucket on a device."""
        if self._forced and (kernel, bucket) in self._forced:
            self.forced_hits.add((kernel, bucket))
            return self._forced[kernel, bucket]
        key = (device, kernel, bucket)
        found = self._cache.get(key)  # every launch comes here: one dict lookup once the answer is known
        if found is None:
            found = self.measured(device.name, kernel, bucket)
            if found is None:
                found = self.borrowed(device, kernel, bucket)
            if found is None:
                found = self.rules(device, kernel, bucket, self.reference(kernel, bucket))
            self._cache[key] = found
        return found

    def cached(self, settings_for: Callable[..., T]) -> Callable[..., T]:
        """Decorator for a wrapper's settings function (device and shape in, launch settings out): each
        answer is worked out once per distinct arguments, since every launch asks and a decode step asks
        the same question thousands of times. Forcing the table (the tuner) forgets the answers. The
        arguments must be hashable: a Device, ints, dtypes, strings."""
        memo: dict[tuple, T] = {}
        self._memos.append(memo)

        @functools.wraps(settings_for)
        def remembered(*args: Any, **kwargs: Any) -> T:
            key = (args, tuple(kwargs.items())) if kwargs else args
            found = memo.get(key, _MISSING)
            if found is _MISSING:
                found = memo[key] = settings_for(*args, **kwargs)
            return found  # type: ignore[return-value]

        return remembered

    def force(self, kernel: str, bucket: str, settings: Any | None) -> None:
        """Make every pick of `kernel` in `bucket` return `settings` (None: back to the table). The tuner uses it."""
        for memo in self._memos:
            memo.clear()
        if settings is None:
            self._forced.pop((kernel, bucket), None)
        else:
            self._forced[kernel, bucket] = settings

    @contextlib.contextmanager
    def forcing(self, kernel: str, bucket: str, settings: Any) -> Iterator[None]:
        self.force(kernel, bucket, settings)
        try:
            yield
        finally:
            self.force(kernel, bucket, None)


@dataclass(frozen=True)
class SearchSpace:
    """What `python -m autograder tune` tries for one kernel: declared in the solution, next to its kernels.

    For each bucket, each candidate is forced on the kernel, checked on every call in the bucket against
    the spec's float64 reference, then timed there; the table gets the fastest by geometric mean.
    """

    kernel: str  # the table's key for the kernel
    task: str  # the spec's part whose graded call runs the kernel: inputs, reference, tolerance
    buckets: dict[str, list[dict]]  # bucket -> the spec parameters (dtype included) of calls that fall in it
    candidates: list[Any]  # table values to try
    keep: int = 0  # 0: the value is the best candidate; n > 0: a list of up to n (an autotuner's choices)


# time(fns) -> milliseconds per call of each: the tuner's timer (L2 flushed before each call, interleaved, median).
Timer = Callable[[dict[str, Callable[[], object]]], dict[str, float]]


@dataclass(frozen=True)
class Measurement:
    """A table value that is measured rather than chosen among candidates: declared in the solution (MEASUREMENTS
    beside SEARCH_SPACE), run by `python -m autograder tune` after the search spaces, with their choices in force.

    measure(device, bucket, time) returns the value for this GPU's entry, or None where the kernel has no
    such setting on it (the tuner says so and writes nothing)."""

    kernel: str  # the table's key
    buckets: tuple[str, ...]
    measure: Callable[[Device, str, Timer], Any]


def _missing_settings(reference: Any, settings: Any, prefix: str = "") -> list[str]:
    """The keys of `reference` that `settings` lacks, nested dicts included where both agree on their plain values
    (a nested "cfg" is compared only under the same "path": a GEMV's settings are not a dot kernel's)."""
    if not isinstance(reference, dict) or not isinstance(settings, dict):
        return []
    missing = [prefix + k for k in reference if k not in settings]
    plain_agree = all(settings.get(k) == v for k, v in reference.items() if k in settings and not isinstance(v, dict))
    if plain_agree:
        for k, v in reference.items():
            if isinstance(v, dict) and k in settings:
                missing += _missing_settings(v, settings[k], f"{prefix}{k}.")
    return missing


def grid(**axes: list[Any]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, as dicts: grid(a=[1, 2], b=[3]) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(axes[n] for n in names))]


def ceil_bucket(value: int, bounds: tuple[int, ...], prefix: str, beyond: str) -> str:
    """The bucket of `value`: f"{prefix}<={b}" for the least bound b >= value, else `beyond`."""
    for b in bounds:
        if value <= b:
            return f"{prefix}<={b}"
    return beyond


def dump_table(data: dict) -> str:
    """The table as JSON text, one line per bucket's settings, so that a diff shows what a tuning changed."""

    def block(obj: Any, depth: int) -> str:
        if isinstance(obj, list) and len(obj) > 1 and depth == 4:  # an autotuner's choices: one a line
            pad = " " * (depth + 1)
            return "[\n" + ",\n".join(pad + json.dumps(v) for v in obj) + "\n" + " " * depth + "]"
        if not isinstance(obj, dict) or not obj or depth == 4:
            return json.dumps(obj)
        pad = " " * (depth + 1)
        items = [f"{pad}{json.dumps(k)}: {block(v, depth + 1 if k != 'meta' else 4)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"

    return block(data, 0) + "\n"
