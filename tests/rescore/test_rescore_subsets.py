"""Matched and per-target subsets for run comparisons and design recommendations.

Matched (the paper's, the default): one set of queries for every target, those where
every compared target is non-empty for every run compared. Per-target: each target's
own non-empty queries. Worked by hand on the two-run bundle of ``bundle_support``
(q3 and q4 have no Canonical target, so the matched subset is q1, q2), and checked on
the sample bundle against the target sizes of ``per_query.csv``.
"""

from __future__ import annotations

import csv
import json
from itertools import combinations
from pathlib import Path

import pytest

from bundle_support import (
    CATEGORIES,
    IDCG2,
    IDCG3,
    MEMORIES,
    QUERIES,
    RUN_A,
    RUN_B,
    make_bundle,
    mem,
    two_run_bundle,
)
from tiap.errors import TiapError
from tiap.rescore.api import rescore_bundle
from tiap.traces.models import StoreConfig


def test_matched_is_the_default_and_compares_the_same_queries_for_every_target() -> None:
    rep = rescore_bundle(two_run_bundle(), ks=(3,), resamples=200).report
    assert rep.parameters.subsets == "matched"
    (pair,) = rep.run_pairs
    assert pair.subsets == "matched"
    assert {t: x.n_shared for t, x in pair.targets.items()} == {
        "raw": 2,
        "source": 2,
        "canonical": 2,
    }
    # q1, q2: raw A (0.5 + 1)/2 = B (1 + 0.5)/2: a tie
    assert pair.targets["raw"].difference["ndcg@3"].mean == pytest.approx(0.0)
    # source A (1.5/IDCG2 + 1/IDCG3)/2 - B (1/IDCG2 + 1.5/IDCG3)/2
    assert pair.targets["source"].difference["ndcg@3"].mean == pytest.approx(
        (0.5 / IDCG2 - 0.5 / IDCG3) / 2
    )
    assert pair.targets["canonical"].difference["ndcg@3"].mean == pytest.approx(
        0.5 - (1 / IDCG2) / 2
    )
    # on the matched subset B never wins: no flip (per target, B wins raw: a flip)
    assert pair.winner["ndcg@3"] == {"raw": "tie", "source": "A", "canonical": "A"}
    assert pair.winner_flip["ndcg@3"] is False
    assert rep.headline.subsets == "matched"
    assert rep.headline.winner_flips == []
    other = rep.other_subsets
    assert other is not None
    assert (other.subsets, other.differs) == ("per-target", True)
    (per_target,) = other.run_pairs
    assert per_target.subsets == "per-target"
    assert per_target.targets["raw"].n_shared == 4
    assert per_target.winner["ndcg@3"] == {"raw": "B", "source": "B", "canonical": "A"}
    assert per_target.winner_flip["ndcg@3"] is True


def test_per_target_puts_the_matched_view_beside_it() -> None:
    rep = rescore_bundle(two_run_bundle(), ks=(3,), resamples=200, subsets="per-target").report
    assert rep.parameters.subsets == rep.headline.subsets == "per-target"
    assert len(rep.headline.winner_flips) == 1
    assert rep.other_subsets is not None
    assert rep.other_subsets.subsets == "matched"
    assert rep.other_subsets.run_pairs[0].winner_flip["ndcg@3"] is False


def test_design_recommendation_on_the_matched_subset() -> None:
    bundle = make_bundle(
        QUERIES,
        {"sparse": MEMORIES, "dense": MEMORIES},
        {"bm25-f1": ("sparse", RUN_A), "bm25-f3": ("dense", RUN_B)},
        categories=CATEGORIES,
        retrievers={"bm25-f1": "bm25", "bm25-f3": "bm25"},
    )
    bundle.config.stores = {
        "sparse": StoreConfig(config={"parser_max_facts": 1}),
        "dense": StoreConfig(config={"parser_max_facts": 3}),
    }
    rep = rescore_bundle(bundle, ks=(3,), resamples=100).report
    (fam,) = rep.design
    assert fam.subsets == "matched"
    assert fam.n_shared == {"raw": 2, "source": 2, "canonical": 2}
    assert fam.means["raw"]["ndcg@3"] == {"bm25-f1": 0.75, "bm25-f3": 0.75}
    # raw: a tie of both settings; source and canonical: 1 wins; per target raw: 3 wins
    assert fam.winner["raw"]["ndcg@3"] == ["1", "3"]
    assert fam.winner["canonical"]["ndcg@3"] == ["1"]
    assert fam.winner_flip["ndcg@3"] is True  # ("1", "3") vs ("1",): the winners differ
    assert rep.other_subsets is not None
    (per_target,) = rep.other_subsets.design
    assert per_target.n_shared == {"raw": 4, "source": 4, "canonical": 2}
    assert per_target.winner["raw"]["ndcg@3"] == ["3"]


def test_a_raw_only_store_is_compared_under_raw_and_source() -> None:
    """A store without derived memories has no Canonical target: its runs are compared
    with others on the queries where Raw and Source are non-empty for both."""
    raw_only = [m for m in MEMORIES if m.raw]
    ranked = {q: [m for m in r if not m.startswith("f")] for q, r in RUN_B.items()}
    bundle = make_bundle(
        QUERIES, {"st": MEMORIES, "raw": raw_only}, {"A": ("st", RUN_A), "R": ("raw", ranked)}
    )
    rep = rescore_bundle(bundle, ks=(3,), resamples=50).report
    (pair,) = rep.run_pairs
    assert {t: x.n_shared for t, x in pair.targets.items()} == {
        "raw": 4,
        "source": 4,
        "canonical": 0,
    }
    assert "canonical" not in pair.winner["ndcg@3"]
    assert rep.other_subsets is not None
    assert rep.other_subsets.differs is False


