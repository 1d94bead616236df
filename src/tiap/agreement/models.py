"""The agreement report as pydantic models; ``report.json`` is their dump.

Undefined figures are ``None`` (JSON ``null``) with a ``reason``, never NaN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from tiap.agreement.answer_correctness_models import AnswerCorrectness
from tiap.agreement.beyond_models import Baseline, JudgeErrors, OrdinalFigures, SamplePlan
from tiap.agreement.calibrated_models import Calibrated
from tiap.agreement.diagnostics_models import NO_WORKSPACE, Diagnostics
from tiap.agreement.figure_model import Figure
from tiap.agreement.paper_models import PaperCounts
from tiap.agreement.qrels_models import QrelsFigures
from tiap.cases.events import (
    DEFAULT_GATE_ON,
    DEFAULT_GATE_RATERS,
    GateFigures,
    GateOn,
    GateRaters,
)
from tiap.cases.vocab import RaterKind
from tiap.errors import TiapError

if TYPE_CHECKING:
    import pandas as pd


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PairBinary(_Model):
    kappa: float | None
    ci: list[float] | None = None
    reason: str | None = None
    agreement: float | None
    ci_unreliable: bool = False
    #: each binary label's share of both raters' labels on their shared cases
    base_rates: dict[str, float | None] = Field(default_factory=dict)


class PairKappa(_Model):
    """Cohen's kappa and percent agreement of two raters (pairwise deletion); ``ci``
    a percentile bootstrap interval, ``ci_unreliable`` below 30 cases."""

    a: str
    b: str
    n: int
    kappa: float | None
    ci: list[float] | None = None
    reason: str | None = None
    agreement: float | None
    binary: PairBinary | None = None
    ci_unreliable: bool = False
    #: each label's share of both raters' labels on their shared cases
    base_rates: dict[str, float | None] = Field(default_factory=dict)


class RaterSummary(_Model):
    """A rater's label distribution over the cases in scope."""

    name: str
    kind: RaterKind | None
    panels: list[str] = Field(default_factory=list)
    included: bool
    reference: bool
    n_valid: int
    n_invalid: int
    n_missing: int
    counts: dict[str, int]
    shares: dict[str, float | None]
    binary_counts: dict[str, int] | None = None
    #: every valid label the same (two or more): kappa undefined or 0 by construction
    constant: bool = False
    constant_label: str | None = None
    #: the same on the binary collapse (e.g. only supports and partial)
    constant_binary: bool = False


class Distribution(_Model):
    """Majority labels over a set of cases. ``shares`` are among the cases with a
    majority (``decided``); ``shares_of_all`` among every case (``n``)."""

    n: int
    decided: int
    counts: dict[str, int]
    shares: dict[str, float | None]
    shares_of_all: dict[str, float | None]
    ties: int
    no_majority: int
    no_quorum: int


class Majority(_Model):
    policy: str
    voters: list[str]
    quorum: int
    labels: Distribution
    binary: Distribution | None = None


class PrevalenceGroup(_Model):
    labels: Distribution
    binary: Distribution | None = None


class Prevalence(_Model):
    """Majority-label prevalence per stratum value (the paper's Table 6)."""

    by_dataset: dict[str, PrevalenceGroup]
    by_run: dict[str, PrevalenceGroup]
    by_category: dict[str, PrevalenceGroup]


class Comparison(_Model):
    """One rater (or the majority) against the reference: ``confusion`` rows are the
    reference's labels, columns the rater's, both in the report's label order."""

    n: int
    kappa: Figure
    accuracy: Figure
    confusion: list[list[int]]
    #: Gwet's AC1 against the reference
    ac1: Figure | None = None
    #: each label's share of the reference's labels on the compared cases
    base_rates: dict[str, float | None] = Field(default_factory=dict)
    #: the constant predictor's accuracy beside the rater's, and the rater's margin
    baseline: Baseline | None = None


class VsRater(_Model):
    rater: str
    labels: Comparison
    binary: Comparison | None = None


class ReferenceInfo(_Model):
    policy: str
    raters: list[str]
    n_cases: int
    unresolved: int


class VsReference(_Model):
    available: bool
    reason: str | None = None
    reference: ReferenceInfo | None = None
    raters: list[VsRater] = Field(default_factory=list)
    majority: VsRater | None = None


class Gate(_Model):
    """The scale gate. ``applies`` only on a workspace subset of kind validation;
    elsewhere the verdict is shown for information and not recorded."""

    status: Literal["PASS", "FAIL"]
    passed: bool
    applies: bool
    note: str | None = None
    min_fleiss: float
    min_judge_kappa: float
    min_cases: int
    min_valid: float
    #: the complete cases a pass needs: ``min_cases``, and at least half of the subset
    required_cases: int
    #: human labels left out by choice (``--no-humans``): the gate is on the judges alone
    no_humans: bool = False
    #: the rubric hash of the human reference's labels (``None``: no reference)
    reference_rubric_hash: str | None = None
    #: rater -> labels left out of every figure: made under another rubric hash
    other_version_labels: dict[str, int] = Field(default_factory=dict)
    judges: list[str]
    judge_models: dict[str, list[str]] = Field(default_factory=dict)
    #: judge -> the request-settings hashes of the labels the report used
    judge_settings: dict[str, list[str]] = Field(default_factory=dict)
    #: judge -> how many of those labels carry no settings hash (only judges with any)
    judge_settings_missing: dict[str, int] = Field(default_factory=dict)
    panel: str | None
    rubric_id: str | None
    rubric_hash: str | None
    subset: str | None
    figures: GateFigures
    failures: list[str]
    #: the thresholds applied to the point estimates (``point``, the paper's rule) or to
    #: the intervals' lower bounds (``lower``)
    gate_on: GateOn = DEFAULT_GATE_ON
    #: whom the gate's Fleiss' kappa is over: the judges alone (``judges``, the default)
    #: or the judges and the human reference (``judges+reference``, the paper's
    #: validation kappa over five raters)
    gate_raters: GateRaters = DEFAULT_GATE_RATERS
    #: the raters the gate's Fleiss' kappa is over, in order
    fleiss_raters: list[str] = Field(default_factory=list)
    #: every gate figure's interval lies wholly on one side of its threshold
    conclusive: bool = False


