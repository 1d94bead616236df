"""What every figure's uncertainty shares: intervals that are honest at small n
(:mod:`tiap.stats.intervals`).

A leaf package: it imports nothing from tiap but :mod:`tiap.errors` and
:mod:`tiap.limits`.
"""

from __future__ import annotations

from tiap.stats.intervals import (
    CONFIDENCE,
    RELIABLE_PERCENTILE_N,
    ShareMethod,
    clopper_pearson_interval,
    percentile_reliable,
    share_interval,
    wilson_interval,
)

__all__ = [
    "CONFIDENCE",
    "RELIABLE_PERCENTILE_N",
    "ShareMethod",
    "clopper_pearson_interval",
    "percentile_reliable",
    "share_interval",
    "wilson_interval",
]
