"""The difference of two paired shares and its interval (Newcombe 1998, "Improved
confidence intervals for the difference between binomial proportions based on
paired data", Statistics in Medicine 17:2635-2650, method 10).

The same ``n`` items are scored twice (correct then and now, say): ``both`` were
right both times, ``first_only`` only the first time, ``second_only`` only the second
time, ``neither`` neither time. The shares are ``p1 = (both + first_only) / n`` and
``p2 = (both + second_only) / n``; the difference reported is ``d = p2 - p1`` (the
second minus the first). Its interval combines the Wilson intervals ``[l1, u1]``,
``[l2, u2]`` of the two shares (:func:`tiap.stats.intervals.wilson_interval`) with
their correlation::

    A   = (both + first_only)(second_only + neither)(both + second_only)(first_only + neither)
    B   = both * neither - first_only * second_only
    C   = B - n/2 if B > n/2;  B if B < 0;  0 otherwise
    phi = C / sqrt(A)           (0 when A = 0)
    lower = d - sqrt((p2 - l2)^2 - 2 phi (p2 - l2)(u1 - p1) + (u1 - p1)^2)
    upper = d + sqrt((u2 - p2)^2 - 2 phi (u2 - p2)(p1 - l1) + (p1 - l1)^2)

It is honest at small n and never degenerate. Newcombe's own examples (his table
II): 36 both, 12 first only, 2 second only, 0 neither give ``p1 - p2 = 0.2`` in
``[0.0569, 0.3404]`` (here ``d = -0.2`` in ``[-0.3404, -0.0569]``); 18, 12, 2, 18
give ``[0.0562, 0.3290]``; 53, 0, 0, 1 give ``0`` in ``[-0.0729, 0.0729]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tiap.limits import check_int
from tiap.stats.intervals import CONFIDENCE, wilson_interval

__all__ = ["PairedDifference", "paired_difference"]


@dataclass(frozen=True)
class PairedDifference:
    """``second - first`` of two paired shares on ``n`` items, with its interval."""

    n: int
    first: float
    second: float
    difference: float
    lower: float
    upper: float


def paired_difference(
    both: int, first_only: int, second_only: int, neither: int, confidence: float = CONFIDENCE
) -> PairedDifference:
    """The difference of two paired shares and Newcombe's interval (see the module
    docstring); ``n`` (the four counts' sum) must be at least 1."""
    a = check_int("both", both, minimum=0, maximum=2**62)
    b = check_int("first_only", first_only, minimum=0, maximum=2**62)
    c = check_int("second_only", second_only, minimum=0, maximum=2**62)
    d = check_int("neither", neither, minimum=0, maximum=2**62)
    n = check_int("n", a + b + c + d, minimum=1, maximum=2**62)
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, confidence)
    l2, u2 = wilson_interval(a + c, n, confidence)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    corrected = cross - n / 2.0 if cross > n / 2.0 else (cross if cross < 0 else 0.0)
    phi = corrected / math.sqrt(margins) if margins else 0.0
    diff = p2 - p1
    low = (p2 - l2) ** 2 - 2.0 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2
    high = (u2 - p2) ** 2 - 2.0 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2
    lower = max(-1.0, diff - math.sqrt(max(0.0, low)))
    upper = min(1.0, diff + math.sqrt(max(0.0, high)))
    return PairedDifference(n, p1, p2, diff, lower, upper)
