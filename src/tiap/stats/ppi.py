"""Prediction-powered inference (PPI) for a mean, and its stratified form.

A mean (a prevalence, when the values are 0/1 indicators) is estimated from ``n``
labelled units with a reference value ``y`` and a prediction ``f`` (the panel's
majority), and ``N`` unlabelled units with a prediction only (Angelopoulos, Bates,
Fannjiang, Jordan, Zrnic, "Prediction-powered inference", Science 382, 2023). With a
tuning weight ``lam`` (PPI++: Angelopoulos, Duchi, Zrnic, "PPI++: Efficient
prediction-powered inference", arXiv:2311.01453, 2023)::

    theta = lam * mean(f_unlabelled) + mean(y - lam * f)
    var   = lam**2 * var0(f_unlabelled) / N + var0(y - lam * f) / n
    CI    = theta -/+ z * sqrt(var)          z = the normal quantile at 1 - alpha/2

``var0`` is the variance with divisor n (ddof=0). ``lam = 1`` is plain PPI,
``lam = 0`` the classical estimate from the labels alone. The power-tuned weight
(PPI++) is::

    lam = cov0(y, f) / ((1 + n/N) * var1(f over labelled and unlabelled together))

clipped to [0, 1] (``cov0`` with divisor n over the labelled units, ``var1`` with
divisor count - 1). These are the formulas of ``ppi_py.ppi_mean_ci`` (the tests check
them against it); unlike it, the tuned weight is 0 when the predictions do not vary
(nothing to learn from them) and when there is no unlabelled unit.

**Stratified.** When the labelled units were drawn at random within strata, each
stratum ``h`` (``N_h`` units in all, labelled and unlabelled) is estimated on its
own, with its own tuned weight, and::

    theta = sum_h W_h * theta_h         W_h = N_h / sum N_h
    var   = sum_h W_h**2 * var_h

A stratum whose every unit is labelled is estimated from its labels alone (its
weight ``lam`` is 0). A stratum needs at least two labelled units for a variance:
:func:`pool_strata` pools one with fewer with its neighbour (see there).

**Effective n** (:func:`effective_n`): the number of labels alone that would give the
interval's width under the same design: ``n * var(lam = 0) / var``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from tiap.errors import TiapError
from tiap.stats.intervals import CONFIDENCE, check_confidence

#: the fewest labelled units a stratum is estimated on (a variance needs two).
MIN_LABELLED = 2
#: the fewest labelled units on which a PPI interval is taken as reliable (simulated
#: coverage of a 95% interval is about 0.92 at n = 25, 0.95 at n = 115).
RELIABLE_PPI_N = 30

__all__ = [
    "MIN_LABELLED",
    "RELIABLE_PPI_N",
    "MeanEstimate",
    "StratifiedEstimate",
    "StratumSample",
    "effective_n",
    "pool_strata",
    "ppi_mean",
    "stratified_ppi",
]


@dataclass(frozen=True)
class MeanEstimate:
    """A PPI estimate of a mean: the value, its variance and interval, the weight
    ``lam`` it used, and the labelled (``n``) and unlabelled (``n_unlabelled``) counts."""

    value: float
    variance: float
    ci: tuple[float, float]
    lam: float
    n: int
    n_unlabelled: int


@dataclass(frozen=True)
class StratumSample:
    """One stratum's values as the sums every formula needs: over its ``n`` labelled
    units the sums of ``y``, ``f`` (the prediction), ``y**2``, ``f**2`` and ``y*f``; over
    its ``n_unlabelled`` unlabelled units the sums of ``f`` and ``f**2``. Build it from
    values (:meth:`of_values`) or, for 0/1 indicators, from counts
    (:meth:`of_indicators`)."""

    name: str
    n: int
    sum_y: float
    sum_f: float
    sum_yy: float
    sum_ff: float
    sum_yf: float
    n_unlabelled: int
    sum_u: float
    sum_uu: float

    @classmethod
    def of_values(
        cls, name: str, y: object, yhat: object, yhat_unlabelled: object
    ) -> StratumSample:
        """From the reference and predicted values of the labelled units and the
        predictions of the unlabelled ones."""
        ys, fs, us = _checked(y, yhat, yhat_unlabelled)
        return cls(
            name=name,
            n=len(ys),
            sum_y=float(ys.sum()),
            sum_f=float(fs.sum()),
            sum_yy=float(ys @ ys),
            sum_ff=float(fs @ fs),
            sum_yf=float(ys @ fs),
            n_unlabelled=len(us),
            sum_u=float(us.sum()),
            sum_uu=float(us @ us),
        )

    @classmethod
    def of_indicators(
        cls,
        name: str,
        *,
        both: int,
        reference_only: int,
        prediction_only: int,
        neither: int,
        unlabelled_positive: int,
        unlabelled: int,
    ) -> StratumSample:
        """From 0/1 indicators: among the labelled units, how many the reference and the
        prediction both call positive, only the reference, only the prediction, neither;
        among the ``unlabelled``, how many the prediction calls positive."""
        counts = (both, reference_only, prediction_only, neither, unlabelled_positive, unlabelled)
        if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
            raise TiapError(f"indicator counts must be integers >= 0 (got {counts})")
        if unlabelled_positive > unlabelled:
            raise TiapError(
                f"unlabelled_positive ({unlabelled_positive}) exceeds unlabelled ({unlabelled})"
            )
        y, f = both + reference_only, both + prediction_only
        return cls(
            name=name,
            n=both + reference_only + prediction_only + neither,
            sum_y=y,
            sum_f=f,
            sum_yy=y,
            sum_ff=f,
            sum_yf=both,
            n_unlabelled=unlabelled,
            sum_u=unlabelled_positive,
            sum_uu=unlabelled_positive,
        )

    @property
    def size(self) -> int:
        """N_h: every unit of the stratum, labelled or not."""
        return self.n + self.n_unlabelled

    def _var_y(self) -> float:
        return max(self.sum_yy / self.n - (self.sum_y / self.n) ** 2, 0.0)

    def _var_f(self) -> float:
        return max(self.sum_ff / self.n - (self.sum_f / self.n) ** 2, 0.0)

    def _cov(self) -> float:
        return self.sum_yf / self.n - (self.sum_y / self.n) * (self.sum_f / self.n)

    def tuned_lambda(self) -> float:
        """PPI++'s power-tuned weight (see the module), in [0, 1]; 0 without unlabelled
        units or when the predictions do not vary."""
        n, big_n = self.n, self.n_unlabelled
        if not big_n or not n:
            return 0.0
        total, s, ss = n + big_n, self.sum_f + self.sum_u, self.sum_ff + self.sum_uu
        var = (ss - s * s / total) / (total - 1)
        if var <= 0.0:
            return 0.0
        return min(max(self._cov() / ((1.0 + n / big_n) * var), 0.0), 1.0)

    def estimate(self, lam: float | None = None, confidence: float = CONFIDENCE) -> MeanEstimate:
        """The PPI estimate of this stratum's mean: ``lam`` ``None`` is PPI++, ``1``
        plain PPI, ``0`` the labels alone. Without unlabelled units only ``lam`` 0 (or
        ``None``) is defined."""
        if not self.n:
            raise TiapError("PPI needs at least one labelled unit")
        if lam is None:
            weight = self.tuned_lambda()
        elif isinstance(lam, bool) or not isinstance(lam, int | float) or not math.isfinite(lam):
            raise TiapError(f"lam must be a finite number (got {lam!r})")
        else:
            weight = float(lam)
        if not self.n_unlabelled and weight != 0.0:
            raise TiapError("PPI with lam != 0 needs at least one unlabelled unit")
        value = (self.sum_y - weight * self.sum_f) / self.n
        rectifier = self._var_y() + weight * weight * self._var_f() - 2.0 * weight * self._cov()
        variance = max(rectifier, 0.0) / self.n
        if self.n_unlabelled:
            mean_u = self.sum_u / self.n_unlabelled
            var_u = max(self.sum_uu / self.n_unlabelled - mean_u * mean_u, 0.0)
            value += weight * mean_u
            variance += weight * weight * var_u / self.n_unlabelled
        return MeanEstimate(
            value=value,
            variance=variance,
            ci=_interval(value, variance, confidence),
            lam=weight,
            n=self.n,
            n_unlabelled=self.n_unlabelled,
        )


@dataclass(frozen=True)
class StratifiedEstimate:
    """A stratified PPI estimate: the combined value, variance and interval, and each
    stratum's estimate with its weight ``N_h / N``."""

    value: float
    variance: float
    ci: tuple[float, float]
    n: int
    n_unlabelled: int
    strata: list[MeanEstimate]
    weights: list[float]


