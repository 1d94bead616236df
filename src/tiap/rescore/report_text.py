"""The rescoring report's own text forms: a paired difference with its interval, the
confidence level as headings quote it, a saturation group's name (numbers as
:mod:`tiap.report.numbers` writes them)."""

from __future__ import annotations

from tiap.report.numbers import MISSING, bounds, level, signed
from tiap.rescore.report_models import Interval, RescoreReport


def ci(iv: Interval) -> str:
    if iv.mean is None:
        return MISSING
    return f"{signed(iv.mean)} {bounds(iv.ci_low, iv.ci_high, sign=True)}"


def pct_label(report: RescoreReport) -> str:
    """The confidence level as the headings quote it (``95%``)."""
    return level(report.parameters.confidence)


def added(label: str) -> str:
    """A saturation group as the reports name it: ``+1``, ..., ``+4 or more``."""
    return f"+{label[:-1]} or more" if label.endswith("+") else f"+{label}"
