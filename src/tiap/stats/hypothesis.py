"""Two tests of association and location: Pearson correlation and one-sample t
(rescore's set-size confound uses both).

Both p-values are two-sided and use Student's t distribution
(``scipy.special.stdtr``, imported on first use), as ``scipy.stats.pearsonr``
and ``scipy.stats.ttest_1samp`` do. Undefined values (too few points, no
variance) are ``None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def _two_sided_t(t: float, df: int) -> float:
    from scipy.special import stdtr

    return float(min(1.0, 2.0 * stdtr(df, -abs(t))))


@dataclass(frozen=True)
class Correlation:
    n: int
    r: float | None
    p_value: float | None

    @property
    def r_squared(self) -> float | None:
        return None if self.r is None else self.r * self.r


@dataclass(frozen=True)
class OneSampleT:
    n: int
    mean: float | None
    t: float | None
    p_value: float | None


def pearson(x: np.ndarray, y: np.ndarray) -> Correlation:
    """Pearson's r of ``x`` and ``y`` with the two-sided p-value of H0: r = 0."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = int(x.size)
    if n < 2:
        return Correlation(n, None, None)
    xm, ym = x - x.mean(), y - y.mean()
    sxx, syy = float(xm @ xm), float(ym @ ym)
    if sxx <= 0.0 or syy <= 0.0:
        return Correlation(n, None, None)
    r = max(-1.0, min(1.0, float(xm @ ym) / math.sqrt(sxx * syy)))
    if n < 3:
        return Correlation(n, r, None)
    if abs(r) == 1.0:
        return Correlation(n, r, 0.0)
    df = n - 2
    t = r * math.sqrt(df / ((1.0 - r) * (1.0 + r)))
    return Correlation(n, r, _two_sided_t(t, df))


def one_sample_t(x: np.ndarray, popmean: float = 0.0) -> OneSampleT:
    """Mean of ``x`` and the t test of H0: mean = ``popmean``."""
    x = np.asarray(x, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return OneSampleT(0, None, None, None)
    mean = float(x.mean())
    if n < 2:
        return OneSampleT(n, mean, None, None)
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        return OneSampleT(n, mean, None, None)
    t = (mean - popmean) / (sd / math.sqrt(n))
    return OneSampleT(n, mean, t, _two_sided_t(t, n - 1))
