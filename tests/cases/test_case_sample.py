"""Stratified validation subsets: the allocation and spacing rule checked by hand."""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest
from case_support import make_case

from tiap.cases.extract import extract_cases
from tiap.cases.sample import (
    default_overlap,
    evenly_spaced,
    largest_remainder,
    sample_subset,
    stratified_sample,
)
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.traces import read_bundle


def pool() -> list:
    """15 cases: ten at rank 1-5 (run a, queries 0..9), four at 6-20, one at 21-60.

    Given in a scrambled order: the sampler must sort them itself.
    """
    top = [make_case(f"t{i}", run="a", query_index=i, rank=1 + i % 5) for i in range(10)]
    mid = [
        make_case("m-b4", run="b", query_index=4, rank=7),
        make_case("m-a12", run="a", query_index=12, rank=9),
        make_case("m-b1", run="b", query_index=1, rank=20),
        make_case("m-a10", run="a", query_index=10, rank=6),
    ]
    low = [make_case("l-b7", run="b", query_index=7, rank=33)]
    cases = top + mid + low
    random.Random(5).shuffle(cases)
    return cases


def test_hand_worked_sample() -> None:
    # n = 6 from N = 15. Quotas n * N_b / N: 1-5: 6*10/15 = 4.0, 6-20: 6*4/15 = 1.6,
    # 21-60: 6*1/15 = 0.4. Floors 4 + 1 + 0 = 5; the one left goes to the largest
    # remainder (0.6, bucket 6-20): allocation 4 / 2 / 0.
    # Bucket 1-5 in (run, query) order is t0..t9; N_b = 10, n_b = 4: positions
    # floor((i + 0.5) * 10 / 4) = floor(1.25), floor(3.75), floor(6.25), floor(8.75)
    # = 1, 3, 6, 8 -> t1, t3, t6, t8.
    # Bucket 6-20 in (run, query) order is (a,10) (a,12) (b,1) (b,4); N_b = 4, n_b = 2:
    # positions floor(0.5 * 2) = 1 and floor(1.5 * 2) = 3 -> m-a12, m-b4.
    result = stratified_sample(pool(), name="v", n=6, overlap=0)
    assert result.allocation == {"1-5": 4, "6-20": 2, "21-60": 0}
    # Stored order: by (run, query index).
    assert result.case_ids == ["t1", "t3", "t6", "t8", "m-a12", "m-b4"]
    assert result.overlap_ids == []
    assert result.pool_size == 15
    assert result.notes == []


def test_remainder_ties_go_to_the_earlier_bucket() -> None:
    # Three buckets of one case each, n = 2: quotas 2/3 each, floors 0, two left over
    # with equal remainders -> 1-5 and 6-20 get one each, 21-60 none.
    cases = [make_case("x", rank=40), make_case("y", rank=10), make_case("z", rank=2)]
    result = stratified_sample(cases, name="v", n=2, overlap=0)
    assert result.allocation == {"1-5": 1, "6-20": 1, "21-60": 0}
    assert sorted(result.case_ids) == ["y", "z"]


def test_overlap_is_allocated_like_the_subset_and_drawn_with_the_seed() -> None:
    # Subset allocation 4 / 2 (above); overlap 3: quotas 3*4/6 = 2 and 3*2/6 = 1.
    subsets, overlaps = set(), set()
    for seed in range(12):
        result = stratified_sample(pool(), name="v", n=6, overlap=3, seed=seed)
        assert result.overlap_allocation == {"1-5": 2, "6-20": 1, "21-60": 0}
        subsets.add(tuple(result.case_ids))
        overlaps.add(tuple(result.overlap_ids))
        # The documented draw, done independently: one Random(seed), strata in bucket
        # order, each a sample over that stratum's chosen cases in (run, query) order.
        rng = random.Random(seed)
        expected = set(rng.sample(["t1", "t3", "t6", "t8"], 2)) | set(
            rng.sample(["m-a12", "m-b4"], 1)
        )
        assert set(result.overlap_ids) == expected
        assert result.overlap_ids == [c for c in result.case_ids if c in expected]
    assert len(subsets) == 1  # the seed never changes the subset
    assert len(overlaps) > 1  # but it does change the overlap
    again = stratified_sample(pool(), name="v", n=6, overlap=3, seed=3)
    assert again == stratified_sample(pool(), name="v", n=6, overlap=3, seed=3)


def test_small_pool_takes_everything() -> None:
    result = stratified_sample(pool(), name="v", n=115, overlap=36)
    assert sorted(result.case_ids) == sorted(c.case_id for c in pool())
    assert result.allocation == {"1-5": 10, "6-20": 4, "21-60": 1}
    assert len(result.overlap_ids) == 15
    assert result.notes == [
        "the pool has only 15 cases (fewer than n=115): taking all",
        "overlap reduced from 36 to 15 (the size of the subset)",
    ]


@pytest.mark.parametrize(
    ("n", "overlap", "message"),
    [
        (0, 0, "--n must be at least 1"),
        (5, -1, "--overlap must not be negative"),
        (5, 6, r"--overlap \(6\) cannot exceed --n \(5\)"),
    ],
)
def test_bad_parameters(n: int, overlap: int, message: str) -> None:
    with pytest.raises(TiapError, match=message):
        stratified_sample(pool(), name="v", n=n, overlap=overlap)
    with pytest.raises(TiapError, match="no cases to sample from"):
        stratified_sample([], name="v", n=5, overlap=0)


