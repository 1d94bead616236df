"""Paired bootstrap: determinism, an independent loop implementation, batching; the
Pearson and t statistics against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from tiap.stats.hypothesis import one_sample_t, pearson
from tiap.stats.paired import BootstrapBatch, paired_bootstrap


def _loop_ci(d: np.ndarray, resamples: int, seed: int, confidence: float = 0.95):
    """Straightforward reference: one resample at a time, mean of the drawn differences."""
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        idx = rng.integers(0, len(d), len(d), dtype=np.int32)
        means.append(float(np.mean([d[i] for i in idx])))
    alpha = (1 - confidence) / 2
    return (
        float(np.mean(d)),
        float(np.percentile(means, 100 * alpha)),
        float(np.percentile(means, 100 * (1 - alpha))),
    )


def test_matches_independent_loop() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(0.05, 0.2, size=37)
    res = paired_bootstrap(d, resamples=500, seed=42)
    mean, lo, hi = _loop_ci(d, 500, 42)
    assert res.n == 37
    assert res.mean[0] == pytest.approx(mean, abs=1e-12)
    assert res.low[0] == pytest.approx(lo, abs=1e-12)
    assert res.high[0] == pytest.approx(hi, abs=1e-12)
    assert lo < mean < hi


def test_same_seed_same_interval_other_seed_differs() -> None:
    d = np.random.default_rng(1).normal(size=(50, 3))
    a = paired_bootstrap(d, resamples=300, seed=1337)
    b = paired_bootstrap(d, resamples=300, seed=1337)
    c = paired_bootstrap(d, resamples=300, seed=1338)
    assert np.array_equal(a.low, b.low)
    assert np.array_equal(a.high, b.high)
    assert not np.array_equal(a.low, c.low)


def test_many_resamples_in_chunks_equal_loop() -> None:
    # 3,000 resamples of 900 queries are drawn in several row chunks
    d = np.random.default_rng(2).uniform(-1, 1, size=900)
    res = paired_bootstrap(d, resamples=3000, seed=1337, confidence=0.9)
    rng = np.random.default_rng(1337)
    means = [d[rng.integers(0, 900, 900, dtype=np.int32)].mean() for _ in range(3000)]
    assert res.low[0] == pytest.approx(np.percentile(means, 5), abs=1e-12)
    assert res.high[0] == pytest.approx(np.percentile(means, 95), abs=1e-12)


def test_batch_equals_single_comparisons() -> None:
    rng = np.random.default_rng(3)
    n_all = 60
    a = rng.uniform(size=(n_all, 2))
    b = rng.uniform(size=(n_all, 2))
    c = rng.uniform(size=(n_all, 2))
    m1 = rng.random(n_all) < 0.7
    m2 = rng.random(n_all) < 0.5
    batch = BootstrapBatch(resamples=400, seed=9)
    batch.add("a-b", m1, ("a", a), ("b", b))
    batch.add("c-b", m1, ("c", c), ("b", b))
    batch.add("a-c on m2", m2, ("a", a), ("c", c))
    batch.add("a alone", m2, ("a", a))
    batch.add("nothing", np.zeros(n_all, dtype=bool), ("a", a), ("b", b))
    batch.compute()
    for key, mask, diff in [
        ("a-b", m1, a - b),
        ("c-b", m1, c - b),
        ("a-c on m2", m2, a - c),
        ("a alone", m2, a),
    ]:
        single = paired_bootstrap(diff[mask], resamples=400, seed=9)
        got = batch[key]
        assert got.n == int(mask.sum())
        np.testing.assert_allclose(got.mean, single.mean, atol=1e-12)
        np.testing.assert_allclose(got.low, single.low, atol=1e-12)
        np.testing.assert_allclose(got.high, single.high, atol=1e-12)
    empty = batch["nothing"]
    assert empty.n == 0
    assert np.isnan(empty.low).all()
    with pytest.raises(KeyError):
        batch.add("a-b", m1, ("a", a))


def test_pearson_and_t_match_scipy() -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(0, 5, size=80).astype(float)
    y = 0.1 * x + rng.normal(0, 0.3, size=80)
    c = pearson(x, y)
    ref = sps.pearsonr(x, y)
    assert c.r == pytest.approx(ref.statistic, abs=1e-12)
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert c.r_squared == pytest.approx(ref.statistic**2)
    t = one_sample_t(y)
    ref_t = sps.ttest_1samp(y, 0.0)
    assert t.t == pytest.approx(ref_t.statistic, rel=1e-12)
    assert t.p_value == pytest.approx(ref_t.pvalue, rel=1e-9)
    assert t.mean == pytest.approx(y.mean())


def test_statistics_undefined_cases() -> None:
    assert pearson(np.ones(5), np.arange(5.0)).r is None  # no variance in x
    assert pearson(np.array([1.0]), np.array([2.0])).r is None
    assert one_sample_t(np.array([])).mean is None
    assert one_sample_t(np.array([0.2])).t is None
    same = one_sample_t(np.array([0.3, 0.3, 0.3]))
    assert same.mean == pytest.approx(0.3)
    assert same.t is None


def test_progress_counts_resamples_over_every_subset_size() -> None:
    rng = np.random.default_rng(6)
    a, b = rng.uniform(size=(40, 2)), rng.uniform(size=(40, 2))
    seen: list[tuple[int, int]] = []
    batch = BootstrapBatch(resamples=100, seed=1, chunk_elements=40 * 30)
    batch.add("all", np.ones(40, dtype=bool), ("a", a), ("b", b))
    batch.add("half", np.arange(40) < 20, ("a", a), ("b", b))
    batch.compute(lambda done, total: seen.append((done, total)))
    assert {total for _, total in seen} == {200}  # two sizes, 100 resamples each
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert seen[-1] == (200, 200)
    assert (100, 200) in seen  # the first pass ends half-way
