"""Target sets as arrays equal the reference lineage join; ranks and repeats."""

from __future__ import annotations

import numpy as np
import pytest
from rescore_support import make_bundle, mem, random_bundle

from tiap.errors import TiapError
from tiap.rescore.ids import IdIndex
from tiap.rescore.lineage import linked_pairs, store_targets
from tiap.rescore.ranking import first_hit_rank, first_occurrences, rank_matrix
from tiap.rescore.targets import TARGETS, Target, register_target, target_sets


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_store_targets_equal_target_sets(seed: int) -> None:
    bundle = random_bundle(seed, n_queries=200, n_sources=150, n_runs=1)
    reference = target_sets(bundle, "store")
    arrays = store_targets(bundle, "store")
    for target, per_query in reference.items():
        assert arrays.as_sets(target) == per_query
        sizes = [len(per_query[q]) for q in arrays.query_ids]
        assert arrays.sizes[target].tolist() == sizes
    # the three targets really differ on this data
    assert reference["raw"] != reference["source"] != reference["canonical"]
    assert any(not s for s in reference["raw"].values())
    assert any(not s for s in reference["canonical"].values())


def test_targets_by_hand() -> None:
    memories = [
        mem("r1", "s1", "raw"),
        mem("f1", ["s1", "s2"], "fact"),
        mem("sum", ["s1", "s1", "s3"], "summary"),  # a repeated lineage id counts once
        mem("r2", "s2", "raw"),
        mem("r9", "s9", "raw"),
    ]
    bundle = make_bundle(
        {"q1": ["s1"], "q2": ["s2", "s2"], "q3": ["s3"]},
        {"st": memories},
        {"run": ("st", {"q1": ["r1"]})},
    )
    st = store_targets(bundle, "st")
    assert st.as_sets("raw") == {"q1": {"r1"}, "q2": {"r2"}, "q3": set()}
    assert st.as_sets("source") == {"q1": {"r1", "f1", "sum"}, "q2": {"f1", "r2"}, "q3": {"sum"}}
    assert st.as_sets("canonical") == {"q1": {"f1"}, "q2": {"f1"}, "q3": set()}


def test_a_registered_target_is_used() -> None:
    name = "summary-only-test"
    register_target(
        Target(name, "non-canonical derived memories", lambda m: not m.raw and not m.canonical)
    )
    try:
        bundle = make_bundle(
            {"q1": ["s1"]},
            {"st": [mem("r1", "s1", "raw"), mem("sum", "s1", "summary"), mem("f", "s1", "fact")]},
            {"run": ("st", {"q1": ["r1"]})},
        )
        st = store_targets(bundle, "st", ("raw", name))
        assert st.as_sets(name) == {"q1": {"sum"}}
        assert set(st.keys) == {"raw", name}
    finally:
        TARGETS.pop(name)


def test_first_hit_rank_uses_first_occurrences() -> None:
    ranking = ["a", "b", "a", "c", "b", "d"]
    assert first_occurrences(ranking) == ["a", "b", "c", "d"]
    assert first_hit_rank(ranking, {"c"}) == 3  # ranks close up after the repeat of "a"
    assert first_hit_rank(ranking, {"c"}, k=3) == 3
    assert first_hit_rank(ranking, {"c"}, k=2) is None
    assert first_hit_rank(ranking, {"z"}) is None
    assert first_hit_rank([], {"a"}, k=10) is None


def test_rank_matrix_drops_repeats_and_pads() -> None:
    index = IdIndex(list("abcdef"))
    rankings = {"q1": ["a", "b", "a", "c", "b", "d", "e"], "q2": ["f"], "q3": []}
    rm = rank_matrix(rankings, ["q1", "q2", "q3", "q4"], index, depth=4)
    assert rm.index.tolist() == [[0, 1, 2, 3], [5, -1, -1, -1], [-1] * 4, [-1] * 4]
    assert rm.present.tolist() == [True, True, True, False]
    assert rm.repeats.tolist() == [2, 0, 0, 0]
    # a repeat below the depth changes nothing within it
    rm2 = rank_matrix({"q1": ["a", "b", "c", "a"]}, ["q1"], index, depth=3)
    assert rm2.index.tolist() == [[0, 1, 2]]
    assert np.array_equal(rm2.repeats, [0])


class _Colliding(str):
    """A string whose hash collides with every other one of its kind."""

    __slots__ = ()

    def __hash__(self) -> int:
        return 7


def test_id_index_fast_path_fallback_and_unknown_ids() -> None:
    idx = IdIndex(["m1", "m2", "m3"], what="memory id")
    assert idx.positions(["m3", "m1", "m3"]).tolist() == [2, 0, 2]
    assert idx.positions([]).tolist() == []
    with pytest.raises(TiapError, match="unknown memory id 'zz'"):
        idx.positions(["m1", "zz"])
    colliding = IdIndex([_Colliding("a"), _Colliding("b"), _Colliding("c")])
    assert colliding.positions([_Colliding("c"), _Colliding("a")]).tolist() == [2, 0]


def test_linked_pairs_check_ids_not_only_hashes() -> None:
    a, b, c = _Colliding("s-a"), _Colliding("s-b"), _Colliding("s-c")
    qry, mem = linked_pairs([[a], [b, a], [c]], [[a], [c], [b, b]])
    pairs = sorted(zip(qry.tolist(), mem.tolist(), strict=True))
    # query 0 cites s-a (memories 0, 1); query 1 cites s-c (memory 2); query 2 cites s-b twice
    assert pairs == [(0, 0), (0, 1), (1, 2), (2, 1), (2, 1)]