@pytest.mark.parametrize(
    ("sizes", "n"),
    [
        ({"a": 1210, "b": 520, "c": 172}, 115),  # the paper's scale
        ({"a": 7, "b": 7, "c": 7}, 10),
        ({"a": 1, "b": 0, "c": 99}, 3),
        ({"a": 3, "b": 5}, 8),
        ({"a": 5}, 0),
    ],
)
def test_largest_remainder_against_exact_quotas(sizes: dict[str, int], n: int) -> None:
    got = largest_remainder(sizes, n)
    total = sum(sizes.values())
    assert sum(got.values()) == n
    for b, size in sizes.items():
        quota = Fraction(n * size, total)
        assert got[b] in (quota.__floor__(), quota.__ceil__())
        assert got[b] <= size
    # Exactly the strata with the largest fractional parts were rounded up.
    ups = [b for b in sizes if got[b] > Fraction(n * sizes[b], total).__floor__()]
    downs = [b for b in sizes if b not in ups]
    if ups and downs:
        frac = {b: Fraction(n * sizes[b], total) % 1 for b in sizes}
        assert min(frac[b] for b in ups) >= max(frac[b] for b in downs)


def test_largest_remainder_paper_scale_by_hand() -> None:
    # 115 of 1,902 over 1,210 / 520 / 172: quotas 73.16, 31.44, 10.40 -> floors 73, 31,
    # 10 (114); the one left goes to 6-20 (remainder .44 beats .40 and .16).
    assert largest_remainder({"1-5": 1210, "6-20": 520, "21-60": 172}, 115) == {
        "1-5": 73,
        "6-20": 32,
        "21-60": 10,
    }


def test_evenly_spaced_positions() -> None:
    assert evenly_spaced(10, 4) == [1, 3, 6, 8]
    assert evenly_spaced(5, 5) == [0, 1, 2, 3, 4]
    assert evenly_spaced(7, 1) == [3]
    assert evenly_spaced(7, 0) == []
    with pytest.raises(TiapError):
        evenly_spaced(2, 3)


def test_default_overlap_scales_the_papers_share() -> None:
    assert default_overlap(115) == 36
    assert default_overlap(20) == 6  # 20 * 36 / 115 = 6.26
    assert default_overlap(1) == 0


# ----------------------------------------------------------------------- in a workspace


def test_subset_is_stored_with_params(tmp_path: Path) -> None:
    with Workspace(tmp_path / "w.sqlite") as ws:
        ws.add_cases(pool())
        result = sample_subset(ws, name="validation", n=6, overlap=3, seed=7)
        assert ws.case_ids(subset="validation") == result.case_ids
        assert ws.overlap_ids("validation") == result.overlap_ids
        params = ws.subset_params("validation")
        assert params["kind"] == "validation"
        assert (params["n"], params["overlap"], params["seed"]) == (6, 3, 7)
        assert params["from_runs"] is None
        assert params["rule"].startswith("strata=rank_bucket")
        assert params["allocation"] == {"1-5": 4, "6-20": 2, "21-60": 0}
        assert (params["size"], params["overlap_size"], params["pool_size"]) == (6, 3, 15)
        assert result.params == params
        assert ws.events("cases.sample")[0]["name"] == "validation"
        with pytest.raises(TiapError, match="exists already"):
            sample_subset(ws, name="validation", n=6, overlap=3)
        sample_subset(ws, name="validation", n=2, overlap=1, replace=True)
        assert len(ws.case_ids(subset="validation")) == 2


def test_from_runs_restricts_the_pool(tmp_path: Path) -> None:
    with Workspace(tmp_path / "w.sqlite") as ws:
        ws.add_cases(pool())
        result = sample_subset(ws, name="b-only", n=3, overlap=1, from_runs=["b"])
        # Run b holds m-b1, m-b4 (6-20) and l-b7 (21-60): all three are taken.
        assert result.case_ids == ["m-b1", "m-b4", "l-b7"]
        assert ws.subset_params("b-only")["from_runs"] == ["b"]
        with pytest.raises(TiapError, match=r"no cases from run\(s\) zz .*runs with cases: a, b"):
            sample_subset(ws, name="x", n=3, overlap=0, from_runs=["zz"])
        with pytest.raises(TiapError, match="needs a name"):
            sample_subset(ws, name=" ", n=3, overlap=0)


def test_sample_bundle_end_to_end(tmp_path: Path, sample_bundle_dir: Path) -> None:
    with Workspace(tmp_path / "w.sqlite") as ws:
        report = extract_cases(read_bundle(sample_bundle_dir), ws)
        result = sample_subset(ws, name="validation", n=12, overlap=4, seed=1337)
        assert result.pool_size == report.contested
        assert len(result.case_ids) == 12
        assert len(result.overlap_ids) == 4
        assert sum(result.allocation.values()) == 12
        assert result.allocation["6-20"] >= 1
        facts3 = sample_subset(ws, name="f3", n=200, overlap=5, from_runs=["lexical-facts3"])
        assert len(facts3.case_ids) == report.runs["lexical-facts3"].contested
        assert facts3.notes[0].startswith("the pool has only")
