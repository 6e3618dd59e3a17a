"""Launch settings as data: how a table is found and read, what each GPU gets, and what the tuner may write.

The pinned interpreter picks are the settings the solutions' if-ladders chose before the tables existed
(the CPU-tier cases rely on them to reach every path); the pinned H200 and H100 picks are the entries
`python -m autograder tune` measured on each (results/<gpu>/tuner/). A table edit that changes a pick fails
here, so that a re-tuning updates these pins on purpose.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch

from autograder.specs import SLUGS, load_spec
from course.configs import ConfigTable, ceil_bucket, dump_table, grid
from course.device import INTERPRETER, KNOWN_GPUS, Device
from course.loader import load_kernels

H200, H100 = KNOWN_GPUS["NVIDIA H200"], KNOWN_GPUS["NVIDIA H100 80GB HBM3"]
SOLUTIONS = {slug: load_kernels(slug, "solutions") for slug in SLUGS}


def _table(tmp_path: Path) -> ConfigTable:
    data = {"reference": "GPU A", "gpus": {
        "GPU A": {"meta": {"capability": [9, 0], "smem_per_block": 200_000}, "k": {"b1": {"x": 1}, "b2": {"x": 2}}},
        "GPU B": {"meta": {"capability": [9, 0], "smem_per_block": 100_000}, "k": {"b1": {"x": 3}}},
    }}  # fmt: skip
    path = tmp_path / "configs.json"
    path.write_text(dump_table(data))
    return ConfigTable(json.loads(path.read_text()), path, rules=lambda d, k, b, ref: {"rule": ref})


def test_a_gpu_uses_its_own_entry_then_a_same_architecture_gpu_with_no_more_shared_memory_then_the_rules(
    tmp_path: Path,
) -> None:
    table = _table(tmp_path)
    b = Device("GPU B", (9, 0), 100, 100_000)
    assert table.pick(b, "k", "b1") == {"x": 3}  # its own
    assert table.pick(b, "k", "b2") == {"rule": {"x": 2}}  # GPU A has more shared memory: not borrowed
    big = Device("GPU C", (9, 0), 100, 250_000)
    assert table.pick(big, "k", "b1") == {"x": 1}  # borrowed from A, the first that fits
    other = Device("GPU D", (8, 0), 100, 250_000)
    assert table.pick(other, "k", "b1") == {"rule": {"x": 1}}  # another architecture: the rules, from A's
    with table.forcing("k", "b1", {"x": 9}):
        assert table.pick(b, "k", "b1") == {"x": 9} and table.pick(b, "k", "b2") == {"rule": {"x": 2}}
    assert table.forced_hits == {("k", "b1")} and table.pick(b, "k", "b1") == {"x": 3}


def test_a_cached_settings_function_works_once_per_arguments_and_forgets_when_the_table_is_forced(
    tmp_path: Path,
) -> None:
    table, calls = _table(tmp_path), []
    b = Device("GPU B", (9, 0), 100, 100_000)

    @table.cached
    def settings(device: Device, rows: int, wide: bool = False) -> int:
        calls.append(rows)
        return table.pick(device, "k", "b1")["x"] * rows + wide

    assert [settings(b, 2), settings(b, 2), settings(b, 5), settings(b, 2, wide=True)] == [6, 6, 15, 7]
    assert calls == [2, 5, 2]  # the repeated call was answered from memory
    with table.forcing("k", "b1", {"x": 10}):
        assert settings(b, 2) == 20  # forcing forgot the answers: the tuner's candidate is seen
    assert settings(b, 2) == 6 and calls == [2, 5, 2, 2, 2]


def test_a_kernels_py_without_a_table_beside_it_uses_the_released_one(tmp_path: Path) -> None:
    lone = tmp_path / "kernels.py"
    assert ConfigTable.beside(lone, "rmsnorm").path.parts[-2:] == ("rmsnorm", "configs.json")
    (tmp_path / "configs.json").write_text('{"gpus": {}}')
    assert ConfigTable.beside(lone, "rmsnorm").path == tmp_path / "configs.json"
    with pytest.raises(FileNotFoundError, match="copy assignments/nothing/configs.json there"):
        ConfigTable.beside(tmp_path / "elsewhere" / "kernels.py", "nothing")


def test_an_entry_measured_before_the_kernel_took_a_setting_is_called_stale(tmp_path: Path) -> None:
    """The H100's W4A16 entry for 16 rows predated the nibble planes until 2026-12-06: the table held no "planes" for
    it, the launch took the default (none), and the planes never reached that GPU at 9-16 rows."""
    dot = {"block_n": 128, "block_m": 16, "num_warps": 4}
    data = {"reference": "GPU A", "gpus": {
        "GPU A": {"w4": {"m<=16": {"path": "dot", "cfg": {**dot, "planes": True}}, "m<=1": {"path": "gemv", "cfg": {"k": 1}},
                         "m<=2": {"path": "dot", "cfg": {**dot, "planes": True}}}},
        "GPU B": {"w4": {"m<=16": {"path": "dot", "cfg": dict(dot)},  # measured before the planes: stale
                         "m<=1": {"path": "dot", "cfg": dict(dot)},  # another kernel there: its own settings
                         "m<=2": {"path": "dot", "cfg": {**dot, "planes": False, "extra": 0}},  # measured with them
                         "m<=64": {"path": "dot", "cfg": dict(dot)}}},  # no reference bucket to compare with
        "interpreter": {"w4": {"m<=16": {"path": "dot", "cfg": {"block_n": 16}}}},  # CPU settings have their own shape
    }}  # fmt: skip
    path = tmp_path / "quant_matmul" / "configs.json"
    path.parent.mkdir()
    stale = ConfigTable(data, path).stale()
    assert len(stale) == 1 and stale[0].startswith("quant_matmul: GPU B's w4 [m<=16] has no cfg.planes, which GPU A's has")
    assert "python -m autograder tune quant_matmul --kernels w4" in stale[0]
    del data["gpus"]["GPU B"]["w4"]["m<=16"]
    assert ConfigTable(data, path).stale() == []


@pytest.mark.parametrize("slug", SLUGS)
def test_no_gpu_entry_in_a_shipped_table_predates_a_setting_of_the_reference(slug: str) -> None:
    assert SOLUTIONS[slug].CONFIGS.stale() == []


def test_bucket_and_grid_helpers() -> None:
    assert [ceil_bucket(v, (512, 1024), "cols", "cols>1024") for v in (1, 512, 513, 4096)] == [
        "cols<=512", "cols<=512", "cols<=1024", "cols>1024"]  # fmt: skip
    assert grid(a=[1, 2], b=[3]) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]


PINNED = [  # (slug, config function, arguments after the device, H200's pick, H100's pick, the interpreter's pick)
    ("rmsnorm", "forward_config", (16384, 4096), (2, 4096, 16), (2, 4096, 8), (2, 4096, 16)),
    ("rmsnorm", "forward_config", (1000, 96), (16, 128, 2), (16, 128, 4), (16, 128, 2)),
    ("rmsnorm", "forward_config", (3, 20001), (1, 16384, 16), (1, 16384, 16), (1, 16384, 8)),
    ("rmsnorm", "backward_config", (16384, 4096), (264, 4096, 16), (264, 4096, 16), (8, 4096, 16)),
    ("rmsnorm", "backward_config", (16384, 8192), (132, 8192, 16), (132, 8192, 16), (4, 8192, 16)),
    ("fusion", "softmax_config", (16384, 1024), (2, 1024, 4, False), (4, 1024, 8, False), (2, 1024, 4, False)),
    ("fusion", "softmax_config", (7, 32000), (1, 32768, 16, True), (1, 32768, 16, True), (1, 32768, 16, True)),
    ("fusion", "softmax_config", (4, 128256), (1, 8192, 4, False), (1, 8192, 4, False), (1, 4096, 4, False)),
    ("fusion", "gelu_config", (1048576,), (2048, 4), (2048, 8), (2048, 4)),
    ("coalescing", "transpose_config", (8192, 8192, 2), (128, 128, 8), (128, 128, 8), (128, 128, 8)),
    ("coalescing", "transpose_config", (1000, 1000, 2), (64, 64, 8), (128, 128, 8), (64, 64, 4)),
    ("coalescing", "transpose_config", (4096, 14336, 4), (64, 64, 8), (64, 64, 4), (64, 64, 8)),
    ("rope", "rope_config", (262144, 64), (16, 64, 8), (16, 64, 4), (16, 64, 4)),
    ("rope", "rope_config", (256, 64), (2, 64, 1), (2, 64, 1), (2, 64, 1)),
    ("swiglu", "swiglu_config", (117440512,), (2048, 8), (1024, 8), (2048, 8)),
    ("swiglu", "swiglu_config", (117440512, True), (1024, 8), (2048, 16), (1024, 8)),
    ("swiglu", "swiglu_config", (229376,), (256, 2), (256, 2), (512, 2)),
]


@pytest.mark.parametrize(("slug", "fn", "args", "h200", "h100", "interpreter"), PINNED)
def test_each_gpu_and_the_interpreter_get_the_settings_measured_for_them(slug: str, fn: str, args: tuple, h200: tuple,
                                                                         h100: tuple, interpreter: tuple) -> None:  # fmt: skip
    config = getattr(SOLUTIONS[slug], fn)
    assert config(H200, *args) == h200
    assert config(H100, *args) == h100
    assert config(INTERPRETER, *args) == interpreter


def test_the_tile_settings_of_the_compute_bound_solutions_are_pinned_too() -> None:
    tiling, fa, qm = SOLUTIONS["tiling"], SOLUTIONS["flash_attention"], SOLUTIONS["quant_matmul"]
    tiles = [(c["block_m"], c["block_n"], c["block_k"], c["num_stages"], c["num_warps"])
             for c in tiling.matmul_config(H200, torch.bfloat16)]  # fmt: skip
    assert tiles == [(128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (128, 128, 64, 3, 4), (256, 128, 64, 3, 8)]
    assert [c["block_m"] for c in tiling.matmul_config(INTERPRETER, torch.float32)] == [32]
    fwd = fa.forward_config(H200, 128, torch.bfloat16, False)
    assert (fwd.block_m, fwd.block_n, fwd.num_warps, fwd.num_stages) == (128, 128, 8, 3)
    assert fwd.tma == (fa.TensorDescriptor is not None)
    assert fa.forward_config(H200, 64, torch.float16, True) == fa.FwdConfig(64, 64, 4, 3, fwd.tma)
    # short sequences: 64-query tiles causal up to 2048 tokens, and non-causal up to 1024 (D = 128); the H100's
    # own entries (tuned 2026-12-06) chose the same
    assert [fa.length_class(s, s) for s in (1, 512, 1024, 1025, 2048, 2049, 4096)] == \
        ["S<=1024", "S<=1024", "S<=1024", "S<=2048", "S<=2048", "", ""]
    assert fa.length_class(1, 3000) == fa.length_class(3000, 1) == ""  # both lengths must be within the bound
    assert set(fa.SHORT_TUNED_AT) == set(fa.SHORT_ATTENTION)
    assert all(fa.length_class(s, s) == f"S<={bound}" for bound, lengths in fa.SHORT_TUNED_AT.items() for s in lengths)
    # a table from before the length classes (a configs.json kept beside a newer kernels.py) falls back to the
    # bucket of every length instead of asking the rules to shrink settings it does not have
    old_table = json.loads(fa.CONFIGS.path.read_text())
    for entry in old_table["gpus"].values():
        for bucket in [b for b in entry.get("forward", {}) if ", S<=" in b]:
            del entry["forward"][bucket]
    old = ConfigTable(old_table, fa.CONFIGS.path, rules=fa._fit)
    assert fa.forward_bucket(old, 128, torch.bfloat16, True, "S<=1024") == "16-bit, D=128, causal"
    assert fa.forward_bucket(fa.CONFIGS, 128, torch.bfloat16, True, "S<=1024") == "16-bit, D=128, causal, S<=1024"
    assert fa.forward_bucket(fa.CONFIGS, 64, torch.float16, False, "") == "16-bit, D<=64"
    assert fa.forward_bucket(fa.CONFIGS, 64, torch.float32, True, "S<=1024") == "float32"
    for device in (H200, H100):
        assert fa.forward_config(device, 128, torch.bfloat16, True, "S<=1024") == fa.FwdConfig(64, 64, 4, 3, fwd.tma)
        assert fa.forward_config(device, 128, torch.bfloat16, True, "S<=2048") == fa.FwdConfig(64, 64, 4, 3, fwd.tma)
        assert fa.forward_config(device, 128, torch.bfloat16, False, "S<=1024") == fa.FwdConfig(64, 64, 4, 3, fwd.tma)
        assert fa.forward_config(device, 128, torch.bfloat16, False, "S<=2048") == fwd
    assert fa.forward_config(INTERPRETER, 64, torch.float32, True) == fa.FwdConfig(64, 32, 4, 1, False)
    assert fa.decode_config(H200, torch.bfloat16, 4096, 64)[0] == fa.DecodeConfig(1024, 64, 4, 3)
    assert fa.backward_config(H200, torch.bfloat16) == fa.BwdConfig(64, 128, 8, 3, 128, 64, 8, 3, 64, 8)
    assert fa.backward_config(H100, torch.bfloat16) == fa.backward_config(H200, torch.bfloat16)  # each GPU's tune chose it
    # tuned on both graded decode shapes (N = 14336 and 4096): the same entry on both GPUs
    assert qm.quant_config(H200, 4, 1, torch.float16) == qm.GemvConfig(32, 128, 2, 8, 3)
    assert qm.quant_config(H100, 4, 1, torch.float16) == qm.GemvConfig(32, 128, 2, 8, 3)
    # a few rows: one product per nibble plane on both GPUs, the H100's own entry up to 16 rows (tuned 2026-12-06;
    # results/h100/planes_h100.md), the H200's borrowed at 2-8 rows where the H100 has no bucket of its own
    planes = qm.DotConfig(128, 16, 128, 4, 3, 2, dot_16bit=True, planes=True)
    for device in (H200, H100):
        assert [qm.quant_config(device, 4, m, torch.float16) for m in (2, 8, 16)] == [planes] * 3
    assert not qm.quant_config(H100, 4, 64, torch.float16).planes
    assert qm.quant_config(INTERPRETER, 4, 16, torch.float16) == qm.default_config(4, 16)


@pytest.mark.parametrize(("group", "programs", "causal", "share"), [
    (4, 128, True, 4),  # 1 x 32/8 heads x 2048 keys in 128-key blocks: 512 programs, 3.9 an SM
    (4, 256, True, 4),  # 1024, 7.8 an SM
    (4, 512, True, 2),  # four programs a KV head's group would be 2048: two
    (4, 1024, True, 1),
    (8, 100, True, 8),
    (6, 100, True, 6),  # a divisor of the group, not a power of two
    (6, 200, True, 3),
    (1, 8, True, 1),  # no group to share
    (4, 128, False, 1),  # not causal, the work is even: shared only while SMs would idle
    (4, 16, False, 4),
    (4, 40, False, 2),
])
def test_the_dkdv_programs_share_a_gqa_group_until_the_grid_is_full(group: int, programs: int, causal: bool,
                                                                    share: int) -> None:
    fa = SOLUTIONS["flash_attention"]
    assert fa.dkdv_split(group, programs, causal, 132, 8) == share
    assert fa.dkdv_split(group, programs, causal, 132, 0) == 1  # a table without the setting never shares


def test_no_gpu_gets_tma_without_the_engine_nor_more_shared_memory_than_it_has() -> None:
    fa = SOLUTIONS["flash_attention"]
    for device in KNOWN_GPUS.values():
        for causal, length, d in itertools.product((False, True), ("", *(f"S<={b}" for b in fa.SHORT_ATTENTION)), (64, 128)):
            cfg = fa.forward_config(device, d, torch.float16, causal, length)
            assert not cfg.tma or device.capability >= (9, 0)
            assert fa._smem("forward", cfg.__dict__, 2, d, device.capability >= (8, 0)) <= device.smem_per_block
            assert cfg.block_m % cfg.block_n == 0  # the causal diagonal's blocks
        tiles = SOLUTIONS["tiling"].matmul_config(device, torch.float16)
        assert all(SOLUTIONS["tiling"]._smem_bytes(c, 2) <= device.smem_per_block for c in tiles)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_search_space_tunes_a_graded_task_into_buckets_the_wrappers_read(slug: str) -> None:
    module, spec = SOLUTIONS[slug], load_spec(slug)
    tasks = {p.task for p in spec.parts}
    reference = module.CONFIGS.gpus[module.CONFIGS.data["reference"]]
    assert module.SEARCH_SPACE
    for space in module.SEARCH_SPACE:
        assert space.task in tasks and space.candidates
        assert set(space.buckets) <= set(reference[space.kernel]), f"{space.kernel}: buckets the table does not have"
        assert all(params.get("dtype") in ("float32", "float16", "bfloat16") for calls in space.buckets.values() for params in calls)
    assert set(module.CONFIGS.gpus["interpreter"]) >= set(reference)  # the interpreter has every kernel


@pytest.mark.parametrize("device, dependent", [(H200, True), (Device("GPU sm_80", (8, 0), 108, 166_912), False),
                                               (INTERPRETER, False)])  # fmt: skip
def test_the_decode_combine_is_a_dependent_launch_from_hopper_on(monkeypatch: pytest.MonkeyPatch, device: Device,
                                                                 dependent: bool) -> None:  # fmt: skip
    """On sm_90 and newer the combine kernel is launched while the split kernel finishes (launch_pdl) and waits on the
    GPU for its results (AFTER_SPLIT); elsewhere it is launched after it, as the interpreter runs it."""
    fa = SOLUTIONS["flash_attention"]
    launches: list[tuple] = []
    monkeypatch.setattr(fa, "launch", lambda kernel, grid, *args, **meta: launches.append((kernel, grid, meta)))
    monkeypatch.setattr(fa, "device_of", lambda t: device)
    o_part, lse_part = torch.zeros(6, 3, 16), torch.zeros(6, 3)
    fa._combine(o_part, lse_part, torch.empty(2, 3, 1, 16), torch.empty(2, 3, 1), 4096)
    (kernel, grid, meta), = launches
    assert kernel is fa._attn_decode_combine_kernel and grid == (6,) and meta["BLOCK_S"] == 4
    assert meta["AFTER_SPLIT"] is dependent and meta.get("launch_pdl", False) is dependent
    assert device.dependent_launch is dependent
