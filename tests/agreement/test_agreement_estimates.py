"""The report's bootstrap (the weights of tiap.stats' draws, a chunk at a time)
equals resampling cases explicitly and recomputing each figure with the
reference libraries."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from agreement_support import random_codes
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from tiap.agreement import formulas as st
from tiap.agreement.estimates import evaluate, percentile_interval
from tiap.errors import TiapError
from tiap.stats import Draws, percentile_points


def bootstrap_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """The report's draws as one ``resamples x n`` matrix (small cases only)."""
    return np.vstack([chunk.copy() for chunk in Draws(n, resamples, seed).counts()])


def test_weights_count_draws() -> None:
    w = bootstrap_weights(50, 200, 1337)
    assert w.shape == (200, 50)
    assert (w.sum(axis=1) == 50).all()
    assert (w >= 0).all()
    assert np.array_equal(w, bootstrap_weights(50, 200, 1337))
    assert not np.array_equal(w, bootstrap_weights(50, 200, 1338))
    # every case is drawn about once per replicate on average
    assert w.mean() == pytest.approx(1.0)
    with pytest.raises(TiapError, match="resamples"):  # no resamples: no draws at all
        Draws(50, 0, 1)


def _resampled(codes: np.ndarray, weights_row: np.ndarray) -> np.ndarray:
    return codes[np.repeat(np.arange(len(codes)), weights_row.astype(int))]


def _alpha_lib(codes: np.ndarray, k: int) -> float:
    rel = np.where(codes >= 0, codes, np.nan).T.astype(float)
    return krippendorff.alpha(
        reliability_data=rel, level_of_measurement="nominal", value_domain=list(range(k))
    )


def _fleiss_lib(codes: np.ndarray, k: int) -> float:
    complete = codes[(codes >= 0).all(axis=1)]
    table = np.stack([(complete == c).sum(axis=1) for c in range(k)], axis=1)
    return sm_fleiss(table, method="fleiss")


def _cohen_lib(a: np.ndarray, b: np.ndarray, k: int) -> float:
    both = (a >= 0) & (b >= 0)
    return cohen_kappa_score(a[both], b[both], labels=list(range(k)))


def test_replicates_match_explicit_resampling() -> None:
    codes = random_codes(3, n=40, m=4, k=3, missing=0.15)
    w = bootstrap_weights(len(codes), 30, 1337)
    stats = {
        "fleiss": st.fleiss_stat(codes, 3),
        "alpha": st.krippendorff_stat(codes, 3),
        "cohen": st.cohen_stat(codes[:, 0], codes[:, 2], 3),
    }
    for b in range(len(w)):
        sample = _resampled(codes, w[b])
        got = {name: s.finish((w[b] @ s.features)[None, :])[0] for name, s in stats.items()}
        assert got["fleiss"] == pytest.approx(_fleiss_lib(sample, 3), abs=1e-9)
        assert got["alpha"] == pytest.approx(_alpha_lib(sample, 3), abs=1e-9)
        assert got["cohen"] == pytest.approx(_cohen_lib(sample[:, 0], sample[:, 2], 3), abs=1e-9)


def test_intervals_are_percentiles_of_library_replicates() -> None:
    codes = random_codes(11, n=30, m=5, k=3, missing=0.1)
    w = bootstrap_weights(len(codes), 200, 1337)
    est = evaluate({"alpha": st.krippendorff_stat(codes, 3)}, Draws(len(codes), 200, 1337))
    est = est["alpha"]
    reps = np.array([_alpha_lib(_resampled(codes, row), 3) for row in w])
    lo, hi = np.percentile(reps[np.isfinite(reps)], [2.5, 97.5])
    assert est.value == pytest.approx(_alpha_lib(codes, 3), abs=1e-9)
    assert est.ci is not None
    assert est.ci[0] == pytest.approx(lo, abs=1e-9)
    assert est.ci[1] == pytest.approx(hi, abs=1e-9)
    assert est.ci[0] <= est.value <= est.ci[1]


def test_undefined_replicates_are_left_out_of_the_interval() -> None:
    values = np.array([0.1, np.nan, 0.5, 0.3, np.nan])
    lo, hi = percentile_interval(values)  # type: ignore[misc]
    assert lo == pytest.approx(np.percentile([0.1, 0.5, 0.3], 2.5))
    assert hi == pytest.approx(np.percentile([0.1, 0.5, 0.3], 97.5))
    assert percentile_interval(np.array([np.nan, 0.2])) is None


def test_undefined_point_estimate_has_reason_and_no_interval() -> None:
    codes = np.array([[0, 0], [0, 0], [0, 0]])
    est = evaluate({"k": st.fleiss_stat(codes, 2)}, Draws(3, 50, 1))["k"]
    assert est.value is None
    assert est.ci is None
    assert est.reason is not None
    assert "same category" in est.reason


def test_one_pass_in_chunks_equals_the_whole_weight_matrix() -> None:
    """Every figure from one pass over small chunks: the same intervals, bit for bit,
    as each figure's replicates from the whole resamples x cases matrix at once."""
    codes = random_codes(5, n=45, m=4, k=3, missing=0.2)
    stats = {
        "fleiss": st.fleiss_stat(codes, 3),
        "alpha": st.krippendorff_stat(codes, 3),
        "cohen": st.cohen_stat(codes[:, 1], codes[:, 3], 3),
        "pa": st.mean_pairwise_agreement_stat(codes, 3),
    }
    seen: list[tuple[int, int]] = []
    width = sum(s.features.shape[1] for s in stats.values())  # the sums of a replicate
    draws = Draws(len(codes), 500, 1337, chunk_elements=width * 60)  # 60 replicates a chunk
    est = evaluate(stats, draws, progress=lambda done, total: seen.append((done, total)))
    whole = bootstrap_weights(len(codes), 500, 1337)
    for name, s in stats.items():
        replicates = s.finish(whole @ s.features)
        finite = replicates[np.isfinite(replicates)]
        assert est[name].ci == tuple(np.percentile(finite, percentile_points(0.95))), name
    assert seen[-1] == (500, 500)
    assert len(seen) == 9
