"""Scoring from target sets and rankings given directly; the hash table and ranked ids.

``score_rankings`` (qrels + runs in their natural form) must give exactly the
values ``score_runs`` gives for the same bundle, agree with pytrec_eval, and
stay exact when different ids share a ``hash()``.
"""

from __future__ import annotations

import numpy as np
import pytest

from bundle_support import random_bundle
from target_oracle import target_sets
from tiap.errors import TiapError
from tiap.rescore.ids import HashTable
from tiap.rescore.lineage import qrels_targets
from tiap.rescore.metrics import parse_measures
from tiap.rescore.per_query_csv import _cell_text
from tiap.rescore.ranking import ranked_ids
from tiap.rescore.scores import score_rankings, score_runs

INT64_MIN = np.iinfo(np.int64).min


class _Hashed(str):
    """A string with a chosen ``hash()`` (to make different ids collide)."""

    __slots__ = ("_h",)

    def __new__(cls, text: str, h: int) -> _Hashed:
        obj = super().__new__(cls, text)
        obj._h = h
        return obj

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


# ------------------------------------------------------------------- hash table


def _find(table: HashTable, values: np.ndarray) -> list[int]:
    """Position of each value among the keys, ``-1`` where it is not one (from ``lookup``)."""
    out = np.full(values.size, -1, dtype=np.int64)
    found_at, positions = table.lookup(values)
    out[found_at] = positions
    return out.tolist()


