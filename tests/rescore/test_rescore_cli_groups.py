"""The rescore summary names each design group: a bundle with BM25 and dense runs has a
``parser_max_facts`` family per retriever, and each summary line says which."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundle_support import random_bundle
from tiap.cli import main
from tiap.traces.bundle import write_bundle


def test_summary_says_which_retriever_each_design_line_is_for(tmp_path: Path, capsys) -> None:
    bundle = random_bundle(5, n_queries=60, n_sources=80, n_runs=4)
    for run, (retriever, facts) in zip(
        ("run0", "run1", "run2", "run3"),
        (("bm25", 1), ("bm25", 5), ("dense", 1), ("dense", 5)),
        strict=True,
    ):
        bundle.config.runs[run].retriever = retriever
        bundle.config.runs[run].config = {"parser_max_facts": facts}
    path = write_bundle(bundle, tmp_path / "bundle")
    with pytest.raises(SystemExit) as exc:
        main(["rescore", str(path), "--out", str(tmp_path / "out"), "--resamples", "20"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("best parser_max_facts")]
    assert len(lines) == 2
    assert lines[0].startswith("best parser_max_facts on ndcg@60 (retriever=bm25): ")
    assert lines[1].startswith("best parser_max_facts on ndcg@60 (retriever=dense): ")
    assert "wrote " + str(tmp_path / "out" / "report.html") in out
    md = (tmp_path / "out" / "report.md").read_text()
    assert "### parser_max_facts (fixed: retriever=bm25)" in md
    assert "### parser_max_facts (fixed: retriever=dense)" in md
