"""Case bootstrap for every figure at once.

A replicate draws ``n`` cases with replacement; its weight vector counts how
often each case was drawn. All figures of one report share the same draws, and
each figure then uses the cases it is defined on (e.g. Fleiss' kappa only the
complete ones among the drawn cases). Percentile intervals ignore replicates in
which a figure is undefined.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tiap.agreement.stats import Stat

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """A point estimate (``None`` when undefined, with ``reason``) and its
    percentile interval (``None`` without bootstrap or when too few replicates
    are defined)."""

    value: float | None
    ci: tuple[float, float] | None
    n: int
    reason: str | None


def bootstrap_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """A ``resamples x n`` matrix: how often each case is drawn in each replicate."""
    if resamples <= 0 or n == 0:
        return np.zeros((0, n))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    flat = (draws + (np.arange(resamples) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=resamples * n).reshape(resamples, n).astype(np.float64)


def percentile_interval(
    values: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    finite = values[np.isfinite(values)]
    if finite.size < 2:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(finite, [tail, 100.0 - tail])
    return float(lo), float(hi)


def evaluate(stats: Mapping[str, Stat], weights: np.ndarray | None) -> dict[str, Estimate]:
    """Point estimates (and intervals when ``weights`` has rows) of every stat,
    with one matrix product for all replicates of all stats.

    A figure the formulas find undefined on the full sample is ``None`` with the
    stat's reason; otherwise its value is the stat's library ``point`` when it has
    one, else the formula's."""
    names = list(stats)
    if not names:
        return {}
    widths = [stats[k].features.shape[1] for k in names]
    bounds = np.cumsum([0, *widths])
    features = np.hstack([stats[k].features for k in names])
    point = features.sum(axis=0)
    boot = weights @ features if weights is not None and weights.shape[0] else None
    out: dict[str, Estimate] = {}
    for i, name in enumerate(names):
        st = stats[name]
        lo, hi = bounds[i], bounds[i + 1]
        formula = float(st.finish(point[None, lo:hi])[0])
        value: float | None = None
        if np.isfinite(formula):  # defined: the reference library's figure, if it has one
            value = st.point() if st.point is not None else formula
        ci = percentile_interval(st.finish(boot[:, lo:hi])) if boot is not None else None
        out[name] = Estimate(
            value=value,
            ci=ci if value is not None else None,
            n=st.n,
            reason=None if value is not None else (st.explain(point[lo:hi]) or "undefined"),
        )
    return out
