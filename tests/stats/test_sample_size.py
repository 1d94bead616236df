"""Sample-size planning for a kappa: the analytic variance against a seeded simulation,
the case counts by hand, and the checks of hand-given numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tiap.limits import LimitError
from tiap.stats import sample_size as ss


def _simulated_cohen_sd(kappa: float, p: float, n: int, runs: int, seed: int) -> float:
    """Cohen's kappa of two raters under the common-correlation model (each copies a
    shared label with probability sqrt(kappa), else draws its own; prevalence p)."""
    rng = np.random.default_rng(seed)
    shared = rng.random((runs, n)) < p
    own = rng.random((runs, n, 2)) < p
    copies = rng.random((runs, n, 2)) < math.sqrt(kappa)
    x = np.where(copies, shared[:, :, None], own)
    a, b = x[:, :, 0], x[:, :, 1]
    po = (a == b).mean(axis=1)
    pa, pb = a.mean(axis=1), b.mean(axis=1)
    pe = pa * pb + (1 - pa) * (1 - pb)
    return float(((po - pe) / (1 - pe)).std(ddof=1))


def test_analytic_sd_matches_a_simulation_within_five_percent() -> None:
    # k 0.7, p 0.4, n 115: 0.0681 analytic (by hand in the module doc)
    analytic = ss.sd_at(ss.cohen_kappa_variance(0.7, 0.4), 115)
    assert analytic == pytest.approx(0.0681, abs=5e-5)
    simulated = _simulated_cohen_sd(0.7, 0.4, 115, 20_000, seed=11)
    assert abs(analytic - simulated) / simulated < 0.05


def test_case_counts_by_hand() -> None:
    v = ss.cohen_kappa_variance(0.7, 0.4)  # 0.53275
    assert v == pytest.approx(0.53275, abs=1e-12)
    z = ss.normal_quantile()
    # width 0.2: 0.53275 x (2 x 1.959964 / 0.2)^2 = 204.66 -> 205
    assert ss.cases_for_width(v, 0.2) == math.ceil(v * (2 * z / 0.2) ** 2) == 205
    # lower bound above 0.6: 0.53275 x 1.959964^2 / 0.1^2 = 204.66 -> 205
    assert ss.cases_for_lower_bound(v, 0.7, 0.6) == 205
    assert ss.cases_for_lower_bound(v, 0.7, 0.5) == math.ceil(v * z * z / 0.04)
    assert ss.cases_for_lower_bound(v, 0.6, 0.6) is None
    assert ss.cases_for_lower_bound(v, 0.5, 0.6) is None


def test_simulated_fleiss_variance_is_seeded_and_matches_cohen_for_two_raters() -> None:
    a = ss.simulated_fleiss_variance(0.7, 0.4, 2, seed=5)
    assert a == ss.simulated_fleiss_variance(0.7, 0.4, 2, seed=5)
    # two raters with common margins: Fleiss' kappa (Scott's pi) ~ Cohen's kappa
    assert a == pytest.approx(ss.cohen_kappa_variance(0.7, 0.4), rel=0.1)
    # more raters, a smaller variance per case
    assert ss.simulated_fleiss_variance(0.7, 0.4, 5, seed=5) < a


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ss.cohen_kappa_variance(float("nan"), 0.4), "kappa must be a finite number"),
        (lambda: ss.cohen_kappa_variance(1.5, 0.4), "kappa must lie between -1 and 1"),
        (lambda: ss.cohen_kappa_variance(0.7, 0.0), "prevalence must lie strictly between"),
        (lambda: ss.cohen_kappa_variance(0.7, 1.2), "prevalence must lie between 0 and 1"),
        (lambda: ss.cases_for_width(0.5, 0.0), "width must be greater than 0"),
        (lambda: ss.cases_for_width(0.5, float("inf")), "width must be a finite number"),
        (lambda: ss.cases_for_lower_bound(0.5, 0.7, -2), "threshold must lie between -1 and 1"),
        (lambda: ss.simulated_fleiss_variance(0.7, 0.4, 1), "raters must be at least 2"),
    ],
)
def test_hand_given_numbers_are_checked(call: object, message: str) -> None:
    with pytest.raises(LimitError, match=message):
        call()  # type: ignore[operator]
