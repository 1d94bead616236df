"""Number formats shared by the rescoring reports (Markdown and HTML)."""

from __future__ import annotations

from tiap.rescore.report_models import Interval, RescoreReport

DASH = "–"


def num(value: float | None, digits: int = 4) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 4) -> str:
    return DASH if value is None else f"{value:+.{digits}f}"


def pct(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.1f}%"


def ci(iv: Interval) -> str:
    if iv.mean is None:
        return DASH
    return f"{signed(iv.mean)} [{signed(iv.ci_low)}, {signed(iv.ci_high)}]"


def pct_label(report: RescoreReport) -> str:
    """The confidence level as the headings quote it (``95%``)."""
    return f"{report.parameters.confidence:.0%}"


def yes_no(flag: bool | None) -> str:
    return DASH if flag is None else ("yes" if flag else "no")


def added(label: str) -> str:
    """A saturation group as the reports name it: ``+1``, ..., ``+4 or more``."""
    return f"+{label[:-1]} or more" if label.endswith("+") else f"+{label}"
