"""Pooled figures leave out runs on raw-only stores (no derived memory: Source = Raw on
every query, no Canonical target) unless ``--pool-raw-only``; their count is shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundle_support import MEMORIES, QUERIES, RUN_A, RUN_B, make_bundle
from tiap.rescore.api import rescore_bundle
from tiap.traces.bundle import read_bundle


@pytest.fixture(scope="module")
def sample(sample_bundle_dir: Path):
    bundle = read_bundle(sample_bundle_dir)
    left_out = rescore_bundle(bundle, resamples=20)
    pooled_all = rescore_bundle(bundle, resamples=20, pool_raw_only=True)
    return left_out, pooled_all


def test_raw_only_runs_are_left_out_of_the_pooled_figures(sample) -> None:
    left_out, pooled_all = sample
    rep, rep_all = left_out.report, pooled_all.report
    assert rep.parameters.pool_raw_only is False
    assert rep.pooled_runs is not None
    assert rep.pooled_runs.left_out == ["lexical-raw"]
    assert rep.pooled_runs.runs == ["lexical-facts1", "lexical-facts3"]
    assert rep.pooled_runs.n_raw_only == 1
    assert rep_all.pooled_runs is not None
    assert rep_all.pooled_runs.left_out == []
    m = rep.parameters.primary_measure
    for name, pp in rep.pooled.items():
        # n is the (query, run) pairs of the pooled runs' shared subsets
        assert pp.n == sum(rep.runs[r].pairs[name].n_shared for r in rep.pooled_runs.runs)
        assert rep_all.pooled[name].n == sum(rr.pairs[name].n_shared for rr in rep.runs.values())
    # the raw-only run adds Source-Raw pairs that never change, and nothing else
    raw_run = rep.runs["lexical-raw"].pairs["source-raw"]
    assert raw_run.n_shared > 0
    assert raw_run.instability[m].overall.n_changed == 0
    sr, sr_all = rep.pooled["source-raw"], rep_all.pooled["source-raw"]
    assert sr_all.n == sr.n + raw_run.n_shared
    assert sr_all.instability[m].overall.n_changed == sr.instability[m].overall.n_changed
    share, share_all = (x.instability[m].overall.share_changed for x in (sr, sr_all))
    assert share is not None
    assert share_all is not None
    assert share > share_all
    assert rep.headline.instability["source-raw"].n == sr.n


def test_the_markdown_says_which_runs_are_pooled(sample) -> None:
    left_out, pooled_all = sample
    md = left_out.markdown()
    assert "| 2 runs, raw-only left out | source-raw |" in md
    assert "The pooled rows leave out 1 run(s) on a raw-only store" in md
    assert "lexical-raw); `--pool-raw-only` pools them too." in md
    md_all = pooled_all.markdown()
    assert "| all runs | source-raw |" in md_all
    assert "raw-only left out" not in md_all


def test_every_run_raw_only_pools_them_all() -> None:
    raw = [m for m in MEMORIES if m.raw]
    keep = {q: [m for m in r if not m.startswith("f")] for q, r in RUN_A.items()}
    other = {q: [m for m in r if not m.startswith("f")] for q, r in RUN_B.items()}
    bundle = make_bundle(QUERIES, {"raw": raw}, {"A": ("raw", keep), "B": ("raw", other)})
    rep = rescore_bundle(bundle, ks=(3,), resamples=10).report
    assert rep.pooled_runs is not None
    assert (rep.pooled_runs.runs, rep.pooled_runs.left_out) == (["A", "B"], [])
    assert rep.pooled_runs.n_raw_only == 2


def test_cli_pool_raw_only(tiap_cli, sample_bundle_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    tiap_cli.ok("rescore", sample_bundle_dir, "--out", out, "--resamples", "20",
                "--pool-raw-only")  # fmt: skip
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["parameters"]["pool_raw_only"] is True
    assert report["pooled_runs"]["left_out"] == []
    assert report["pooled_runs"]["n_raw_only"] == 1
