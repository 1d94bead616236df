"""A benchmark's own file or folder given where a bundle goes: the one-line error says
how to make a bundle of it (``tiap traces build``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.parametrize("command", [["rescore"], ["cases", "extract"], ["audit"]])
def test_a_benchmark_file_where_a_bundle_goes_suggests_traces_build(
    tiap_cli, command: list[str], tmp_path: Path
) -> None:
    benchmark = tmp_path / "locomo10.json"
    benchmark.write_text(json.dumps([{"sample_id": "conv-1"}]), encoding="utf-8")
    folder = tmp_path / "beam"
    folder.mkdir()
    out = ["--db", tmp_path / "w.sqlite"] if command[0] == "cases" else ["--out", tmp_path / "o"]
    if command[0] == "audit":
        out += ["--panel", "offline"]
    for given in (benchmark, folder):
        result = tiap_cli(*command, given, *out)
        assert result.code == 2, result.err
        lines = result.err.strip().splitlines()
        assert len(lines) == 1, result.err
        assert "bundle.toml" in lines[0]
        assert "'tiap traces build DATASET PATH --out DIR'" in lines[0]
