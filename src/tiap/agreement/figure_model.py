"""One figure of an agreement report: its value, interval and the cases it rests on."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from tiap.agreement.estimates import Estimate
from tiap.stats import percentile_reliable


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


IntervalMethod = Literal["percentile", "wilson"]


class Figure(_Model):
    """One figure: value (``None`` when undefined, ``reason`` says why), its 95%
    interval ``[lo, hi]`` and the number of cases it is computed on.

    ``ci_method``: ``percentile`` (case bootstrap; kappas, alpha, mean agreement) or
    ``wilson`` (a share's score interval, honest at small n: accuracy). A percentile
    interval on fewer than 30 cases is ``ci_unreliable`` (shown marked so)."""

    value: float | None
    ci: list[float] | None = None
    n: int
    reason: str | None = None
    ci_method: IntervalMethod | None = None
    ci_unreliable: bool = False


def unreliable_ci(e: Estimate) -> bool:
    """A percentile interval on fewer cases than it can be relied on."""
    return e.ci is not None and not percentile_reliable(e.n)


def figure_of(e: Estimate) -> Figure:
    """A bootstrap figure: its percentile interval, marked unreliable below 30 cases."""
    return Figure(
        value=e.value,
        ci=list(e.ci) if e.ci else None,
        n=e.n,
        reason=e.reason,
        ci_method="percentile" if e.ci else None,
        ci_unreliable=unreliable_ci(e),
    )


__all__ = ["Figure", "IntervalMethod", "figure_of", "unreliable_ci"]
