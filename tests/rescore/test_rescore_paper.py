"""The paper's further analyses on a hand-made bundle, worked out by hand: coverage control
(Section 5.1), target ordering (Table 7), saturation (Appendix I), shift distributions."""

from __future__ import annotations

import numpy as np
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
    random_bundle,
    two_run_bundle,
)
from tiap.rescore.api import rescore_bundle
from tiap.rescore.ordering import is_containment_consistent, is_monotone, order_text
from tiap.rescore.report_models import RescoreReport
from tiap.rescore.shifts import EDGES

RESAMPLES, SEED = 500, 1337


def _report(**kw) -> RescoreReport:
    return rescore_bundle(two_run_bundle(), ks=(3,), resamples=RESAMPLES, seed=SEED, **kw).report


def _gap_oracle(
    raw: dict[str, list[float]], covered: list[bool], scored: dict[str, list[bool]] | None = None
) -> np.ndarray:
    """Per resample (plain loop, the documented draws): the mean over runs of
    mean Raw(covered) - mean Raw(excluded), a run's groups holding only the queries it
    scores; nan where a group draws nothing."""
    rng = np.random.default_rng(SEED)
    cov = np.array(covered)
    out = []
    for _ in range(RESAMPLES):
        idx = rng.integers(0, len(cov), len(cov), dtype=np.int32)
        gaps = []
        for run, values in raw.items():
            inside = np.array((scored or {}).get(run, [True] * len(cov)))[idx]
            v, c = np.array(values)[idx], cov[idx]
            c_in, e_in = c & inside, ~c & inside
            gaps.append(v[c_in].mean() - v[e_in].mean() if c_in.any() and e_in.any() else np.nan)
        out.append(np.mean(gaps))
    return np.array(out)


def test_coverage_control_gap_per_run_and_mean_with_paired_bootstrap() -> None:
    cov = _report().coverage
    assert cov is not None
    assert (cov.target, cov.measured_on) == ("canonical", "raw")
    a, b = cov.runs["A"], cov.runs["B"]
    assert (a.n_raw, a.n_covered, a.n_excluded) == (4, 2, 2)
    # run A raw: covered q1 0.5, q2 1 -> 0.75; excluded q3 0.5, q4 0 -> 0.25
    assert a.means_covered["ndcg@3"] == pytest.approx(0.75)
    assert a.means_excluded["ndcg@3"] == pytest.approx(0.25)
    assert a.gap["ndcg@3"].mean == pytest.approx(0.5)
    # run B raw: covered 1 and 0.5 -> 0.75; excluded 1 and 1 -> 1.0
    assert b.gap["ndcg@3"].mean == pytest.approx(-0.25)
    mean = cov.mean_gap["ndcg@3"]
    assert (mean.n_runs, mean.n_queries) == (2, 4)
    assert mean.mean == pytest.approx((0.5 - 0.25) / 2)
    # the same draws as every other bootstrap of the report, runs paired on them
    covered = [True, True, False, False]
    boot = _gap_oracle({"A": [0.5, 1, 0.5, 0], "B": [1, 0.5, 1, 1]}, covered)
    boot = boot[~np.isnan(boot)]
    low, high = np.percentile(boot, [2.5, 97.5])
    assert (mean.ci_low, mean.ci_high) == (pytest.approx(low), pytest.approx(high))
    run_a = _gap_oracle({"A": [0.5, 1, 0.5, 0]}, covered)
    run_a = run_a[~np.isnan(run_a)]
    assert a.gap["ndcg@3"].ci_low == pytest.approx(np.percentile(run_a, 2.5))
    assert a.gap["ndcg@3"].ci_high == pytest.approx(np.percentile(run_a, 97.5))
    # category mix: both covered queries are A, both excluded B
    assert {c: (m.n_covered, m.n_excluded) for c, m in a.categories.items()} == {
        "A": (2, 0),
        "B": (0, 2),
    }


def test_mean_gap_pairs_runs_that_score_different_queries() -> None:
    """A store without q4's raw turn: its run scores q1-q3 only; the mean gap still
    resamples the four queries once for both runs."""
    partial = [m for m in MEMORIES if m.memory_id != "r4"] + [mem("x4", "s4", "summary")]
    bundle = make_bundle(
        QUERIES,
        {"st": MEMORIES, "part": partial},
        {"A": ("st", RUN_A), "C": ("part", {**RUN_B, "q4": ["n1", "n2", "n3"]})},
        categories=CATEGORIES,
    )
    cov = rescore_bundle(bundle, ks=(3,), resamples=RESAMPLES, seed=SEED).report.coverage
    assert cov is not None
    c = cov.runs["C"]
    assert (c.n_raw, c.n_covered, c.n_excluded) == (3, 2, 1)
    # run C raw: covered q1 1, q2 0.5 -> 0.75; excluded q3 1 -> gap -0.25
    assert c.gap["ndcg@3"].mean == pytest.approx(-0.25)
    mean = cov.mean_gap["ndcg@3"]
    assert (mean.n_runs, mean.n_queries) == (2, 4)
    assert mean.mean == pytest.approx((0.5 - 0.25) / 2)
    boot = _gap_oracle(
        {"A": [0.5, 1, 0.5, 0], "C": [1, 0.5, 1, 0]},
        [True, True, False, False],
        {"C": [True, True, True, False]},
    )
    boot = boot[~np.isnan(boot)]
    assert mean.ci_low == pytest.approx(np.percentile(boot, 2.5))
    assert mean.ci_high == pytest.approx(np.percentile(boot, 97.5))


