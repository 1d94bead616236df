"""Target sets as arrays equal the reference lineage join; ranks and repeats."""

from __future__ import annotations

import numpy as np
import pytest

from bundle_support import make_bundle, mem, random_bundle
from target_oracle import first_hit_rank, target_sets
from tiap.errors import TiapError
from tiap.rescore.ids import IdIndex
from tiap.rescore.lineage import linked_pairs, qrels_targets, store_targets
from tiap.rescore.ranking import first_occurrences, ranked_ids
from tiap.rescore.target_index import RunIndex
from tiap.rescore.targets import TARGETS, Target, register_target


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


def _first_hit(ranking: list[str], target: set[str], k: int | None = None) -> int | None:
    """First rank of a target member within k, read from the index (``None``: no hit)."""
    sets = qrels_targets({"t": {"q": target}}, ["q"])
    ranks = RunIndex.of(sets, ranked_ids({"q": ranking}, ["q"], max(len(ranking), 1)))
    first = int(ranks.first_rank("t")[0])
    if k is None:
        return first or None
    return first if bool(ranks.hit("t", k)[0]) else None


def test_first_hit_rank_uses_first_occurrences() -> None:
    ranking = ["a", "b", "a", "c", "b", "d"]
    assert first_occurrences(ranking) == ["a", "b", "c", "d"]
    for first_hit in (_first_hit, first_hit_rank):  # the index and the plain-dict oracle
        assert first_hit(ranking, {"c"}) == 3  # ranks close up after the repeat of "a"
        assert first_hit(ranking, {"c"}, k=3) == 3
        assert first_hit(ranking, {"c"}, k=2) is None
        assert first_hit(ranking, {"z"}) is None
        assert first_hit([], {"a"}, k=10) is None


def test_ranked_codes_drop_repeats_and_pad() -> None:
    index = IdIndex(list("abcdef"))
    rankings = {"q1": ["a", "b", "a", "c", "b", "d", "e"], "q2": ["f"], "q3": []}
    ranked = ranked_ids(rankings, ["q1", "q2", "q3", "q4"], depth=4)
    codes = ranked.codes(index, strict=True)
    assert codes.tolist() == [[0, 1, 2, 3], [5, -1, -1, -1], [-1] * 4, [-1] * 4]
    assert ranked.present.tolist() == [True, True, True, False]
    assert ranked.repeats.tolist() == [2, 0, 0, 0]
    assert not ranked.complete  # q1 runs past the depth
    # a repeat below the depth changes nothing within it
    ranked2 = ranked_ids({"q1": ["a", "b", "c", "a"]}, ["q1"], depth=3)
    assert ranked2.codes(index, strict=True).tolist() == [[0, 1, 2]]
    assert np.array_equal(ranked2.repeats, [0])


class _Colliding(str):
    """A string whose hash collides with every other one of its kind."""

    __slots__ = ()

    def __hash__(self) -> int:
        return 7


def _codes(index: IdIndex, rankings: dict[str, list[str]], depth: int = 2) -> list[list[int]]:
    """Positions of the ranked ids, every ranked id checked as known first (as scoring does)."""
    ranked = ranked_ids(rankings, list(rankings), depth)
    ranked.check_known(index)
    return ranked.codes(index, strict=True).tolist()


def test_id_index_fast_path_fallback_and_unknown_ids() -> None:
    idx = IdIndex(["m1", "m2", "m3"], what="memory id")
    assert idx.table is not None  # the fast path: ids checked by hash
    assert _codes(idx, {"a": ["m3", "m1"], "b": ["m3"]}) == [[2, 0], [2, -1]]
    assert _codes(idx, {"a": []}) == [[-1, -1]]
    with pytest.raises(TiapError, match="unknown memory id 'zz'"):
        _codes(idx, {"a": ["m1", "zz"]})
    with pytest.raises(TiapError, match="unknown memory id 'zz'"):
        ranked_ids({"a": ["m1", "zz"]}, ["a"], 2).codes(idx, strict=True)
    assert ranked_ids({"a": ["m1", "zz"]}, ["a"], 2).codes(idx, strict=False).tolist() == [[0, -1]]
    colliding = IdIndex([_Colliding("a"), _Colliding("b"), _Colliding("c")])
    assert colliding.table is None  # equal hashes: the exact path
    assert _codes(colliding, {"a": [_Colliding("c"), _Colliding("a")]}) == [[2, 0]]
    with pytest.raises(TiapError, match="unknown id 'zz'"):
        _codes(colliding, {"a": [_Colliding("zz")]})


def test_linked_pairs_check_ids_not_only_hashes() -> None:
    a, b, c = _Colliding("s-a"), _Colliding("s-b"), _Colliding("s-c")
    qry, mem = linked_pairs([[a], [b, a], [c]], [[a], [c], [b, b]])
    pairs = sorted(zip(qry.tolist(), mem.tolist(), strict=True))
    # query 0 cites s-a (memories 0, 1); query 1 cites s-c (memory 2); query 2 cites s-b twice
    assert pairs == [(0, 0), (0, 1), (1, 2), (2, 1), (2, 1)]
