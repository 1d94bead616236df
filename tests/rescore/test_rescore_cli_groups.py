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


def test_the_summary_shows_only_the_settings_that_tell_groups_apart(
    tiap_cli, tmp_path: Path
) -> None:
    bundle = random_bundle(5, n_queries=60, n_sources=80, n_runs=4)
    for run, (retriever, facts) in zip(
        ("run0", "run1", "run2", "run3"),
        (("bm25", 1), ("bm25", 5), ("dense", 1), ("dense", 5)),
        strict=True,
    ):
        bundle.config.runs[run].retriever = retriever
        # the same BM25 parameters in every run: nothing that tells the groups apart
        bundle.config.runs[run].config = {"parser_max_facts": facts, "k1": 1.5, "b": 0.75}
    path = write_bundle(bundle, tmp_path / "bundle")
    out = tiap_cli.ok("rescore", path, "--out", tmp_path / "out", "--resamples", "20").out
    lines = [line for line in out.splitlines() if line.startswith("best parser_max_facts")]
    assert lines[0].startswith("best parser_max_facts on ndcg@60 (retriever=bm25): ")
    assert lines[1].startswith("best parser_max_facts on ndcg@60 (retriever=dense): ")
    assert not [line for line in out.splitlines() if line.startswith("best k1")]  # no family
    # the report keeps every fixed setting
    md = (tmp_path / "out" / "report.md").read_text()
    assert "### parser_max_facts (fixed: retriever=bm25, b=0.75, k1=1.5)" in md


def test_a_lone_family_names_no_settings(tiap_cli, tmp_path: Path) -> None:
    bundle = random_bundle(5, n_queries=60, n_sources=80, n_runs=2)
    for run, facts in zip(("run0", "run1"), (1, 5), strict=True):
        bundle.config.runs[run].retriever = "bm25"
        bundle.config.runs[run].config = {"parser_max_facts": facts, "k1": 1.5}
    path = write_bundle(bundle, tmp_path / "bundle")
    out = tiap_cli.ok("rescore", path, "--out", tmp_path / "out", "--resamples", "20").out
    lines = [line for line in out.splitlines() if line.startswith("best parser_max_facts")]
    assert len(lines) == 1
    assert lines[0].startswith("best parser_max_facts on ndcg@60: "), lines[0]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "### parser_max_facts (fixed: retriever=bm25, k1=1.5)" in md