@pytest.mark.parametrize("kind", ["random", "multiples", "high-bits", "with-min"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 300, 5000])
def test_hash_table_finds_exactly_the_keys(kind: str, n: int) -> None:
    rng = np.random.default_rng(n)
    if kind == "random":
        keys = np.unique(rng.integers(INT64_MIN, np.iinfo(np.int64).max, n, dtype=np.int64))
    elif kind == "multiples":
        keys = np.arange(n, dtype=np.int64) * 4096  # same low bits: crowds naive slots
    elif kind == "high-bits":
        keys = np.arange(n, dtype=np.int64) << 40
    else:  # the smallest int64 is a key: free slots need another marker
        keys = np.unique(np.r_[INT64_MIN, INT64_MIN + 1, rng.integers(-50, 50, n)]).astype(np.int64)
    rng.shuffle(keys)
    table = HashTable.of_distinct(keys)
    assert table is not None
    values = np.r_[keys, keys + 1, keys - 1, rng.integers(-100, 100, 500), INT64_MIN, 0, -1]
    reference = {int(k): i for i, k in enumerate(keys.tolist())}
    expected = [reference.get(int(v), -1) for v in values.tolist()]
    assert _find(table, values) == expected
    found_at, positions = table.lookup(values.reshape(-1, 1))
    hits = [i for i, e in enumerate(expected) if e >= 0]
    assert found_at.tolist() == hits
    assert positions.tolist() == [expected[i] for i in hits]
    assert table.absent(values).tolist() == [i for i, e in enumerate(expected) if e < 0]
    many = np.tile(values, 40_000 // values.size + 1)  # looked up in several blocks
    assert _find(table, many) == expected * (many.size // values.size)
    assert table.absent(many).size == (many.size // values.size) * expected.count(-1)


def test_hash_table_refuses_repeated_keys() -> None:
    assert HashTable.of_distinct(np.array([5, 9, 5], dtype=np.int64)) is None
    assert HashTable.of_distinct(np.array([5, 9], dtype=np.int64)) is not None


# ---------------------------------------------------------------- ranked ids


def test_ranked_ids_repeats_padding_and_equal_hashes() -> None:
    a, b = _Hashed("a", 11), _Hashed("b", 11)  # different ids, same hash: not a repeat
    rankings = {"q1": ["x", "y", "x", "z", "y", "w"], "q2": [a, b, "c"], "q3": []}
    ranked = ranked_ids(rankings, ["q1", "q2", "q3", "q4"], depth=4)
    assert ranked.repeats.tolist() == [2, 0, 0, 0]
    assert ranked.present.tolist() == [True, True, True, False]
    assert ranked.rows[0] == ["x", "y", "z", "w"]
    assert ranked.ids_at(np.array([0, 0, 1]), np.array([2, 3, 1])) == ["z", "w", "b"]
    assert ranked.hashes[0].tolist() == [hash(s) for s in "xyzw"]
    assert ranked.hashes[1].tolist() == [11, 11, hash("c"), -1]
    assert (ranked.hashes[2:] == -1).all()


# ----------------------------------------------- score_rankings = score_runs


def _natural_form(bundle) -> tuple[dict, dict]:
    sets = target_sets(bundle, "store")
    qrels = {t: {q: set(ids) for q, ids in per_q.items() if ids} for t, per_q in sets.items()}
    runs = {run: {q: list(r) for q, r in bundle.rankings(run).items()} for run in bundle.runs}
    return qrels, runs


@pytest.mark.parametrize("seed", [5, 6])
def test_score_rankings_equals_score_runs(seed: int) -> None:
    bundle = random_bundle(seed, n_queries=250, n_runs=3, depth=40)
    measures = parse_measures(None, (1, 5, 20, 60))
    from_bundle = score_runs(bundle, measures)
    qrels, runs = _natural_form(bundle)
    direct = score_rankings(qrels, runs, measures, query_ids=from_bundle.query_ids)
    assert direct.query_ids == from_bundle.query_ids
    assert direct.targets == from_bundle.targets
    for run, scores in from_bundle.runs.items():
        got = direct.runs[run]
        for t in from_bundle.targets:
            # identical bits, nan where the target is empty
            assert got.values[t].tobytes() == scores.values[t].tobytes(), (run, t)
            assert got.sizes[t].tolist() == scores.sizes[t].tolist()
        assert got.present.tolist() == scores.present.tolist()
        assert got.repeats.tolist() == scores.repeats.tolist()
    assert any(s.repeats.any() for s in from_bundle.runs.values())  # repeats exercised


def test_score_rankings_against_pytrec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier: dev dependency")
    qrels = {
        "gold": {"q1": {"m1", "m4"}, "q2": ["m2"], "q3": {"m9"}},  # a list works too
        "wide": {"q1": {"m1", "m2", "m3", "m4", "m5"}, "q2": {"m7"}},
    }
    runs = {
        "r": {
            "q1": ["m3", "m1", "zz", "m4", "m1", "m8"],  # a repeat and an id in no qrels
            "q2": ["m7", "m2"],
            "q9": ["m1"],  # a query without qrels is ignored
        }
    }
    measures = parse_measures("ndcg,recall,map,p,hit", (1, 3, 5))
    table = score_rankings(qrels, runs, measures)
    assert table.query_ids == ("q1", "q2", "q3")
    values = table.runs["r"].values
    names = {"ndcg": "ndcg_cut_{k}", "recall": "recall_{k}", "map": "map_cut_{k}",
             "p": "P_{k}", "hit": "success_{k}"}  # fmt: skip
    cut = ",".join(str(k) for k in (1, 3, 5))
    wanted = {f"{n}.{cut}" for n in ("ndcg_cut", "recall", "map_cut", "P", "success")}
    trec_run = {
        "q1": {"m3": 6.0, "m1": 5.0, "zz": 4.0, "m4": 3.0, "m8": 2.0},
        "q2": {"m7": 6.0, "m2": 5.0},
        "q3": {},
    }
    compared = 0
    for t, per_q in qrels.items():
        trec_qrels = {q: dict.fromkeys(ids, 1) for q, ids in per_q.items()}
        ref = pytrec_eval.RelevanceEvaluator(trec_qrels, wanted).evaluate(trec_run)
        for qi, q in enumerate(table.query_ids):
            if q not in per_q:
                assert np.isnan(values[t][qi]).all()
                continue
            for j, m in enumerate(table.measures):
                expected = ref.get(q, {}).get(names[m.name].format(k=m.k), 0.0)
                assert abs(values[t][qi, j] - expected) <= 1e-9, (t, q, str(m))
                compared += 1
    assert compared == (3 + 2) * len(measures)
    # hand check: q1 under "gold", first-occurrence ranking m3, m1, zz, m4, m8: hits at 2 and 4
    assert values["gold"][0, table.column("p@3")] == pytest.approx(1 / 3)
    assert values["gold"][0, table.column("recall@5")] == 1.0
    assert table.runs["r"].repeats.tolist() == [1, 0, 0]
    assert table.runs["r"].present.tolist() == [True, True, False]


def test_score_runs_names_a_ranked_id_the_store_lacks() -> None:
    bundle = random_bundle(9, n_queries=30, n_runs=1)
    entries = bundle.runs["run0"]
    entries[4] = entries[4].model_copy(update={"ranking": ["raw-s1", "no-such-memory"]})
    with pytest.raises(TiapError, match="unknown memory id in store 'store' 'no-such-memory'"):
        score_runs(bundle, parse_measures("p", (5,)))


def test_score_rankings_needs_measures_and_targets() -> None:
    with pytest.raises(TiapError, match="no measure"):
        score_rankings({"t": {"q": {"m"}}}, {}, ())
    with pytest.raises(TiapError, match="no target"):
        score_rankings({}, {}, parse_measures("p", (1,)))


def test_hash_collisions_never_make_a_memory_relevant() -> None:
    measures = parse_measures("p,mrr", (3,))
    # members with distinct hashes; a ranked id that is not a member shares a member's hash
    member, impostor = _Hashed("member", 99), _Hashed("impostor", 99)
    st = qrels_targets({"t": {"q1": {member, "other"}}}, ["q1"])
    ranked = ranked_ids({"q1": [impostor, "x", member]}, ["q1"], depth=3)
    assert st.relevance(ranked)["t"].tolist() == [[False, False, True]]
    table = score_rankings({"t": {"q1": {member, "other"}}}, {"r": {"q1": [impostor, "x", member]}},
                           measures)  # fmt: skip
    assert table.runs["r"].values["t"][0].tolist() == [1 / 3, 1 / 3]
    # every id shares one hash: pair keys collide, the exact path is taken
    ids = {name: _Hashed(name, 7) for name in ("a", "b", "c", "d")}
    qrels = {"t": {"q1": {ids["a"], ids["c"]}, "q2": {ids["b"]}}}
    runs = {"r": {"q1": [ids["b"], ids["c"], ids["d"]], "q2": [ids["b"], ids["b"], ids["a"]]}}
    st = qrels_targets(qrels, ["q1", "q2"])
    assert st._pairs[2] is None
    table = score_rankings(qrels, runs, measures)
    assert table.runs["r"].values["t"][:, 0].tolist() == [1 / 3, 1 / 3]  # P@3
    assert table.runs["r"].values["t"][:, 1].tolist() == [1 / 2, 1.0]  # RR@3
    assert table.runs["r"].repeats.tolist() == [0, 1]


# ----------------------------------------------------------- per_query cells


def test_cell_text_writes_each_value_as_repr() -> None:
    rng = np.random.default_rng(2)
    values = rng.choice([0.0, 1.0, 0.5, 1 / 3, 0.1 + 0.2, np.nan], size=(50, 7))
    values[3, 2] = rng.random()
    plain = ["".join("," + repr(v) for v in row) for row in values.tolist()]
    assert _cell_text(values) == plain
    values[7, 1] = -0.0  # sorts with 0.0 but is written differently
    assert _cell_text(values) == ["".join("," + repr(v) for v in row) for row in values.tolist()]
    assert ",-0.0," in _cell_text(values)[7]


def test_score_rankings_refuses_strings_for_id_collections() -> None:
    measures = parse_measures("p", (1,))
    with pytest.raises(TiapError, match="query 'q2' under target 't' must be a collection"):
        score_rankings({"t": {"q1": {"m1"}, "q2": "m2"}}, {}, measures)
    with pytest.raises(TiapError, match="ranking of query 'q1' in run 'r' is a string"):
        score_rankings({"t": {"q1": {"m1"}}}, {"r": {"q1": "m1"}}, measures)
