"""How many cases a kappa needs: its standard deviation as a function of n, and the n at
which its confidence interval is a given width or its lower bound clears a threshold.

A kappa estimated on ``n`` cases has a standard deviation close to ``sqrt(V / n)``,
``V`` its *per-case variance*. With ``z`` the normal quantile of the confidence level
(1.96 at 95%), the interval ``kappa +- z sqrt(V / n)`` is

- ``w`` wide at ``n_width = ceil(V (2 z / w)**2)`` cases, and
- above a threshold ``t < kappa`` at ``n_lower = ceil(V z**2 / (kappa - t)**2)`` cases
  (never, when ``kappa <= t``).

``V`` comes from one of three places:

- **Cohen's kappa of two raters on a binary scale**, analytically (Donner & Eliasziw
  1992, "A goodness-of-fit approach to inference procedures for the kappa statistic",
  Statistics in Medicine 11:1511-1519; the large-sample variance of Fleiss, Cohen &
  Everitt 1969 under the common-correlation model, where both raters have the
  positive-label prevalence ``p``)::

      V1 = (1 - k) [ (1 - k)(1 - 2k) + k (2 - k) / (2 p (1 - p)) ]

  Worked by hand at k = 0.7, p = 0.4: ``1 - k = 0.3``; ``(1 - k)(1 - 2k) = -0.12``;
  ``k (2 - k) / (2 p (1 - p)) = 0.91 / 0.48 = 1.895833``; ``V1 = 0.3 x 1.775833 =
  0.53275``; at n = 115, SD = sqrt(0.53275 / 115) = 0.0681 (a seeded simulation of the
  same model gives 0.0689).
- **A figure with bootstrap intervals** (Fleiss' kappa, any kappa on more than two
  labels): ``V = n_observed x Var_bootstrap``, the resamples' variance scaled by the
  cases it was drawn on.
- **Fleiss' kappa given by hand** (``kappa``, ``prevalence``, ``raters``, no data): a
  seeded simulation of the common-correlation model (:func:`simulated_fleiss_variance`).

The normal approximation is the planning rule, not the report's intervals (those are
percentile bootstrap intervals); a plan says how many cases to label, and the report
on those cases says what they show.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from tiap.limits import (
    check_cases,
    check_interval_width,
    check_kappa,
    check_prevalence,
    check_raters,
    check_seed,
)
from tiap.stats.intervals import CONFIDENCE, check_confidence

__all__ = [
    "cases_for_lower_bound",
    "cases_for_width",
    "cohen_kappa_variance",
    "normal_quantile",
    "sd_at",
    "simulated_fleiss_variance",
]

#: cases and replicates of the simulation behind a hand-given Fleiss' kappa's variance
SIMULATED_CASES = 400
SIMULATED_REPLICATES = 2000
#: the most rater labels one chunk of the simulation draws at once
_CHUNK_LABELS = 2_000_000


def normal_quantile(confidence: float = CONFIDENCE) -> float:
    """``z`` of a two-sided interval at ``confidence`` (1.95996 at 0.95)."""
    c = check_confidence(confidence)
    return NormalDist().inv_cdf(1.0 - (1.0 - c) / 2.0)


def cohen_kappa_variance(kappa: float, prevalence: float) -> float:
    """``V1``, the per-case variance of Cohen's kappa of two raters on a binary scale
    with common prevalence ``prevalence`` (see the module doc)."""
    k = check_kappa("kappa", kappa)
    p = check_prevalence("prevalence", prevalence)
    return (1.0 - k) * ((1.0 - k) * (1.0 - 2.0 * k) + k * (2.0 - k) / (2.0 * p * (1.0 - p)))


def sd_at(variance: float, n: int) -> float:
    """The standard deviation of a figure with per-case variance ``variance`` on ``n`` cases."""
    return math.sqrt(max(variance, 0.0) / check_cases("n", n))


def cases_for_width(variance: float, width: float, confidence: float = CONFIDENCE) -> int:
    """The fewest cases at which the interval is at most ``width`` wide (at least 1)."""
    w = check_interval_width("width", width)
    z = normal_quantile(confidence)
    return max(1, math.ceil(max(variance, 0.0) * (2.0 * z / w) ** 2 - 1e-9))


def cases_for_lower_bound(
    variance: float, estimate: float, threshold: float, confidence: float = CONFIDENCE
) -> int | None:
    """The fewest cases at which ``estimate``'s interval lies above ``threshold`` (at
    least 1); ``None`` when ``estimate <= threshold`` (no number of cases does it)."""
    k = check_kappa("kappa", estimate)
    t = check_kappa("threshold", threshold)
    if k <= t:
        return None
    z = normal_quantile(confidence)
    return max(1, math.ceil(max(variance, 0.0) * z * z / (k - t) ** 2 - 1e-9))


def _fleiss_of(positives: np.ndarray, m: int) -> np.ndarray:
    """Fleiss' kappa per row of ``positives`` (replicates x cases: how many of ``m``
    raters gave the positive label); ``nan`` where one label was given throughout."""
    n = positives.shape[1]
    agree = (positives * (positives - 1) + (m - positives) * (m - positives - 1)).sum(axis=1)
    p_bar = agree / (n * m * (m - 1))
    p = positives.sum(axis=1) / (n * m)
    p_e = p * p + (1.0 - p) * (1.0 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_e < 1.0, (p_bar - p_e) / (1.0 - p_e), np.nan)


def simulated_fleiss_variance(
    kappa: float,
    prevalence: float,
    raters: int,
    *,
    seed: int = 1337,
    cases: int = SIMULATED_CASES,
    replicates: int = SIMULATED_REPLICATES,
) -> float:
    """The per-case variance of Fleiss' kappa over ``raters`` raters of a binary label
    of prevalence ``prevalence`` whose pairwise agreement is ``kappa`` beyond chance
    (the common-correlation model: on each case every rater copies a shared label with
    probability ``sqrt(kappa)``, else draws its own; both labels are positive with
    probability ``prevalence``). ``replicates`` samples of ``cases`` cases from
    ``seed``; ``cases x`` their variance. ``kappa`` must be at least 0 (the model has
    no negative agreement)."""
    k = check_kappa("kappa", kappa)
    if k < 0:
        raise ValueError("the simulated variance needs a kappa of at least 0")
    p = check_prevalence("prevalence", prevalence)
    m = check_raters("raters", raters)
    n = check_cases("cases", cases, minimum=2)
    reps = check_cases("replicates", replicates, minimum=2)
    check_seed("seed", seed)
    rng = np.random.default_rng(seed)
    copy = math.sqrt(k)
    rows = max(1, _CHUNK_LABELS // (n * m))
    values = []
    for start in range(0, reps, rows):
        size = min(rows, reps - start)
        shared = rng.random((size, n, 1)) < p
        own = rng.random((size, n, m)) < p
        copies = rng.random((size, n, m)) < copy
        labels = np.where(copies, shared, own)
        values.append(_fleiss_of(labels.sum(axis=2), m))
    kappas = np.concatenate(values)
    kappas = kappas[np.isfinite(kappas)]
    return float(n * kappas.var(ddof=1))
