"""Confidence intervals for a share (a binomial proportion) that are honest at
small n, and when a percentile bootstrap interval can be relied on.

A percentile bootstrap interval of a share is degenerate when n is small: four
cases out of four give ``[1, 1]`` on every resample, an interval of no width that
claims certainty four observations cannot give. A share of ``k`` successes in
``n`` trials has exact or near-exact intervals instead:

- **Wilson score interval** (Wilson 1927, "Probable inference, the law of
  succession, and statistical inference", JASA 22:209-212; recommended for small
  n by Brown, Cai & DasGupta 2001, "Interval estimation for a binomial
  proportion", Statistical Science 16:101-133). With ``p = k/n`` and ``z`` the
  standard normal quantile at ``1 - (1 - confidence)/2``::

      centre    = (p + z**2 / (2n)) / (1 + z**2 / n)
      half      = z / (1 + z**2 / n) * sqrt(p (1 - p) / n + z**2 / (4 n**2))
      interval  = [centre - half, centre + half]

  It is never degenerate: 4 of 4 at 95% is [0.510, 1] (worked by hand:
  ``z**2 = 3.8415``; centre ``= (1 + 0.4802) / 1.9604 = 0.7551``; half ``=
  0.9998 * sqrt(3.8415 / 64) = 0.2449``; lower ``0.5101``, upper 1 at the
  bound).

- **Clopper-Pearson ("exact") interval** (Clopper & Pearson 1934, "The use of
  confidence or fiducial limits illustrated in the case of the binomial",
  Biometrika 26:404-413): the bounds are quantiles of beta distributions, with
  ``a = 1 - confidence``::

      lower = Beta(a/2; k, n - k + 1)       (0 when k = 0)
      upper = Beta(1 - a/2; k + 1, n - k)   (1 when k = n)

  Its coverage is at least the nominal level for every true share, so it is
  wider: 4 of 4 at 95% is [0.025**(1/4), 1] = [0.398, 1].

These are the intervals of ``statsmodels.stats.proportion.proportion_confint``
with ``method="wilson"`` and ``method="beta"`` (the tests check them against it).

A percentile bootstrap interval over cases (kappas, alpha, mean agreement: no
closed form) is taken as reliable only on at least :data:`RELIABLE_PERCENTILE_N`
cases; below that it is shown marked unreliable, never as a plain interval.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal

from tiap.limits import LimitError, check_int

#: the confidence level of every interval tiap reports.
CONFIDENCE = 0.95
#: the fewest cases on which a percentile bootstrap interval is taken as reliable.
RELIABLE_PERCENTILE_N = 30

ShareMethod = Literal["wilson", "clopper-pearson"]

__all__ = [
    "CONFIDENCE",
    "RELIABLE_PERCENTILE_N",
    "ShareMethod",
    "check_confidence",
    "clopper_pearson_interval",
    "percentile_reliable",
    "share_interval",
    "wilson_interval",
]


def _counts(successes: object, n: object) -> tuple[int, int]:
    """``(successes, n)`` when ``n >= 1`` and ``0 <= successes <= n`` (integers)."""
    total = check_int("n", n, minimum=1, maximum=2**62)
    k = check_int("successes", successes, minimum=0, maximum=2**62)
    if k > total:
        raise LimitError("successes", f"must not exceed n ({k} > {total})")
    return k, total


def check_confidence(confidence: object) -> float:
    """A confidence level: a finite number in (0, 1), else a :class:`LimitError`."""
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise LimitError("confidence", f"must be a number in (0, 1) (got {confidence!r})")
    c = float(confidence)
    if not (math.isfinite(c) and 0.0 < c < 1.0):
        raise LimitError("confidence", f"must be a finite number in (0, 1) (got {c})")
    return c


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` in ``n`` (see the module doc).

    ``n`` must be at least 1, ``successes`` in ``[0, n]`` and ``confidence`` in
    (0, 1); anything else raises a one-line :class:`~tiap.limits.LimitError`."""
    k, total = _counts(successes, n)
    c = check_confidence(confidence)
    z = NormalDist().inv_cdf(1.0 - (1.0 - c) / 2.0)
    p = k / total
    z2n = z * z / total
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / total + z2n / (4.0 * total))
    lower = 0.0 if k == 0 else max(0.0, centre - half)
    upper = 1.0 if k == total else min(1.0, centre + half)
    return lower, upper


def clopper_pearson_interval(
    successes: int, n: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Clopper-Pearson interval of ``successes`` in ``n`` (see the module doc);
    the same checks as :func:`wilson_interval`."""
    from scipy.special import betaincinv  # the beta quantile; scipy loads on first use

    k, total = _counts(successes, n)
    alpha = 1.0 - check_confidence(confidence)
    lower = 0.0 if k == 0 else float(betaincinv(k, total - k + 1, alpha / 2.0))
    upper = 1.0 if k == total else float(betaincinv(k + 1, total - k, 1.0 - alpha / 2.0))
    return lower, upper


_METHODS = {"wilson": wilson_interval, "clopper-pearson": clopper_pearson_interval}


def share_interval(
    successes: int, n: int, method: ShareMethod = "wilson", confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The interval of a share by ``method`` (``wilson`` or ``clopper-pearson``)."""
    interval = _METHODS.get(method)
    if interval is None:
        raise LimitError("method", f"must be one of {', '.join(_METHODS)} (got {method!r})")
    return interval(successes, n, confidence)


def percentile_reliable(n: int) -> bool:
    """May a percentile bootstrap interval over ``n`` cases be relied on (at least
    :data:`RELIABLE_PERCENTILE_N` of them)?"""
    return n >= RELIABLE_PERCENTILE_N
