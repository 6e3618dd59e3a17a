"""`python -m autograder tune --smoke`: the whole tuning path under the interpreter, on a copy of the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.tune import describe, tune
from conftest import REPO_ROOT
from course.loader import load_kernels


@pytest.mark.slow
def test_a_smoke_tuning_checks_times_and_writes_an_entry_beside_the_solutions_table(tmp_path: Path) -> None:
    before = (REPO_ROOT / "solutions" / "tiling" / "configs.json").read_text()
    lines: list[str] = []
    results = tune("tiling", smoke=True, out=tmp_path / "configs.json", log=lines.append)
    spaces = [s for s in load_kernels("tiling", "solutions").SEARCH_SPACE if "float32" in s.buckets]
    space, tma_space = (next(s for s in spaces if s.kernel == kernel) for kernel in ("matmul", "tma"))
    # the 16-bit spaces have no CPU-tier case; the matmul's float32 one keeps its two candidates, both correct, as a
    # list (the autotuner's choices); the TMA kernel's float32 one keeps the faster of its first two
    result, tma_result = results
    assert (result.kernel, result.bucket) == ("matmul", "float32") and (tma_result.kernel, tma_result.bucket) == ("tma", "float32")
    assert all(not t.problem and len(t.ms) == 1 and t.ms[0] > 0 for t in result.trials + tma_result.trials)
    table = json.loads((tmp_path / "configs.json").read_text())
    entry = table["gpus"]["interpreter"]
    assert sorted(map(json.dumps, entry["matmul"]["float32"])) == sorted(json.dumps(c[0]) for c in space.candidates[:2])
    assert entry["meta"]["command"] == "python -m autograder tune tiling --smoke"
    # the bucket it could not measure keeps the entry's earlier settings, and the meta says so
    assert entry["matmul"]["16-bit"] == json.loads(before)["gpus"]["interpreter"]["matmul"]["16-bit"]
    assert "matmul [16-bit]" in entry["meta"]["kept"] and "pad [all]" in entry["meta"]["kept"]
    assert entry["tma"]["float32"] in tma_space.candidates[:2] and "tma [16-bit]" in entry["meta"]["kept"]
    # the measurement ran after the search, against the first tile this run chose (float32 here, under the interpreter)
    tail = entry["tail"]["16-bit"]
    assert tail["speed"] > 0 and tail["against"] == [entry["matmul"]["float32"][0][k] for k in
                                                     ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps")]  # fmt: skip
    assert "tail [16-bit]" not in entry["meta"]["kept"] and "tail [float32]" in entry["meta"]["kept"]
    # the smaller TMA tiles: the reference GPU's, each with a speed against this entry's 16-bit TMA tile
    small = entry["tma_small"]["16-bit"]
    reference = json.loads(before)["gpus"]["NVIDIA H200"]["tma_small"]["16-bit"]
    assert [t["block_m"] * t["block_n"] for t in small] == [t["block_m"] * t["block_n"] for t in reference]
    assert all(t["speed"] > 0 and t["against"] == [entry["tma"]["16-bit"][k] for k in
               ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps")] for t in small)  # fmt: skip
    assert table["gpus"]["NVIDIA H200"] == json.loads(before)["gpus"]["NVIDIA H200"]  # other GPUs' entries kept
    assert (REPO_ROOT / "solutions" / "tiling" / "configs.json").read_text() == before
    assert any("no CPU-tier case" in line for line in lines) and any("chosen:" in line for line in lines)


def test_settings_are_described_in_a_line() -> None:
    assert describe({"block": 512, "num_warps": 2}) == "block=512 num_warps=2"
    assert describe([{"a": 1}, {"a": 2}]) == "a=1 | a=2"
    assert describe({"path": "gemv", "cfg": {"block_n": 8}}) == "path=gemv cfg=block_n=8"