def test_coverage_gap_undefined_without_excluded_queries() -> None:
    rep = rescore_bundle(random_bundle(3, n_queries=60, n_runs=2), ks=(10,), resamples=50).report
    cov = rep.coverage
    assert cov is not None
    for run in cov.runs.values():
        assert run.n_covered + run.n_excluded == run.n_raw
        if not run.n_excluded or not run.n_covered:
            assert run.gap["ndcg@10"].mean is None
        else:
            iv = run.gap["ndcg@10"]
            assert iv.ci_low is not None
            assert iv.ci_high is not None
            assert iv.ci_low <= iv.mean <= iv.ci_high


def test_target_ordering_on_the_shared_subset_and_breadth() -> None:
    order = _report().target_order
    assert order is not None
    a = order.runs["A"]["ndcg@3"]
    # shared subset q1, q2: raw (0.5+1)/2 = 0.75 > source (1.5/IDCG2 + 1/IDCG3)/2 = 0.6945
    # > canonical (1 + 0)/2 = 0.5: not monotone (the paper: canonical below raw), and
    # source below raw: not containment consistent either
    assert (a.n, a.order, a.monotone) == (2, "raw > source > canonical", False)
    assert a.containment_consistent is False
    # run B: raw 0.75 > source (1/IDCG2 + 1.5/IDCG3)/2 = 0.6585 > canonical (0 + 1/IDCG2)/2
    assert order.runs["B"]["ndcg@3"].order == "raw > source > canonical"
    # hit@3 on q1, q2: A hits raw and source on both, canonical on q1 only: a tie;
    # containment consistent (source not below raw or canonical), but canonical below
    # raw: nonmonotone by the paper's rule
    assert order.runs["A"]["hit@3"].order == "raw = source > canonical"
    assert order.runs["A"]["hit@3"].containment_consistent is True
    assert order.runs["A"]["hit@3"].monotone is False
    assert order.counts["ndcg@3"] == {"raw > source > canonical": 2}
    assert order.n_not_monotone["ndcg@3"] == 2
    assert order.n_not_containment_consistent["ndcg@3"] == 2
    assert order.n_not_containment_consistent["hit@3"] == 0


def test_order_text_and_monotone_rule() -> None:
    targets = ["raw", "source", "canonical"]
    assert order_text({"raw": 0.2, "source": 0.5, "canonical": 0.3}, targets, 1e-9) == (
        "source > canonical > raw"
    )
    assert order_text({"raw": 0.5, "source": 0.5, "canonical": 0.1}, targets, 1e-9) == (
        "raw = source > canonical"
    )
    # containment: Raw and Canonical are not ordered by breadth, either order passes
    assert is_containment_consistent({"raw": 0.1, "source": 0.5, "canonical": 0.3}, 1e-9) is True
    assert is_containment_consistent({"raw": 0.4, "source": 0.5, "canonical": 0.45}, 1e-9) is True
    assert is_containment_consistent({"raw": 0.6, "source": 0.5, "canonical": 0.1}, 1e-9) is False
    assert is_containment_consistent({"raw": 0.1, "source": 0.5, "canonical": 0.6}, 1e-9) is False
    assert is_containment_consistent({"raw": 0.1, "canonical": 0.6}, 1e-9) is None
    # Raw above Canonical under Source passes containment but is nonmonotone (the paper)
    assert is_containment_consistent({"raw": 0.45, "source": 0.5, "canonical": 0.4}, 1e-9)
    assert is_monotone({"raw": 0.45, "source": 0.5, "canonical": 0.4}, 1e-9) is False


def test_containment_consistent_measures_never_flagged_on_random_bundles() -> None:
    """Hit, P and MRR can only rise when relevant memories are added: on the same queries
    Source is never below Raw or Canonical for them."""
    rep = rescore_bundle(
        random_bundle(11, n_queries=150, n_runs=3), ks=(5, 20), resamples=20
    ).report
    order = rep.target_order
    assert order is not None
    for m in ("hit@5", "hit@20", "p@5", "p@20", "mrr@5", "mrr@20"):
        assert order.n_not_containment_consistent[m] == 0, m
    assert sum(order.counts["ndcg@5"].values()) == sum(
        1 for by_m in order.runs.values() if by_m["ndcg@5"].order is not None
    )