@lru_cache(maxsize=8)
def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(1.0 - (1.0 - check_confidence(confidence)) / 2.0)


def _interval(value: float, variance: float, confidence: float) -> tuple[float, float]:
    half = _z(confidence) * math.sqrt(variance)
    return value - half, value + half


def _values(name: str, values: object) -> np.ndarray:
    out = np.asarray(values, dtype=float).reshape(-1)
    if not np.isfinite(out).all():
        raise TiapError(f"{name}: every value must be a finite number")
    return out


def _checked(y: object, yhat: object, yhat_unlabelled: object) -> tuple[np.ndarray, ...]:
    ys, fs, us = _values("y", y), _values("yhat", yhat), _values("yhat_unlabelled", yhat_unlabelled)
    if len(ys) != len(fs):
        raise TiapError(f"y and yhat must be as long as each other ({len(ys)} != {len(fs)})")
    if not len(ys):
        raise TiapError("PPI needs at least one labelled unit")
    return ys, fs, us


def ppi_mean(
    y: object,
    yhat: object,
    yhat_unlabelled: object,
    *,
    lam: float | None = None,
    confidence: float = CONFIDENCE,
) -> MeanEstimate:
    """The PPI estimate of the mean of ``y`` (see the module): ``lam`` ``None`` is
    PPI++ (power-tuned), ``1`` plain PPI, ``0`` the labels alone. Without unlabelled
    units only ``lam`` 0 (or ``None``) is defined."""
    return StratumSample.of_values("", y, yhat, yhat_unlabelled).estimate(lam, confidence)


