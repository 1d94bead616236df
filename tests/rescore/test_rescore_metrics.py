"""Measures: hand-worked values, parsing, and agreement with pytrec_eval (trec_eval) to 1e-9.

What each tiap measure is compared with in pytrec_eval (binary qrels, one qrels
set per target; the run's order is encoded as strictly decreasing scores, so
trec_eval's re-sort by score cannot reorder it, and a memory repeated in a
ranking is given once, at its first position):

    ndcg@k   -> ndcg_cut_k            recall@k -> recall_k
    p@k      -> P_k                   map@k    -> map_cut_k
    mrr@k    -> recip_rank of the run cut to its first k memories
    hit@k    -> success_k

Queries with an empty target are left out of the qrels (trec_eval then does not
score them) and are ``nan`` in tiap.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bundle_support import make_bundle, mem, random_bundle
from target_oracle import target_sets
from tiap.errors import TiapError
from tiap.rescore.metrics import (
    MEASURES,
    Measure,
    RankedRelevance,
    parse_ks,
    parse_measure,
    parse_measures,
)
from tiap.rescore.ranking import first_occurrences
from tiap.rescore.scores import score_runs

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier is a dev dependency")

KS = (1, 3, 5, 10, 20, 60, 100)
NATIVE = {
    "ndcg": "ndcg_cut_{k}",
    "recall": "recall_{k}",
    "p": "P_{k}",
    "map": "map_cut_{k}",
    "hit": "success_{k}",
}


def _relevance(rows: list[list[int]], n_rel: list[int]) -> RankedRelevance:
    return RankedRelevance(np.array(rows, dtype=bool), np.array(n_rel))


def _value(name: str, rows: list[list[int]], n_rel: list[int]) -> list[float]:
    return parse_measure(name).compute(_relevance(rows, n_rel)).tolist()


# ----------------------------------------------------------------- hand-worked


def test_ndcg_at_3_relevant_at_ranks_1_and_3_of_2() -> None:
    # DCG@3 = 1/log2(2) + 0 + 1/log2(4) = 1 + 0.5 = 1.5
    # IDCG@3 with 2 relevant = 1/log2(2) + 1/log2(3) = 1 + 0.6309297535714575
    # nDCG@3 = 1.5 / 1.6309297535714575 = 0.9197207891481876
    (value,) = _value("ndcg@3", [[1, 0, 1]], [2])
    assert value == pytest.approx(1.5 / (1 + 1 / math.log2(3)), abs=1e-15)
    assert value == pytest.approx(0.9197207891481876, abs=1e-12)


def test_ideal_ranking_is_cut_at_k() -> None:
    # 5 relevant, k = 2, ranks 1 and 2 relevant: DCG = IDCG@2 -> nDCG@2 = 1 even though
    # 3 relevant memories were never retrieved.
    (value,) = _value("ndcg@2", [[1, 1, 0]], [5])
    assert value == pytest.approx(1.0, abs=1e-15)


def test_precision_recall_hit_mrr_map_by_hand() -> None:
    rows = [[0, 1, 0, 1, 0], [0, 0, 0, 0, 0]]
    n_rel = [3, 2]
    # P@4 = 2/4; P divides by k even past the end of a short list
    assert _value("p@4", rows, n_rel) == [0.5, 0.0]
    # Recall@4 = 2/3 (3 relevant in total)
    assert _value("recall@4", rows, n_rel) == pytest.approx([2 / 3, 0.0], abs=1e-15)
    # Hit@1 = 0 (rank 1 not relevant), Hit@2 = 1
    assert _value("hit@1", rows, n_rel) == [0.0, 0.0]
    assert _value("hit@2", rows, n_rel) == [1.0, 0.0]
    # RR@1 = 0, RR@5 = 1/2 (first relevant at rank 2)
    assert _value("mrr@1", rows, n_rel) == [0.0, 0.0]
    assert _value("mrr@5", rows, n_rel) == [0.5, 0.0]
    # AP@5 = (P@2 + P@4) / R = (1/2 + 2/4) / 3 = 1/3
    assert _value("map@5", rows, n_rel) == pytest.approx([1 / 3, 0.0], abs=1e-15)
    # AP@3 = (P@2) / 3 = 1/6: the cut still divides by the full target size
    assert _value("map@3", rows, n_rel) == pytest.approx([1 / 6, 0.0], abs=1e-15)


def test_empty_target_is_nan_for_every_measure() -> None:
    rel = _relevance([[0, 0], [1, 0]], [0, 1])
    for family in MEASURES:
        values = Measure(family, 2).compute(rel)
        assert math.isnan(values[0]), family
        assert not math.isnan(values[1]), family


def test_cut_off_deeper_than_matrix_is_refused() -> None:
    with pytest.raises(ValueError, match="deeper"):
        parse_measure("ndcg@4").compute(_relevance([[1, 0, 0]], [1]))


# --------------------------------------------------------------------- parsing


def test_parse_measure_names_and_aliases() -> None:
    assert parse_measure("ndcg@10") == Measure("ndcg", 10)
    assert str(parse_measure(" NDCG @ 10 ")) == "ndcg@10"
    assert parse_measure("P@5") == Measure("p", 5)
    assert parse_measure("MRR@60") == Measure("mrr", 60)
    assert parse_measure("recip_rank@3") == Measure("mrr", 3)
    assert parse_measure("success@1") == Measure("hit", 1)
    assert parse_measure("map_cut@7") == Measure("map", 7)
    assert parse_measure("recall@60").family.pytrec_eval == "recall_{k}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bleu@10", "unknown measure 'bleu'"),
        ("ndcg", "expected NAME@K"),
        ("ndcg@0", "at least 1"),
        ("ndcg@ten", "not an integer"),
        ("@10", "cannot read measure"),
    ],
)
def test_parse_measure_errors(text: str, message: str) -> None:
    with pytest.raises(TiapError, match=message):
        parse_measure(text)


def test_parse_measures_expands_families_over_cutoffs() -> None:
    got = [str(m) for m in parse_measures("ndcg,recall@60,p", (60, 10))]
    assert got == ["ndcg@10", "ndcg@60", "recall@60", "p@10", "p@60"]
    default = [str(m) for m in parse_measures(None)]
    assert default == [
        "ndcg@10", "ndcg@60", "recall@10", "recall@60", "mrr@10", "mrr@60",
        "map@10", "map@60", "p@10", "p@60", "hit@10", "hit@60",
    ]  # fmt: skip
    assert parse_ks("60, 10,10") == (10, 60)
    with pytest.raises(TiapError, match="no cut-off"):
        parse_ks(" , ")
    with pytest.raises(TiapError, match="no measure"):
        parse_measures("", (10,))


# ------------------------------------------------------------ pytrec_eval check


def _pytrec_values(qrels: dict, run: dict, ks: tuple[int, ...]) -> dict:
    """``(k, query) -> family -> value`` for every tiap family, computed by pytrec_eval."""
    cutoffs = ",".join(map(str, ks))
    names = {f"{n}.{cutoffs}" for n in ("ndcg_cut", "recall", "P", "map_cut", "success")}
    full = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    rr_eval = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    out: dict = {}
    for k in ks:
        cut = {q: dict(list(docs.items())[:k]) for q, docs in run.items()}
        rr = rr_eval.evaluate(cut)
        for q, res in full.items():
            out[k, q] = {fam: res[pat.format(k=k)] for fam, pat in NATIVE.items()}
            out[k, q]["mrr"] = rr[q]["recip_rank"]
    return out


def _check_against_pytrec(bundle, ks=KS) -> int:
    measures = parse_measures(None, ks)
    table = score_runs(bundle, measures)
    compared = 0
    for run, scores in table.runs.items():
        store = bundle.run_store(run)
        sets = target_sets(bundle, store)
        rankings = bundle.rankings(run)
        # scores strictly decreasing in run order: trec_eval's sort keeps the order
        pyrun = {
            q: {m: float(1000 - i) for i, m in enumerate(first_occurrences(rankings.get(q, [])))}
            for q in table.query_ids
        }
        for target in table.targets:
            qrels = {q: dict.fromkeys(s, 1) for q, s in sets[target].items() if s}
            ref = _pytrec_values(qrels, pyrun, ks)
            values = scores.values[target]
            for k in ks:
                cols = {fam: table.column(f"{fam}@{k}") for fam in (*NATIVE, "mrr")}
                for qi, q in enumerate(table.query_ids):
                    if q not in qrels:
                        assert np.isnan(values[qi]).all(), (run, target, q)
                        assert (k, q) not in ref
                        continue
                    for fam, col in cols.items():
                        assert abs(values[qi, col] - ref[k, q][fam]) <= 1e-9, (run, target, q, k)
                        compared += 1
    return compared


def test_equal_to_pytrec_eval_on_real_size_random_data() -> None:
    bundle = random_bundle(11, n_queries=2000, n_sources=1500, n_runs=2, depth=100)
    assert any("more than once" in w for w in bundle.warnings)  # repeats are exercised
    compared = _check_against_pytrec(bundle)
    assert compared > 2000 * 2 * 3 * len(KS) * 6 * 0.8


def test_equal_to_pytrec_eval_on_edge_cases() -> None:
    memories = [
        mem("r1", "s1", "raw"),
        mem("f1a", "s1", "fact"),
        mem("f1b", "s1", "fact"),
        mem("r2", "s2", "raw"),
        mem("r3", "s3", "raw"),
        mem("sum", ["s1", "s2", "s3", "s4"], "summary"),
        mem("x", "s9", "raw"),
        mem("y", "s8", "raw"),
    ]
    memories += [mem(f"big{i}", "s4", "fact") for i in range(15)]
    queries = {
        "empty-raw": ["s4"],  # raw target empty (no raw turn for s4); canonical has 15 > k
        "repeat": ["s1"],  # a memory listed twice: only its first occurrence counts
        "empty-ranking": ["s2"],
        "missing": ["s3"],  # absent from the run: an empty ranking
        "tail": ["s1"],  # relevant only past the deepest cut-off
    }
    ranking_tail = [f"big{i}" for i in range(10)] + ["x", "y", "sum", "r2", "r3", "r1"]
    runs = {
        "edge": (
            "store",
            {
                "empty-raw": ["x", "big3", "big3", "y", "big0", *[f"big{i}" for i in range(5, 15)]],
                "repeat": ["x", "r1", "x", "f1a", "r1", "y", "f1b"],
                "empty-ranking": [],
                "tail": ranking_tail,
            },
        )
    }
    bundle = make_bundle(queries, {"store": memories}, runs)
    assert sum("more than once" in w for w in bundle.warnings) == 3
    assert _check_against_pytrec(bundle, ks=(1, 2, 3, 5, 10, 12)) > 0

    table = score_runs(bundle, parse_measures(None, (3,)))
    scores = table.runs["edge"]
    row = {q: i for i, q in enumerate(table.query_ids)}
    # "repeat": deduplicated ranking x, r1, f1a, y, f1b. Raw target {r1}: first hit rank 2.
    assert scores.values["raw"][row["repeat"], table.column("mrr@3")] == 0.5
    # Source target {r1, f1a, f1b, sum}: relevant at ranks 2 and 3 of the top 3 -> P@3 = 2/3
    assert scores.values["source"][row["repeat"], table.column("p@3")] == pytest.approx(2 / 3)
    assert scores.repeats[row["repeat"]] == 2
    assert not scores.present[row["missing"]]
    assert scores.present[row["empty-ranking"]]
    for q in ("empty-ranking", "missing"):
        assert np.all(scores.values["source"][row[q]] == 0.0)
    assert np.all(np.isnan(scores.values["raw"][row["empty-raw"]]))
    assert scores.sizes["canonical"][row["empty-raw"]] == 15