def test_saturation_by_memories_added() -> None:
    sat = _report().saturation
    assert sat is not None
    assert (sat.pair, sat.n, sat.n_none_added) == ("source-raw", 8, 4)
    one, two = sat.bins["ndcg@3"]["1"], sat.bins["ndcg@3"]["2"]
    # +1 (q1 of both runs): 1.5/IDCG2 - 0.5 and 1/IDCG2 - 1
    assert one.n == 2
    assert one.mean == pytest.approx(((1.5 / IDCG2 - 0.5) + (1 / IDCG2 - 1)) / 2)
    # +2 (q2 of both runs): 1/IDCG3 - 1 and 1.5/IDCG3 - 0.5
    assert two.n == 2
    assert two.mean == pytest.approx(((1 / IDCG3 - 1) + (1.5 / IDCG3 - 0.5)) / 2)
    assert one.ci_low <= one.mean <= one.ci_high
    assert sat.bins["ndcg@3"]["3"].n == sat.bins["ndcg@3"]["4+"].n == 0
    assert sat.bins["ndcg@3"]["4+"].mean is None


def test_saturation_interval_resamples_queries_with_all_their_pairs() -> None:
    """Against a plain loop: draw queries (of the shared subsets), take every (query, run)
    pair of each drawn query, and average the group's shifts."""
    result = rescore_bundle(random_bundle(8, n_queries=80, n_runs=3), ks=(10,), resamples=300)
    sat = result.report.saturation
    assert sat is not None
    col = result.scores.column("ndcg@10")
    pairs = []  # (query position, group, shift)
    for scores in result.scores.runs.values():
        raw, src = scores.sizes["raw"], scores.sizes["source"]
        for q in np.flatnonzero((raw > 0) & (src > 0)):
            added = int(src[q] - raw[q])
            shift = scores.values["source"][q, col] - scores.values["raw"][q, col]
            pairs.append((int(q), min(added, 4), shift))
    queries = sorted({q for q, _, _ in pairs})
    rows = {q: i for i, q in enumerate(queries)}
    rng = np.random.default_rng(1337)
    draws = [rng.integers(0, len(queries), len(queries), dtype=np.int32) for _ in range(300)]
    for group, label in ((1, "1"), (2, "2"), (4, "4+")):
        mine = [(rows[q], v) for q, g, v in pairs if g == group]
        iv = sat.bins["ndcg@10"][label]
        assert iv.n == len(mine) > 5
        assert iv.mean == pytest.approx(np.mean([v for _, v in mine]))
        per_row = np.zeros(len(queries))
        count = np.zeros(len(queries))
        for r, v in mine:
            per_row[r] += v
            count[r] += 1
        means = [per_row[d].sum() / count[d].sum() for d in draws if count[d].sum() > 0]
        assert iv.ci_low == pytest.approx(np.percentile(means, 2.5))
        assert iv.ci_high == pytest.approx(np.percentile(means, 97.5))
        assert iv.ci_low < iv.mean < iv.ci_high


def test_shift_distribution_histogram_and_quartiles() -> None:
    dist = _report().shift_distribution
    assert dist is not None
    assert dist.measure == "ndcg@3"
    assert len(dist.edges) == 22
    assert dist.edges[0] == -1.05
    assert dist.edges[-1] == 1.05
    assert dist.edges == list(EDGES)
    h = dist.runs["A"]["source-raw"]
    # shifts: q1 +0.4197, q2 -0.5307, q3 0, q4 0
    assert (h.n, h.n_down, h.n_zero, h.n_up) == (4, 1, 2, 1)
    centre = {round((dist.edges[i] + dist.edges[i + 1]) / 2, 2): c for i, c in enumerate(h.counts)}
    assert centre[0.4] == 1
    assert centre[-0.5] == 1
    assert centre[0.0] == 2
    assert sum(h.counts) == 4
    assert h.median == pytest.approx(0.0)
    assert h.min == pytest.approx(1 / IDCG3 - 1)
    assert h.max == pytest.approx(1.5 / IDCG2 - 0.5)
    # the canonical pairs only cover q1 and q2
    assert dist.runs["A"]["canonical-raw"].n == 2


def test_the_further_analyses_are_keys_of_their_own() -> None:
    keys = list(_report().model_dump(mode="json"))
    assert keys[-4:] == ["coverage", "target_order", "saturation", "shift_distribution"]
    assert keys.index("headline") == len(keys) - 5


def test_without_raw_or_canonical_the_analyses_that_need_them_are_null() -> None:
    rep = _report(targets=("source", "canonical"))
    assert rep.coverage is None
    assert rep.saturation is None
    assert rep.target_order is not None
    assert rep.target_order.runs["A"]["ndcg@3"].order is not None
