"""The target-sensitivity analysis on hand-made bundles, worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from bundle_support import (
    CATEGORIES,
    IDCG2,
    IDCG3,
    MEMORIES,
    QUERIES,
    RUN_A,
    RUN_B,
    make_bundle,
    random_bundle,
    two_run_bundle,
)
from tiap.errors import TiapError
from tiap.rescore.api import rescore_bundle
from tiap.rescore.report_models import RescoreReport
from tiap.traces.models import StoreConfig


def _bundle():
    return two_run_bundle()


def _report(bundle=None, **kw) -> RescoreReport:
    kw.setdefault("ks", (3,))
    kw.setdefault("resamples", 200)
    return rescore_bundle(bundle or _bundle(), **kw).report


def test_target_means_and_exclusions() -> None:
    rep = _report()
    a = rep.runs["A"]
    assert a.targets["raw"].means["ndcg@3"] == pytest.approx((0.5 + 1 + 0.5 + 0) / 4)
    assert a.targets["source"].means["ndcg@3"] == pytest.approx(
        (1.5 / IDCG2 + 1 / IDCG3 + 0.5 + 0) / 4
    )
    # canonical: only q1 and q2 have a non-empty target
    assert a.targets["canonical"].n_evaluated == 2
    assert a.targets["canonical"].n_empty_target == 2
    assert a.targets["canonical"].means["ndcg@3"] == pytest.approx(0.5)
    assert rep.exclusions == {
        "A": {"raw": 0, "source": 0, "canonical": 2},
        "B": {"raw": 0, "source": 0, "canonical": 2},
    }
    assert a.shared_all.n == 2
    assert a.targets["source"].mean_target_size == pytest.approx((2 + 3 + 1 + 1) / 4)


def test_shared_subset_differences_and_instability() -> None:
    rep = _report()
    sr = rep.runs["A"].pairs["source-raw"]
    assert (sr.a, sr.b, sr.n_shared) == ("raw", "source", 4)
    diffs = [1.5 / IDCG2 - 0.5, 1 / IDCG3 - 1, 0.0, 0.0]
    assert sr.difference["ndcg@3"].mean == pytest.approx(np.mean(diffs), abs=1e-9)
    inst = sr.instability["ndcg@3"]
    # q1 (+0.42) and q2 (-0.53) change, both by at least 0.1; q3 and q4 do not change
    assert (inst.overall.n, inst.overall.n_changed, inst.overall.n_large) == (4, 2, 2)
    assert inst.overall.share_changed == 0.5
    assert inst.by_category["A"].share_changed == 1.0
    assert inst.by_category["B"].n_changed == 0
    cr = rep.runs["A"].pairs["canonical-raw"]
    # shared subset: q1 and q2 only; differences 1 - 0.5 and 0 - 1
    assert cr.n_shared == 2
    assert cr.means_a["ndcg@3"] == pytest.approx(0.75)
    assert cr.difference["ndcg@3"].mean == pytest.approx(-0.25)
    assert cr.difference["ndcg@3"].ci_low <= -0.25 <= cr.difference["ndcg@3"].ci_high
    # pooled over runs A and B: 8 (query, run) pairs for source-raw
    pooled = rep.pooled["source-raw"].instability["ndcg@3"].overall
    # run B: q1 1/IDCG2-1 changes, q2 1.5/IDCG3-0.5 changes (+0.204), q3, q4 unchanged
    assert (pooled.n, pooled.n_changed, pooled.n_large) == (8, 4, 4)
    assert rep.headline.instability["source-raw"] == pooled
    assert rep.headline.measure == "ndcg@3"


def test_winner_flip_between_targets() -> None:
    rep = _report(subsets="per-target")
    (pair,) = rep.run_pairs
    assert (pair.run_a, pair.run_b) == ("A", "B")
    raw = pair.targets["raw"].difference["ndcg@3"]
    canonical = pair.targets["canonical"].difference["ndcg@3"]
    # raw: A 0.5 vs B 0.875 -> B wins; canonical on q1, q2: A 0.5 vs B (0 + 1/IDCG2)/2
    assert raw.mean == pytest.approx(0.5 - 0.875)
    assert canonical.mean == pytest.approx(0.5 - (1 / IDCG2) / 2)
    assert pair.winner["ndcg@3"] == {"raw": "B", "source": "B", "canonical": "A"}
    assert pair.winner_flip["ndcg@3"] is True
    assert pair.significant_flip["ndcg@3"] is False  # two queries cannot exclude 0 both ways
    assert rep.headline.winner_flips[0].winners["canonical"] == "A"
    # hit@3 under canonical: A hits q1 only, B hits q2 only -> 0.5 each, a tie
    assert pair.winner["hit@3"]["canonical"] == "tie"
    assert pair.winner["hit@3"]["raw"] == "B"  # A misses q4 in the top 3


def test_design_recommendation_per_setting() -> None:
    bundle = make_bundle(
        QUERIES,
        {"sparse": MEMORIES, "dense": MEMORIES},
        {"bm25-f1": ("sparse", RUN_A), "bm25-f3": ("dense", RUN_B), "vec-f3": ("dense", RUN_A)},
        categories=CATEGORIES,
        retrievers={"bm25-f1": "bm25", "bm25-f3": "bm25", "vec-f3": "vector"},
    )
    bundle.config.stores = {
        "sparse": StoreConfig(config={"parser_max_facts": 1}),
        "dense": StoreConfig(config={"parser_max_facts": 3}),
    }
    rep = _report(bundle, subsets="per-target")
    families = {f.key: f for f in rep.design}
    assert set(families) == {"parser_max_facts", "retriever"}
    pmf = families["parser_max_facts"]
    assert pmf.fixed == {"retriever": "bm25"}
    assert [(s.run, s.value, s.label) for s in pmf.settings] == [
        ("bm25-f1", 1, "1"),
        ("bm25-f3", 3, "3"),
    ]
    # bm25-f1 ranks like run A, bm25-f3 like run B: B wins raw, A wins canonical
    assert pmf.winner["raw"]["ndcg@3"] == ["3"]
    assert pmf.winner["canonical"]["ndcg@3"] == ["1"]
    assert pmf.winner_flip["ndcg@3"] is True
    assert pmf.n_shared == {"raw": 4, "source": 4, "canonical": 2}
    assert pmf.means["raw"]["ndcg@3"] == {"bm25-f1": 0.5, "bm25-f3": 0.875}
    ret = families["retriever"]
    assert ret.fixed == {"parser_max_facts": 3}
    assert ret.winner["raw"]["ndcg@3"] == ["bm25"]
    headline = {d.key: d for d in rep.headline.design}
    assert headline["parser_max_facts"].winner == {
        "raw": ["3"],
        "source": ["3"],
        "canonical": ["1"],
    }


def test_confound_matches_scipy_and_k_sensitivity() -> None:
    bundle = random_bundle(5, n_queries=250, n_sources=200, n_runs=2)
    result = rescore_bundle(bundle, ks=(5, 20), resamples=100)
    rep = result.report
    xs, ys = [], []
    for scores in result.scores.runs.values():
        mask = (scores.sizes["raw"] > 0) & (scores.sizes["source"] > 0)
        col = result.scores.column("ndcg@20")
        xs.append((scores.sizes["source"] - scores.sizes["raw"])[mask])
        ys.append((scores.values["source"][:, col] - scores.values["raw"][:, col])[mask])
    x, y = np.concatenate(xs), np.concatenate(ys)
    conf = rep.pooled["source-raw"].confound["ndcg@20"]
    ref = sps.pearsonr(x, y)
    assert conf.n == x.size
    assert conf.pearson_r == pytest.approx(ref.statistic, abs=1e-9)
    assert conf.p_value == pytest.approx(ref.pvalue, rel=1e-6)
    one = sps.ttest_1samp(y[x == 1], 0.0)
    assert conf.one_added.n == int((x == 1).sum())
    assert conf.one_added.t == pytest.approx(one.statistic, abs=1e-8)
    ks = rep.pooled["source-raw"].k_sensitivity["ndcg"]
    assert [k.k for k in ks] == [5, 20]
    for row in ks:
        assert row.relative_shift == pytest.approx(row.shift / row.mean_a, abs=1e-9)
    # instability is reported for nDCG measures only
    assert set(rep.runs["run0"].pairs["source-raw"].instability) == {"ndcg@5", "ndcg@20"}


def test_intervals_do_not_depend_on_other_runs() -> None:
    bundle = random_bundle(6, n_queries=150, n_sources=120, n_runs=3)
    full = rescore_bundle(bundle, ks=(10,), resamples=300).report
    alone = rescore_bundle(bundle, ks=(10,), resamples=300, runs=["run1"]).report
    for name, pair in alone.runs["run1"].pairs.items():
        assert pair.difference == full.runs["run1"].pairs[name].difference
    other_seed = rescore_bundle(bundle, ks=(10,), resamples=300, seed=7).report
    a = full.runs["run1"].pairs["source-raw"].difference["ndcg@10"]
    b = other_seed.runs["run1"].pairs["source-raw"].difference["ndcg@10"]
    assert a.mean == b.mean
    assert (a.ci_low, a.ci_high) != (b.ci_low, b.ci_high)


def test_bad_parameters_are_user_errors() -> None:
    bundle = _bundle()
    with pytest.raises(TiapError, match="unknown run 'C'"):
        rescore_bundle(bundle, runs=["C"])
    with pytest.raises(TiapError, match="unknown measure"):
        rescore_bundle(bundle, metrics="ndcg,bleu")
    with pytest.raises(TiapError, match="resamples"):
        rescore_bundle(bundle, resamples=0)
    with pytest.raises(TiapError, match="primary measure"):
        rescore_bundle(bundle, ks=(3,), primary="ndcg@5")
    bundle.runs, bundle.config.runs = {}, {}
    with pytest.raises(TiapError, match="no runs"):
        rescore_bundle(bundle)


def test_per_query_frame_layout() -> None:
    result = rescore_bundle(_bundle(), ks=(3,), metrics="ndcg,hit", resamples=50)
    frame = result.per_query
    assert list(frame.columns) == ["run", "query_id", "target", "target_size", "ndcg@3", "hit@3"]
    assert len(frame) == 2 * 4 * 3
    assert frame.iloc[:3][["run", "query_id", "target"]].values.tolist() == [
        ["A", "q1", "raw"],
        ["A", "q1", "source"],
        ["A", "q1", "canonical"],
    ]
    empty = frame[(frame.target == "canonical") & (frame.query_id == "q3")]
    assert empty.target_size.tolist() == [0, 0]
    assert empty["ndcg@3"].isna().all()
    row = frame[(frame.run == "A") & (frame.query_id == "q1") & (frame.target == "source")]
    assert row["ndcg@3"].item() == pytest.approx(1.5 / IDCG2)
    # the report validates against its own schema after a JSON round trip
    again = RescoreReport.model_validate_json(result.report.model_dump_json())
    assert again == result.report