def stratified_ppi(
    strata: Sequence[StratumSample],
    *,
    lam: float | None = None,
    confidence: float = CONFIDENCE,
) -> StratifiedEstimate:
    """The stratified PPI estimate (see the module): each stratum by :func:`ppi_mean`
    (``lam`` as there; a stratum without unlabelled units uses 0), combined with weights
    ``N_h / N``. Every stratum needs a labelled unit."""
    if not strata:
        raise TiapError("stratified PPI needs at least one stratum")
    total = sum(s.size for s in strata)
    estimates = [s.estimate(lam if s.n_unlabelled else 0.0, confidence) for s in strata]
    weights = [s.size / total for s in strata]
    value = sum(w * e.value for w, e in zip(weights, estimates, strict=True))
    variance = sum(w * w * e.variance for w, e in zip(weights, estimates, strict=True))
    return StratifiedEstimate(
        value=value,
        variance=variance,
        ci=_interval(value, variance, confidence),
        n=sum(e.n for e in estimates),
        n_unlabelled=sum(e.n_unlabelled for e in estimates),
        strata=estimates,
        weights=weights,
    )


def pool_strata(labelled: Sequence[int], minimum: int = MIN_LABELLED) -> list[list[int]]:
    """Strata (given in design order by their labelled counts) pooled so that each pool
    has at least ``minimum`` labelled units: the positions of each pool, in order.

    The rule: walk the strata in design order, adding each to the current pool until
    the pool has ``minimum`` labelled units, then start a new pool. A stratum short of
    labels is thus pooled with its *next* neighbour (the one after it in design order);
    the strata left short at the end are pooled with the pool *before* them. When all
    strata together have fewer than ``minimum`` labelled units they are one pool."""
    pools: list[list[int]] = []
    current: list[int] = []
    count = 0
    for i, k in enumerate(labelled):
        current.append(i)
        count += k
        if count >= minimum:
            pools.append(current)
            current, count = [], 0
    if current:
        if pools:
            pools[-1].extend(current)
        else:
            pools.append(current)
    return pools


def effective_n(n: int, classical_variance: float, ppi_variance: float) -> float | None:
    """The number of labels alone that would give the PPI interval's width under the
    same design: ``n * classical_variance / ppi_variance`` (``None`` when either
    variance is 0: nothing to compare)."""
    if ppi_variance <= 0.0 or classical_variance <= 0.0:
        return None
    return n * classical_variance / ppi_variance
