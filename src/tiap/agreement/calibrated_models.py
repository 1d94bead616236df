"""The calibrated prevalence of an agreement report (``report.json``'s ``calibrated``):
each prevalence figure three ways (the panel's, the humans', prediction-powered) and
corrected per rater (Rogan-Gladen). Computed in :mod:`tiap.agreement.calibrated`.

Undefined figures are ``None`` (JSON ``null``) with a ``reason``, never NaN.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ShareFigure(_Model):
    """A share: ``count`` of ``n`` cases, with its Wilson interval."""

    value: float | None
    ci: list[float] | None = None
    count: int
    n: int
    reason: str | None = None


class PpiFigure(_Model):
    """The stratified PPI++ estimate of a share: ``n`` labelled and ``n_unlabelled``
    unlabelled cases; value and interval clipped to [0, 1]; ``ci_unreliable`` below
    :data:`tiap.stats.ppi.RELIABLE_PPI_N` labelled cases, or when the reference gives
    the label on none or all of them (the normal interval may then have no width)."""

    value: float | None
    ci: list[float] | None = None
    n: int
    n_unlabelled: int
    reason: str | None = None
    ci_unreliable: bool = False


class CorrectedFigure(_Model):
    """The Rogan-Gladen corrected share of one rater (or the majority): value and
    interval clipped to [0, 1], ``None`` with ``reason`` when Se + Sp - 1 <= 0 or Se
    or Sp is undefined; the apparent share, sensitivity and specificity it is from."""

    value: float | None
    ci: list[float] | None = None
    reason: str | None = None
    apparent: float | None
    n_apparent: int
    sensitivity: float | None
    n_positive: int
    specificity: float | None
    n_negative: int


class CorrectedShares(_Model):
    """Rogan-Gladen for the majority and for each compared rater."""

    majority: CorrectedFigure
    raters: dict[str, CorrectedFigure] = Field(default_factory=dict)


class LabelShare(_Model):
    """One label's share, three ways and corrected: ``effective_n`` is the number of
    human labels alone that would give the ``ppi`` interval's width (``None``: either
    variance is 0)."""

    panel: ShareFigure
    humans: ShareFigure
    ppi: PpiFigure
    effective_n: float | None = None
    rogan_gladen: CorrectedShares


class StratumCount(_Model):
    """A stratum's cases in the PPI estimate, and how many of them are labelled."""

    cases: int
    labelled: int


class ScaleShares(_Model):
    """The calibrated shares of one scale (the rubric's labels or its binary collapse)
    over one set of cases: ``used``, the cases with a decided majority and no
    unresolved reference, ``labelled`` of them with a reference label; left out,
    ``no_majority`` (no decided majority) and ``unresolved`` (humans disagree, nobody
    adjudicated); ``strata`` in design order; ``pooled``: the strata estimated together
    (each pool of two or more, in design order); ``shares``: label -> its shares."""

    used: int
    labelled: int
    no_majority: int
    unresolved: int
    strata: dict[str, StratumCount]
    pooled: list[list[str]] = Field(default_factory=list)
    shares: dict[str, LabelShare]


class CalibratedGroup(_Model):
    """The calibrated shares over one set of ``cases`` (every case, or one dataset, run
    or category), on the labels and on the binary collapse."""

    cases: int
    labels: ScaleShares
    binary: ScaleShares | None = None


class Calibrated(_Model):
    """Calibrated prevalence: ``available`` when some case in scope has a human
    reference label (else ``reason``); the ``assumption``, pooling ``policy`` and
    sampling ``design`` it rests on; ``overall`` and by dataset, run and category."""

    available: bool
    reason: str | None = None
    assumption: str | None = None
    policy: str | None = None
    design: str | None = None
    confidence: float | None = None
    overall: CalibratedGroup | None = None
    by_dataset: dict[str, CalibratedGroup] = Field(default_factory=dict)
    by_run: dict[str, CalibratedGroup] = Field(default_factory=dict)
    by_category: dict[str, CalibratedGroup] = Field(default_factory=dict)
