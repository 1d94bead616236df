"""The agreement report's figures beyond kappa, as pydantic models (part of
``report.json``; see :mod:`tiap.agreement.beyond`).

Undefined figures are ``None`` with a reason, never NaN, like every figure of the report.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tiap.agreement.figure_model import Figure


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WeightedPair(_Model):
    """Cohen's quadratic-weighted kappa of two raters (an ordinal rubric)."""

    a: str
    b: str
    kappa: Figure


class OrdinalFigures(_Model):
    """The figures of a rubric whose labels are ordered (``ordinal = true``), on its
    labels: Gwet's AC2 with linear and quadratic weights and Krippendorff's alpha at
    the ordinal level over the included raters; Cohen's quadratic-weighted kappa of
    every pair of included raters and of every compared rater (and the majority)
    against the reference."""

    order: list[str]
    gwet_ac2: dict[Literal["linear", "quadratic"], Figure]
    krippendorff_alpha: Figure
    weighted_kappa: list[WeightedPair] = Field(default_factory=list)
    weighted_kappa_vs_reference: dict[str, Figure] = Field(default_factory=dict)


class Baseline(_Model):
    """A rater's accuracy against the reference beside the constant predictor's.

    The constant predictor always gives the reference's most frequent label
    (``majority_label``) on the compared cases: its accuracy is that label's share
    (``accuracy``), its balanced accuracy ``1 / classes`` (0.5 on two classes).
    ``margin``: the rater's accuracy minus the constant predictor's, with a percentile
    bootstrap interval (both shares resampled together); ``balanced_accuracy``: the
    rater's mean recall over the reference's classes, ``balanced_margin`` its excess
    over ``1 / classes``."""

    majority_label: str | None
    accuracy: float | None
    balanced_accuracy: float | None
    classes: int
    margin: Figure
    rater_balanced_accuracy: Figure
    balanced_margin: Figure


class ErrorCorrelation(_Model):
    """Two judges' errors against the reference on the cases all three labelled
    validly. ``phi``: the correlation of the two error indicators; ``ratio``:
    P(both wrong) / (P(a wrong) P(b wrong)), 1 when errors are independent;
    ``both_wrong``: how many cases both got wrong."""

    a: str
    b: str
    n: int
    both_wrong: int
    phi: Figure
    ratio: Figure


class MajorityVsBest(_Model):
    """Does the majority beat its best single judge? On the cases with a reference
    label: accuracy of the majority and of the judge with the highest accuracy (a
    case without a decided majority, or without the judge's valid label, counts as
    wrong), and their difference with a paired bootstrap interval."""

    best_judge: str
    n: int
    majority_accuracy: float
    judge_accuracy: float
    difference: Figure


class JudgeErrors(_Model):
    """Per scale (``labels``, ``binary``): each pair of judges' error correlation,
    and the majority against its best single judge."""

    error_correlation: list[ErrorCorrelation] = Field(default_factory=list)
    majority_vs_best: MajorityVsBest | None = None
    reason: str | None = None


VarianceMethod = Literal["analytic", "bootstrap", "simulated"]


class PlanRow(_Model):
    """One gate figure's plan. ``variance``: the per-case variance ``V`` (the figure's
    SD on ``n`` cases is ``sqrt(V / n)``); ``cases_for_width``: the cases at which the
    interval is ``width`` wide; ``cases_for_lower_bound``: at which its lower bound
    reaches ``threshold`` (``None`` when the estimate does not exceed it: no number of
    cases does it). ``None`` figures come with a ``reason``."""

    figure: Literal["fleiss_kappa", "judge_kappa", "cohen_kappa"]
    rater: str | None = None
    estimate: float | None
    threshold: float
    n: int
    raters: int
    prevalence: float | None = None
    variance: float | None = None
    variance_method: VarianceMethod | None = None
    sd: float | None = None
    cases_for_width: int | None = None
    cases_for_lower_bound: int | None = None
    reason: str | None = None


class SamplePlan(_Model):
    """The cases each gate figure needs, at ``confidence``, for an interval ``width``
    wide (a normal approximation: a planning rule, not the report's intervals)."""

    width: float
    confidence: float
    rows: list[PlanRow] = Field(default_factory=list)
