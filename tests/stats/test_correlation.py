"""Pearson and Spearman with bootstrap intervals (tiap.stats.correlation) against scipy,
resample by resample, and the bootstrap interval of a mean."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tiap.stats.bootstrap import Draws
from tiap.stats.correlation import (
    bootstrap_correlation,
    bootstrap_mean,
    midranks,
    weighted_pearson,
)


def _pairs(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, n).astype(float)  # many ties
    y = 0.5 * x + rng.normal(0, 1, n)
    y[:6] = 0.0
    return x, y


def test_midranks_by_hand() -> None:
    # values 3, 1, 3, 2 drawn 1, 2, 0, 1 times: draws 1, 1, 2, 3
    # ranks: the two 1s share 1.5, the 2 is 3, the 3 drawn once is 4; the undrawn 3 ties it
    ranks = midranks(np.array([3.0, 1.0, 3.0, 2.0]), np.array([[1.0, 2.0, 0.0, 1.0]]))
    assert ranks.tolist() == [[4.0, 1.5, 4.0, 3.0]]


def test_observed_values_are_scipys() -> None:
    x, y = _pairs()
    c = bootstrap_correlation(x, y, resamples=200, seed=5)
    assert c.n == 40
    assert c.pearson == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert c.spearman == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    assert c.pearson_low is not None
    assert c.pearson_high is not None
    assert c.pearson_low < c.pearson < c.pearson_high
    assert c.spearman_low is not None
    assert c.spearman_high is not None
    assert c.spearman_low < c.spearman < c.spearman_high


def test_each_resample_is_scipy_on_the_resample_written_out() -> None:
    x, y = _pairs(25, seed=1)
    for counts in Draws(25, 20, 9).counts():
        for w in counts:
            drawn = np.repeat(np.arange(25), w.astype(int))
            row = w[None, :]
            p = weighted_pearson(x, y, row)[0]
            s = weighted_pearson(midranks(x, row), midranks(y, row), row)[0]
            assert p == pytest.approx(stats.pearsonr(x[drawn], y[drawn])[0], abs=1e-10)
            assert s == pytest.approx(stats.spearmanr(x[drawn], y[drawn])[0], abs=1e-10)


def test_interval_is_the_percentiles_of_the_resample_values() -> None:
    x, y = _pairs(30, seed=2)
    resamples = 300
    values = []
    for counts in Draws(30, resamples, 11).counts():
        for w in counts:
            drawn = np.repeat(np.arange(30), w.astype(int))
            values.append(stats.pearsonr(x[drawn], y[drawn])[0])
    low, high = np.percentile(values, [2.5, 97.5])
    c = bootstrap_correlation(x, y, resamples=resamples, seed=11)
    assert c.pearson_low == pytest.approx(low, abs=1e-10)
    assert c.pearson_high == pytest.approx(high, abs=1e-10)


def test_no_variation_gives_no_correlation() -> None:
    c = bootstrap_correlation(np.ones(6), np.arange(6.0), resamples=50)
    assert (c.pearson, c.spearman, c.pearson_low) == (None, None, None)
    assert bootstrap_correlation(np.ones(1), np.ones(1)).pearson is None


def test_mean_interval() -> None:
    v = np.array([0.0, 0.0, 1.0, 0.5, 0.25])
    m = bootstrap_mean(v, resamples=400, seed=3)
    means = [w @ v / 5 for counts in Draws(5, 400, 3).counts() for w in counts]
    assert m.mean == pytest.approx(0.35)
    assert (m.low, m.high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert bootstrap_mean(np.array([])).mean is None


def test_paired_differences_of_pearson_r() -> None:
    from tiap.stats.correlation import correlation_differences

    x, y = _pairs(30, seed=4)
    rng = np.random.default_rng(4)
    xs = np.column_stack([x, x + rng.normal(0, 2, 30), rng.normal(0, 1, 30)])
    got = correlation_differences(xs, y, 1, resamples=200, seed=13)
    r = [stats.pearsonr(xs[:, j], y)[0] for j in range(3)]
    # base column 1 against columns 0 and 2, in column order
    assert [d.mean for d in got] == pytest.approx([r[1] - r[0], r[1] - r[2]], abs=1e-12)
    diffs = []  # the same resamples, written out: each difference from one resample
    for counts in Draws(30, 200, 13).counts():
        for w in counts:
            drawn = np.repeat(np.arange(30), w.astype(int))
            rs = [stats.pearsonr(xs[drawn, j], y[drawn])[0] for j in range(3)]
            diffs.append([rs[1] - rs[0], rs[1] - rs[2]])
    low, high = np.percentile(np.array(diffs), [2.5, 97.5], axis=0)
    assert [d.low for d in got] == pytest.approx(list(low), abs=1e-10)
    assert [d.high for d in got] == pytest.approx(list(high), abs=1e-10)
