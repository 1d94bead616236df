"""The paper's definitions on the real LoCoMo bundle (BM25 over every store, built once
per test session): the target ordering's monotone and containment checks, and the
matched subset of the density sweep, recomputed from the target sets of
``target_oracle`` and scored with pytrec_eval (trec_eval)."""

from __future__ import annotations

import pytest

from target_oracle import target_sets
from tiap.rescore.api import rescore_bundle
from tiap.rescore.report_models import RescoreReport
from tiap.traces.bundle import Bundle, read_bundle

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]
pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier is a dev dependency")

K = 10
TARGETS = ("raw", "source", "canonical")


@pytest.fixture(scope="module")
def locomo(built, tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    return read_bundle(built.copy("locomo", tmp_path_factory.mktemp("paper") / "locomo"))


@pytest.fixture(scope="module")
def report(locomo: Bundle) -> RescoreReport:
    return rescore_bundle(locomo, ks=(K,), metrics="ndcg,hit", resamples=50).report


def _ndcg(bundle: Bundle, run: str, sets: dict[str, dict[str, frozenset[str]]]) -> dict:
    """target -> query -> ndcg@K by pytrec_eval (queries with an empty target left out)."""
    ranked = {r.query_id: list(dict.fromkeys(r.ranking)) for r in bundle.runs[run]}
    # the run's order as strictly decreasing scores (a repeat counts at its first rank)
    trec_run = {
        q.query_id: {m: float(-i) for i, m in enumerate(ranked.get(q.query_id, []))}
        for q in bundle.queries
    }
    out = {}
    for t in TARGETS:
        qrels = {q: dict.fromkeys(ids, 1) for q, ids in sets[t].items() if ids}
        ev = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{K}"})
        out[t] = {q: v[f"ndcg_cut_{K}"] for q, v in ev.evaluate(trec_run).items()}
    return out


def test_orderings_on_locomo_follow_both_rules(report: RescoreReport) -> None:
    order = report.target_order
    assert order is not None
    seen = 0
    for run, by_m in order.runs.items():
        means = report.runs[run].shared_all.means
        for m, o in by_m.items():
            if o.order is None:
                continue
            seen += 1
            r, s, c = (means[t][m] for t in TARGETS)
            assert r is not None
            assert s is not None
            assert c is not None
            assert o.monotone == (s >= c - 1e-9 and c >= r - 1e-9), (run, m)
            assert o.containment_consistent == (s >= max(r, c) - 1e-9), (run, m)
            if o.monotone:  # the paper's rule is the stricter one
                assert o.containment_consistent
    assert seen >= 8  # several derived stores, two measures
    # hit never falls as a target grows; nDCG does on LoCoMo
    assert order.n_not_containment_consistent[f"hit@{K}"] == 0
    assert sum(order.n_not_monotone.values()) >= 1


def test_matched_subset_of_the_density_sweep(locomo: Bundle, report: RescoreReport) -> None:
    """The parser_max_facts family is compared on one set of queries for every target:
    those where Raw, Source and Canonical are non-empty on every density's store; its
    means are pytrec_eval's nDCG averaged over exactly those queries."""
    m = f"ndcg@{K}"
    fam = next(f for f in report.design if f.key == "parser_max_facts")
    assert fam.subsets == "matched"
    runs = [s.run for s in fam.settings]
    sets = {r: target_sets(locomo, locomo.config.runs[r].store) for r in runs}
    matched = [
        q.query_id
        for q in locomo.queries
        if all(sets[r][t][q.query_id] for r in runs for t in TARGETS)
    ]
    assert fam.n_shared == dict.fromkeys(TARGETS, len(matched))
    assert 0 < len(matched) < len(locomo.queries)
    for r in runs:
        ref = _ndcg(locomo, r, sets[r])
        for t in TARGETS:
            expected = sum(ref[t][q] for q in matched) / len(matched)
            assert fam.means[t][m][r] == pytest.approx(expected, abs=1e-9), (r, t)
    other = report.other_subsets
    assert other is not None
    assert other.differs
    per_target = next(f for f in other.design if f.key == "parser_max_facts")
    assert per_target.n_shared["raw"] > len(matched)
    assert per_target.n_shared["canonical"] >= len(matched)


def test_the_raw_store_run_is_left_out_of_the_pooled_figures(
    locomo: Bundle, report: RescoreReport
) -> None:
    pooled = report.pooled_runs
    assert pooled is not None
    raw_runs = [r for r, rc in locomo.config.runs.items() if rc.store == "raw"]
    assert raw_runs  # the BM25 run over the raw turns
    assert pooled.left_out == raw_runs
    assert len(pooled.runs) == len(locomo.config.runs) - len(raw_runs)
    for name, pp in report.pooled.items():
        assert pp.n == sum(report.runs[r].pairs[name].n_shared for r in pooled.runs)