def test_markdown_says_which_subsets_and_shows_both_with_n() -> None:
    result = rescore_bundle(two_run_bundle(), ks=(3,), resamples=100)
    md = result.markdown()
    assert "| n (matched subset) |" in md
    assert "flip on ndcg@3 (matched subset)" not in md  # no flip on the matched subset
    assert "## Matched and per-target subsets" in md
    assert "| A | B | raw | 2 | 4 | tie | B |" in md
    assert "Winner flips on ndcg@3: 0 of 1 run pairs on the matched subset, 1 on" in md
    per_target = rescore_bundle(two_run_bundle(), ks=(3,), resamples=100, subsets="per-target")
    md = per_target.markdown()
    assert "| n (per-target subsets) |" in md
    assert "flip on ndcg@3 (per-target subsets)" in md
    assert "| A | B | raw | 2 | 4 | tie | B |" in md  # matched first, whichever is chosen
    assert "Winner flips between targets: run pairs, per-target subsets" in per_target.html()


def test_subsets_is_checked() -> None:
    with pytest.raises(TiapError, match="--subsets must be one of matched, per-target"):
        rescore_bundle(two_run_bundle(), ks=(3,), resamples=10, subsets="shared")


def test_cli_subsets_option(tiap_cli, sample_bundle_dir: Path, tmp_path: Path) -> None:
    bad = tiap_cli("rescore", sample_bundle_dir, "--out", tmp_path / "bad", "--subsets", "all")
    assert bad.code == 2
    assert "--subsets must be one of matched, per-target (got 'all')" in bad.err
    assert len(bad.err.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists()
    out = tmp_path / "pt"
    done = tiap_cli.ok(
        "rescore", sample_bundle_dir, "--out", out, "--resamples", "50", "--subsets", "per-target"
    )
    assert "winner flips on ndcg@10 (per-target subsets)" in done.out
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["parameters"]["subsets"] == "per-target"
    assert report["other_subsets"]["subsets"] == "matched"
    assert "| n (per-target subsets) |" in (out / "report.md").read_text(encoding="utf-8")


def _sizes(per_query: Path) -> dict[tuple[str, str], dict[str, int]]:
    """(run, query) -> target -> target size, from per_query.csv."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    with per_query.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            out.setdefault((row["run"], row["query_id"]), {})[row["target"]] = int(
                row["target_size"]
            )
    return out


def test_matched_n_on_the_sample_bundle_from_per_query(
    tiap_cli, sample_bundle_dir: Path, tmp_path: Path
) -> None:
    """n of every run pair and design family, recounted from the target sizes."""
    out = tmp_path / "m"
    tiap_cli.ok("rescore", sample_bundle_dir, "--out", out, "--resamples", "50")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    sizes = _sizes(out / "per_query.csv")
    queries = sorted({q for _, q in sizes})
    targets = report["parameters"]["targets"]

    def matched(runs: list[str]) -> dict[str, int]:
        compared = [t for t in targets if all(any(sizes[(r, q)][t] for q in queries) for r in runs)]
        common = {q for q in queries if all(sizes[(r, q)][t] for r in runs for t in compared)}
        return {t: len(common) if t in compared else 0 for t in targets}

    pairs = {(p["run_a"], p["run_b"]): p for p in report["run_pairs"]}
    assert set(pairs) == set(combinations(report["parameters"]["runs"], 2))
    for (a, b), p in pairs.items():
        assert {t: x["n_shared"] for t, x in p["targets"].items()} == matched([a, b])
    for fam in report["design"]:
        assert fam["n_shared"] == matched([s["run"] for s in fam["settings"]])
    # the sample's raw-only run is compared under raw and source only
    assert pairs[("lexical-facts1", "lexical-raw")]["targets"]["canonical"]["n_shared"] == 0


def test_equal_masks_are_not_reported_as_differing() -> None:
    # one query with every target non-empty for both runs: both views coincide
    bundle = make_bundle(
        {"q1": ["s1"]},
        {"st": [mem("r1", "s1", "raw"), mem("f1", "s1", "fact")]},
        {"A": ("st", {"q1": ["r1"]}), "B": ("st", {"q1": ["f1"]})},
    )
    rep = rescore_bundle(bundle, ks=(1,), resamples=10).report
    assert rep.other_subsets is not None
    assert rep.other_subsets.differs is False
    assert (
        "Here both give the same queries for every comparison."
        in rescore_bundle(bundle, ks=(1,), resamples=10).markdown()
    )


def test_the_suite_says_which_subsets_its_flips_are_on() -> None:
    from tiap.rescore.suite import suite_report
    from tiap.rescore.suite_render import markdown

    for subsets in ("matched", "per-target"):
        report = rescore_bundle(two_run_bundle(), ks=(3,), resamples=20, subsets=subsets).report
        suite = suite_report([("Dialogue/X/t", "Dialogue", report)], "ndcg@3")
        head = suite.tasks[0].headline
        assert head.subsets == subsets
        assert head.winner_flips == (0 if subsets == "matched" else 1)
        assert f"winner flips ({subsets} subsets)" in markdown(suite)
