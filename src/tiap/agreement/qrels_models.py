"""The qrels figures of an agreement report (``report.json`` key ``qrels``): how far
the panel (and the human reference, where present) confirms a dataset's relevance
labels, how many sampled unjudged documents it finds relevant, and a verdict per
dataset against documented thresholds (:mod:`tiap.agreement.qrels`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Verdict = Literal[
    "labels reliable", "labels unreliable", "missing labels", "inconclusive", "no data"
]
Check = Literal["pass", "fail", "inconclusive", "no data"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Share(_Model):
    """The share of a group of pairs judged relevant: ``relevant`` of the ``n`` pairs
    with a decided label (a panel majority, or a reference label), out of ``cases``
    pairs in the group; ``ci`` its 95% Wilson score interval (``ci_method``), honest
    at small n; ``value`` ``None`` (with a ``reason``) when no pair has a decided
    label."""

    cases: int
    n: int
    relevant: int
    value: float | None
    ci: list[float] | None = None
    reason: str | None = None
    ci_method: Literal["wilson"] | None = None


class Rate(_Model):
    """An agreement figure with its 95% interval and the pairs it uses: a Wilson
    score interval for the percent agreement, the report's percentile bootstrap for
    the kappa (``ci_unreliable`` below 30 pairs)."""

    value: float | None
    ci: list[float] | None = None
    n: int
    reason: str | None = None
    ci_method: Literal["percentile", "wilson"] | None = None
    ci_unreliable: bool = False


class PanelVsReference(_Model):
    """The panel's majority against the human reference on the binary scale, on the
    pairs that have both: percent agreement and Cohen's kappa."""

    n: int
    agreement: Rate
    kappa: Rate


class QrelsGroup(_Model):
    """The qrels figures of one dataset (or of every pair: ``overall``).

    - ``confirmed``: annotated-relevant pairs (qrels grade > 0) the panel majority
      labels relevant; ``confirmed_by_reference`` the same by the human reference;
    - ``graded_not_relevant_found_relevant``: annotated pairs with grade <= 0 (a
      qrels line saying not relevant) the majority labels relevant;
    - ``negatives_found_relevant``: sampled documents without a positive grade (a
      run's top-ranked documents) the majority labels relevant: missed labels;
    - ``panel_vs_reference``: the majority against the human reference;
    - ``precision`` and ``missed``: the checks behind ``verdict``.
    """

    cases: int
    annotated_relevant: int
    annotated_not_relevant: int
    negatives: int
    confirmed: Share
    confirmed_by_reference: Share | None = None
    graded_not_relevant_found_relevant: Share
    negatives_found_relevant: Share
    negatives_found_relevant_by_reference: Share | None = None
    panel_vs_reference: PanelVsReference | None = None
    precision: Check
    missed: Check
    verdict: Verdict
    reasons: list[str]


class QrelsFigures(_Model):
    """Every qrels figure of a report (see :class:`QrelsGroup`) and the thresholds."""

    positive_label: str
    min_confirmed: float
    max_missed: float
    #: a check needs a decided label on at least this share of its pairs
    min_decided: float
    rule: str
    overall: QrelsGroup
    by_dataset: dict[str, QrelsGroup]
