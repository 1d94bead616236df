"""The target index: target sets, first ranks and hits within k, against the plain-dict
oracle and against the measures computed from it."""

from __future__ import annotations

import numpy as np
import pytest

from bundle_support import make_bundle, mem, random_bundle
from target_oracle import first_hit_rank, target_sets
from tiap.errors import TiapError
from tiap.rescore.metrics import parse_measures
from tiap.rescore.scores import score_runs
from tiap.rescore.target_index import TargetIndex

KS = (1, 3, 10, 60)


@pytest.mark.parametrize("seed", [21, 22])
def test_index_equals_the_oracle_and_the_hit_measure(seed: int) -> None:
    bundle = random_bundle(seed, n_queries=250, n_runs=2, depth=70)
    index = TargetIndex(bundle)
    table = score_runs(bundle, parse_measures("hit", KS))
    sets = target_sets(bundle, "store")
    checked = 0
    for run in bundle.config.runs:
        ranks = index.run(run)
        assert ranks.query_ids == table.query_ids
        rankings = bundle.rankings(run)
        for t in index.targets:
            assert index.store("store").as_sets(t) == sets[t]
            size, first = ranks.size(t).tolist(), ranks.first_rank(t).tolist()
            for q, qid in enumerate(ranks.query_ids):
                ranking, members = rankings.get(qid, []), sets[t][qid]
                assert size[q] == len(members)
                assert first[q] == (first_hit_rank(ranking, members) or 0), (run, t, qid)
                if first[q]:
                    assert ranks.memory_at(q, first[q]) in members
            for k in KS:
                hit = ranks.hit(t, k)
                expected = [
                    first_hit_rank(rankings.get(qid, []), sets[t][qid], k) is not None
                    for qid in ranks.query_ids
                ]
                assert hit.tolist() == expected
                # hit@k in the scores is the same mask wherever the target is non-empty
                column = table.runs[run].values[t][:, table.column(f"hit@{k}")]
                non_empty = np.asarray(size) > 0
                assert np.array_equal(column[non_empty] == 1.0, hit[non_empty])
                assert np.isnan(column[~non_empty]).all()
                checked += int(hit.sum())
    assert checked > 1000  # hits really occur at every cut-off


def _small() -> TargetIndex:
    bundle = make_bundle(
        {"q1": ["s1"], "q2": ["s2"]},
        {"st": [mem("r1", "s1", "raw"), mem("f1", "s1", "fact"), mem("x", "s9", "raw")]},
        {"run": ("st", {"q1": ["x", "f1", "x", "r1"], "q2": ["x"]})},
    )
    return TargetIndex(bundle)


def test_depth_cut_offs_and_errors() -> None:
    index = _small()
    full = index.run("run")  # every rank: the repeat of x dropped, r1 at rank 3
    assert full.depth == 4
    assert full.ranked.complete
    assert list(full.ranking(0)) == ["x", "f1", "r1"]
    assert full.first_rank("raw").tolist() == [3, 0]
    assert full.hit("raw", 2).tolist() == [False, False]
    assert full.hit("raw", 100).tolist() == [True, False]  # past the depth: nothing is ranked
    assert full.hit("canonical", 2).tolist() == [True, False]
    assert full.size("source").tolist() == [2, 0]
    cut = index.run("run", depth=2)
    assert cut.first_rank("raw").tolist() == [0, 0]  # r1 lies below the indexed ranks
    assert cut.hit("canonical", 2).tolist() == [True, False]
    with pytest.raises(TiapError, match="cut-off 3 is deeper than the ranks indexed"):
        cut.hit("raw", 3)
    with pytest.raises(TiapError, match="k must be at least 1"):
        full.hit("raw", 0)
    with pytest.raises(TiapError, match="target 'nope' is not indexed"):
        full.first_rank("nope")
    with pytest.raises(TiapError, match="unknown run 'other'"):
        index.run("other")
    with pytest.raises(TiapError, match="unknown store 'other'"):
        index.store("other")
    with pytest.raises(TiapError, match="unknown target 'nope'"):
        TargetIndex(index.bundle, ("raw", "nope"))
    with pytest.raises(TiapError, match="no target selected"):
        TargetIndex(index.bundle, ())


def test_store_sets_are_built_once_and_returned_values_are_copies() -> None:
    index = _small()
    assert index.store("st") is index.store("st")
    ranks = index.run("run")
    first = ranks.first_rank("raw")
    first[:] = 99  # the caller's copy; the index is unchanged
    assert ranks.first_rank("raw").tolist() == [3, 0]
    assert ranks.hit("raw", 3).tolist() == [True, False]
