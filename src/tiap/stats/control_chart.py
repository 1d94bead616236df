"""An EWMA control chart of a share observed over time (Roberts 1959,
"Control chart tests based on geometric moving averages", Technometrics 1:239-250;
Lucas & Saccucci 1990, Technometrics 32:1-12).

Each point ``t`` is a share ``x_t`` observed on ``n_t`` cases. The chart smooths
the shares with weight ``lam`` (lambda) and compares the smoothed value with limits
around the in-control share ``target`` (``p0``)::

    z_0 = p0
    z_t = lam * x_t + (1 - lam) * z_{t-1}
    var_0 = 0
    var_t = (1 - lam)^2 * var_{t-1} + lam^2 * p0 (1 - p0) / n_t
    upper_t = p0 + L * sqrt(var_t),  lower_t = p0 - L * sqrt(var_t)

``var_t`` is the exact variance of ``z_t`` when the shares are independent binomial
shares with mean ``p0`` (``n_t`` may differ from point to point); with one ``n`` it
is the textbook ``p0 (1 - p0) / n * lam / (2 - lam) * (1 - (1 - lam)^(2t))``.

An **alarm** is raised at ``t`` when ``z_t`` lies above ``upper_t`` (the charts here
watch a share that should stay low, such as the share of changed labels:
``one_sided=True``, the default), or outside either limit (``one_sided=False``). With
``p0 = 0`` the limits are 0: any change raises an alarm.

Defaults: ``lam = 0.3``, ``L = 3``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tiap.limits import LimitError, check_float, check_int

__all__ = ["EWMA_L", "EWMA_LAMBDA", "EwmaPoint", "ewma_chart"]

EWMA_LAMBDA = 0.3
EWMA_L = 3.0


@dataclass(frozen=True)
class EwmaPoint:
    """One point of the chart: the share observed, the cases it rests on, the
    smoothed value, the limits and whether it raised an alarm."""

    value: float
    n: int
    ewma: float
    lower: float
    upper: float
    alarm: bool


def ewma_chart(
    values: Sequence[float],
    ns: Sequence[int],
    target: float,
    *,
    lam: float = EWMA_LAMBDA,
    limit: float = EWMA_L,
    one_sided: bool = True,
) -> list[EwmaPoint]:
    """The chart of shares ``values`` observed on ``ns`` cases (see the module doc)."""
    if len(values) != len(ns):
        raise LimitError("ns", f"must give one count per value ({len(ns)} for {len(values)})")
    p0 = check_float("target", target, minimum=0.0, maximum=1.0)
    lam = check_float("lambda", lam, minimum=1e-9, maximum=1.0)
    limit = check_float("L", limit, minimum=0.0, maximum=100.0)
    z, var = p0, 0.0
    out: list[EwmaPoint] = []
    for value, n in zip(values, ns, strict=True):
        x = check_float("value", value, minimum=0.0, maximum=1.0)
        cases = check_int("n", n, minimum=1, maximum=2**62)
        z = lam * x + (1.0 - lam) * z
        var = (1.0 - lam) ** 2 * var + lam**2 * p0 * (1.0 - p0) / cases
        half = limit * math.sqrt(var)
        lower, upper = p0 - half, p0 + half
        alarm = z > upper + 1e-12 or (not one_sided and z < lower - 1e-12)
        out.append(EwmaPoint(x, cases, z, lower, upper, alarm))
    return out