class RubricInfo(_Model):
    id: str
    version: str
    hash: str
    labels: list[str]
    binary: dict[str, str]
    binary_positive: str | None
    #: the labels are ordered as listed (``ordinal = true``)
    ordinal: bool = False


class SourceInfo(_Model):
    kind: Literal["workspace", "file", "memory"]
    path: str | None
    subset: str | None
    subset_kind: str | None
    #: the bundle version (fingerprint) every case in scope is of; ``None``: not
    #: recorded (a labels file, a workspace of an earlier tiap) or several
    bundle_version: str | None = None


class BootstrapInfo(_Model):
    resamples: int
    seed: int
    confidence: float
    unit: Literal["case"] = "case"


class AgreementReport(_Model):
    """Every agreement figure of one report. See the README for the keys."""

    source: SourceInfo
    rubric: RubricInfo | None
    labels: list[str]
    binary_labels: list[str]
    n_cases: int
    n_complete: int
    included_raters: list[str]
    raters: list[RaterSummary]
    fleiss_kappa: dict[str, Figure]
    krippendorff_alpha: dict[str, Figure]
    cohen_kappa: list[PairKappa]
    percent_agreement: dict[str, Figure]
    #: Gwet's AC1 over the included raters, per scale
    gwet_ac1: dict[str, Figure] = Field(default_factory=dict)
    #: per scale: each label's share of the included raters' valid labels
    base_rates: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    #: an ordinal rubric's figures (``None``: the rubric's labels are not ordered)
    ordinal: OrdinalFigures | None = None
    #: per scale, against the reference: the judges' error correlations and the
    #: majority against its best single judge (empty without a reference)
    judge_errors: dict[str, JudgeErrors] = Field(default_factory=dict)
    majority: Majority
    prevalence: Prevalence
    vs_reference: VsReference
    gate: Gate
    bootstrap: BootstrapInfo
    #: the cases each gate figure needs (:mod:`tiap.agreement.case_plan`)
    plan: SamplePlan | None = None
    notes: list[str]
    #: the relevance-label figures, on a report over ``qrels`` cases (else absent)
    qrels: QrelsFigures | None = None
    #: per run, the share of answers the panel majority judged correct, on a report over
    #: ``answer`` cases (else absent; :mod:`tiap.agreement.answer_correctness`)
    answer_correctness: AnswerCorrectness | None = None
    #: the figures as the paper counts them (plurality vote, agreement on complete
    #: cases, Fleiss' kappa with the reference; absent from reports written before)
    paper: PaperCounts | None = None
    #: each prevalence figure against the human reference (:mod:`tiap.agreement.calibrated`)
    calibrated: Calibrated = Calibrated(available=False, reason="not computed")
    #: the latest probe and drift results of its judges, and a warning for each judge
    #: the gate passed that drifted since (:mod:`tiap.agreement.diagnostics`)
    diagnostics: Diagnostics = Diagnostics(available=False, reason=NO_WORKSPACE)

    @property
    def supported_share(self) -> float | None:
        """Share of cases whose majority label is the rubric's first label (e.g.
        ``supports``) among the cases with a majority."""
        return self.majority.labels.shares.get(self.labels[0]) if self.labels else None

    def supported_share_by(
        self, by: Literal["dataset", "run", "category"]
    ) -> dict[str, float | None]:
        """:attr:`supported_share` per dataset, run or category."""
        groups: dict[str, PrevalenceGroup] = getattr(self.prevalence, f"by_{by}")
        first = self.labels[0] if self.labels else None
        return {k: g.labels.shares.get(first) if first else None for k, g in groups.items()}

    def prevalence_frame(
        self, by: Literal["dataset", "run", "category"], *, binary: bool = False
    ) -> pd.DataFrame:
        """One row per stratum value: n, decided, ties, no_majority, no_quorum, then
        the count and share (among decided cases) of each majority label."""
        import pandas as pd

        groups: dict[str, PrevalenceGroup] = getattr(self.prevalence, f"by_{by}")
        rows = []
        for value, g in groups.items():
            d = g.binary if binary else g.labels
            if d is None:
                raise TiapError("this report has no binary collapse")
            row: dict[str, object] = {by: value, "n": d.n, "decided": d.decided}
            row.update(ties=d.ties, no_majority=d.no_majority, no_quorum=d.no_quorum)
            for label, count in d.counts.items():
                row[label] = count
                row[f"{label}_share"] = d.shares[label]
            rows.append(row)
        return pd.DataFrame(rows)

    def to_json_dict(self) -> dict:
        """``report.json``; ``qrels`` only on a report over qrels cases,
        ``answer_correctness`` only on one over answer cases."""
        absent = {
            key
            for key, value in (
                ("qrels", self.qrels),
                ("answer_correctness", self.answer_correctness),
            )
            if value is None
        }
        return self.model_dump(mode="json", exclude=absent or None)
