"""The bootstrap core: draws in chunks equal one whole draw, and percentile intervals
kept in bounded memory equal numpy's percentiles over the whole resamples x units
matrix, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from tiap.errors import TiapError
from tiap.stats import BootstrapBatch, Draws, ResampleValues, collect, percentile_points


def _whole_counts(n: int, resamples: int, seed: int) -> np.ndarray:
    """The reference: one resample at a time, each unit's count in it."""
    rng = np.random.default_rng(seed)
    rows = [rng.integers(0, n, n, dtype=np.int32) for _ in range(resamples)]
    return np.array([np.bincount(r, minlength=n) for r in rows], dtype=np.float64)


def test_chunks_are_the_rows_of_one_whole_draw() -> None:
    whole = _whole_counts(37, 250, 1337)
    for chunk_elements in (1, 37 * 7, 37 * 64, 10**9):
        draws = Draws(37, 250, 1337, chunk_elements=chunk_elements)
        got = np.vstack([c.copy() for c in draws.counts()])
        assert np.array_equal(got, whole), chunk_elements
    assert (whole.sum(axis=1) == 37).all()
    assert not np.array_equal(np.vstack(list(Draws(37, 250, 1338).counts())), whole)


def test_positions_drawn_as_int32_are_those_drawn_as_int64() -> None:
    """numpy draws positions below 2**32 from one stream whatever the integer type, so
    the counts equal a whole ``integers(0, n, (R, n))`` draw of int64 positions."""
    for n in (3, 37, 2000):
        drawn = np.random.default_rng(1337).integers(0, n, size=(90, n))
        flat = (drawn + (np.arange(90) * n)[:, None]).ravel()
        whole = np.bincount(flat, minlength=90 * n).reshape(90, n)
        got = np.vstack([c.copy() for c in Draws(n, 90, 1337, chunk_elements=n * 7).counts()])
        assert np.array_equal(got, whole), n


def test_counts_per_group_sum_the_units_of_each_group() -> None:
    groups = np.array([0, 1, 0, 2, 1, 0, 2])
    draws = Draws(7, 40, 9, chunk_elements=7 * 6)
    by_unit = np.vstack([c.copy() for c in draws.counts()])
    by_group = np.vstack([c.copy() for c in draws.counts(groups=groups)])
    for g in range(3):
        assert np.array_equal(by_group[:, g], by_unit[:, groups == g].sum(axis=1))
    with pytest.raises(ValueError, match="groups"):
        next(draws.counts(groups=np.array([0, 1])))


def test_progress_is_called_once_per_chunk_up_to_the_total() -> None:
    seen: list[tuple[int, int]] = []
    draws = Draws(10, 95, 1, chunk_elements=200)  # 20 resamples per chunk
    chunks = sum(1 for _ in draws.counts(lambda done, total: seen.append((done, total))))
    assert draws.rows == 20
    assert chunks == 5
    assert seen == [(20, 95), (40, 95), (60, 95), (80, 95), (95, 95)]


def _statistic(values: np.ndarray):
    """Column means of ``values`` per resample, ``nan`` where a resample draws no
    non-``nan`` value of a column (a ratio of sums, like the reports' figures)."""
    present = (~np.isnan(values)).astype(np.float64)
    filled = np.nan_to_num(values)

    def stat(counts: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (counts @ filled) / (counts @ present)
        out[counts @ present == 0] = np.nan
        return out

    return stat


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.5, 0.99])
def test_chunked_bounded_intervals_equal_the_whole_matrix(confidence: float) -> None:
    rng = np.random.default_rng(5)
    n, resamples = 23, 2000
    values = rng.normal(size=(n, 5))
    values[:, 1] = rng.integers(0, 3, n)  # many ties
    values[rng.random(n) < 0.85, 2] = np.nan  # few units: undefined in some resamples
    values[:, 3] = np.nan  # never defined
    stat = _statistic(values)
    whole = stat(_whole_counts(n, resamples, 1337))
    # a small chunk and a buffer of a few hundred rows: the middle values are let go
    got = collect(
        Draws(n, resamples, 1337, chunk_elements=n * 37),
        stat,
        5,
        confidence=confidence,
        buffer_bytes=5 * 8 * 300,
    )
    low, high = got.bounds()
    q = percentile_points(confidence)
    for j in range(5):
        col = whole[:, j][~np.isnan(whole[:, j])]
        assert got.defined[j] == col.size
        assert got.undefined[j] == resamples - col.size
        if col.size:
            lo, hi = np.percentile(col, q)
            assert (low[j], high[j]) == (lo, hi)  # exactly
        else:
            assert np.isnan(low[j])
            assert np.isnan(high[j])
    assert 0 < got.undefined[2] < resamples
    # the tails alone were kept, except at 50% where the tails are the whole
    assert (got.capacity < resamples) == (confidence != 0.5)


def test_resample_values_refuse_a_wrong_shape_or_too_many_rows() -> None:
    values = ResampleValues(2, 10)
    with pytest.raises(ValueError, match="2 columns"):
        values.add(np.zeros((3, 3)))
    values.add(np.zeros((10, 2)))
    with pytest.raises(ValueError, match="more than 10"):
        values.add(np.zeros((1, 2)))
    with pytest.raises(TiapError, match="resamples"):
        ResampleValues(2, 0)
    with pytest.raises(TiapError, match="confidence"):
        ResampleValues(2, 10, 1.5)


def test_draws_check_their_numbers() -> None:
    with pytest.raises(TiapError, match="n must be at least 1"):
        Draws(0, 10, 1)
    with pytest.raises(TiapError, match="resamples"):
        Draws(5, 0, 1)
    with pytest.raises(TiapError, match="seed"):
        Draws(5, 10, -1)


def test_batch_with_small_chunks_and_buffer_equals_the_default() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.uniform(size=(120, 3)), rng.uniform(size=(120, 3))
    mask = rng.random(120) < 0.6
    sums = np.where(rng.random((120, 1)) < 0.1, 1.0, 0.0)

    def run(**sizes: int) -> tuple[np.ndarray, ...]:
        batch = BootstrapBatch(resamples=1500, seed=3, **sizes)
        batch.add("a-b", mask, ("a", a), ("b", b))
        batch.add_statistic("share", mask, np.hstack([sums, np.ones((120, 1))]), _share, 1)
        batch.compute()
        return (batch["a-b"].low, batch["a-b"].high, *batch.bounds("share"))

    small = run(chunk_elements=200, buffer_bytes=4 * 8 * 200)
    for got, want in zip(small, run(), strict=True):
        assert np.array_equal(got, want)


def _share(means: np.ndarray) -> np.ndarray:
    return means[:, :1] / means[:, 1:]
