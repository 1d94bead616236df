"""A rater's apparent prevalence corrected by its sensitivity and specificity
(Rogan & Gladen, "Estimating prevalence from the results of a screening test",
American Journal of Epidemiology 107:71-76, 1978).

A rater calls a share ``q`` of ``n_q`` units positive. Against a reference on
labelled units, its sensitivity ``Se`` is the share of the reference's positives it
calls positive (``n_pos`` of them), its specificity ``Sp`` the share of the
reference's negatives it calls negative (``n_neg``). With ``J = Se + Sp - 1``
(Youden's index)::

    theta = (q + Sp - 1) / J

and its variance by the delta method, ``q``, ``Se`` and ``Sp`` taken as independent
binomial shares::

    var = [ q(1-q)/n_q + theta**2 Se(1-Se)/n_pos + (1-theta)**2 Sp(1-Sp)/n_neg ] / J**2
    CI  = theta -/+ z * sqrt(var)

(the partial derivatives of theta are 1/J in q, -theta/J in Se and (1-theta)/J in
Sp). The estimate and both bounds are then clipped to [0, 1]. When ``J <= 0`` the
rater's calls carry no information about the reference (or the inverse of it) and
the correction is undefined: ``None``, with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from tiap.limits import LimitError, check_int
from tiap.stats.intervals import CONFIDENCE, check_confidence

__all__ = ["RoganGladen", "rogan_gladen"]


@dataclass(frozen=True)
class RoganGladen:
    """The corrected prevalence (``None`` with ``reason`` when undefined), its interval,
    and what it is computed from."""

    value: float | None
    ci: tuple[float, float] | None
    reason: str | None
    apparent: float | None
    n_apparent: int
    sensitivity: float | None
    n_positive: int
    specificity: float | None
    n_negative: int

    @property
    def youden(self) -> float | None:
        """J = Se + Sp - 1 (``None`` when Se or Sp is)."""
        if self.sensitivity is None or self.specificity is None:
            return None
        return self.sensitivity + self.specificity - 1.0


@lru_cache(maxsize=8)
def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(1.0 - (1.0 - check_confidence(confidence)) / 2.0)


def _clip(v: float) -> float:
    return min(max(v, 0.0), 1.0)


def _count(name: str, value: object, total: int) -> int:
    k = check_int(name, value, minimum=0, maximum=2**62)
    if k > total:
        raise LimitError(name, f"must not exceed its total ({k} > {total})")
    return k


def rogan_gladen(
    called: int,
    n_apparent: int,
    true_positives: int,
    n_positive: int,
    true_negatives: int,
    n_negative: int,
    confidence: float = CONFIDENCE,
) -> RoganGladen:
    """The Rogan-Gladen estimate (see the module) from counts: ``called`` positive of
    ``n_apparent`` units; ``true_positives`` of the reference's ``n_positive``
    positives called positive; ``true_negatives`` of its ``n_negative`` negatives
    called negative."""
    n_q = check_int("n_apparent", n_apparent, minimum=0, maximum=2**62)
    n_pos = check_int("n_positive", n_positive, minimum=0, maximum=2**62)
    n_neg = check_int("n_negative", n_negative, minimum=0, maximum=2**62)
    k_q = _count("called", called, n_q)
    tp = _count("true_positives", true_positives, n_pos)
    tn = _count("true_negatives", true_negatives, n_neg)
    z = _z(confidence)
    q = k_q / n_q if n_q else None
    se = tp / n_pos if n_pos else None
    sp = tn / n_neg if n_neg else None

    def undefined(reason: str) -> RoganGladen:
        return RoganGladen(None, None, reason, q, n_q, se, n_pos, sp, n_neg)

    if q is None:
        return undefined("no case with the rater's valid label")
    if se is None:
        return undefined("no labelled case is positive in the reference: sensitivity undefined")
    if sp is None:
        return undefined("no labelled case is negative in the reference: specificity undefined")
    j = se + sp - 1.0
    if j <= 0.0:
        return undefined(
            f"sensitivity + specificity - 1 = {j:.3f} <= 0: the rater's labels carry no "
            "information on the reference's, the correction is undefined"
        )
    theta = (q + sp - 1.0) / j
    var = (
        q * (1 - q) / n_q
        + theta * theta * se * (1 - se) / n_pos
        + (1 - theta) ** 2 * sp * (1 - sp) / n_neg
    ) / (j * j)
    half = z * math.sqrt(var)
    return RoganGladen(
        value=_clip(theta),
        ci=(_clip(theta - half), _clip(theta + half)),
        reason=None,
        apparent=q,
        n_apparent=n_q,
        sensitivity=se,
        n_positive=n_pos,
        specificity=sp,
        n_negative=n_neg,
    )
