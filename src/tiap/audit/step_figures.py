"""The figures each audit step records: typed, small, and kept in the state file.

Each step's figures are what the index quotes for it, taken from the report or
summary the step produced when it did its work. They are tiap's own compact
models (not the full reports, which are files of their own), so a state file
stays readable when a report gains keys. Every model has a ``kind`` field, and
:data:`StepFigures` is their union, discriminated by it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.extract import ExtractReport
from tiap.cases.from_qrels import QrelsImportReport
from tiap.judge.summary import RunSummary

if TYPE_CHECKING:
    from tiap.agreement.calibrated_models import CalibratedGroup
    from tiap.agreement.models import AgreementReport, Distribution
    from tiap.agreement.models import Figure as AgreementFigure
    from tiap.agreement.qrels_models import QrelsFigures, QrelsGroup
    from tiap.agreement.qrels_models import Share as QrelsShare
    from tiap.rescore.report_models import RescoreReport

#: the target pair the index quotes first (Canonical minus Raw).
HEADLINE_PAIR = "canonical-raw"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @classmethod
    def fields_of(cls, source: object) -> dict[str, Any]:
        """This model's fields read off ``source`` (an object with the same names)."""
        return {name: getattr(source, name) for name in cls.model_fields}


class Estimate(_Model):
    """A value (``None`` when undefined) with its 95% interval and its n;
    ``ci_unreliable``: a percentile interval on too few cases (shown marked so)."""

    value: float | None
    ci: list[float] | None = None
    n: int = 0
    ci_unreliable: bool = False


class Difference(_Model):
    """A paired mean difference of one run between two targets, with its CI."""

    run: str
    pair: str
    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None


class DesignWinner(_Model):
    key: str
    winners: dict[str, list[str]]
    flips: bool
    #: the settings the family holds fixed (e.g. its retriever): what tells it apart.
    fixed: dict[str, Any] = Field(default_factory=dict)


class RescoreFigures(_Model):
    kind: Literal["rescore"] = "rescore"
    dataset: str
    n_queries: int
    runs: list[str]
    measure: str
    #: query-level instability of ``measure`` between Raw and Canonical (None: no pairs).
    changed_share: float | None = None
    large_share: float | None = None
    n_pairs: int = 0
    differences: list[Difference]
    winner_flips: int
    winner_flips_all_measures: int
    design: list[DesignWinner]

    @classmethod
    def of(cls, report: RescoreReport) -> RescoreFigures:
        head = report.headline
        inst = head.instability.get(HEADLINE_PAIR)
        return cls(
            dataset=report.dataset,
            n_queries=report.n_queries,
            runs=sorted(report.runs),
            measure=head.measure,
            changed_share=inst.share_changed if inst else None,
            large_share=inst.share_large if inst else None,
            n_pairs=inst.n if inst else 0,
            differences=[
                Difference(
                    run=run,
                    pair=pair,
                    n=iv.n,
                    mean=iv.mean,
                    ci_low=iv.ci_low,
                    ci_high=iv.ci_high,
                )
                for run, pairs in sorted(head.differences.items())
                for pair, iv in sorted(pairs.items())
                if iv.n
            ],
            winner_flips=len(head.winner_flips),
            winner_flips_all_measures=head.n_winner_flips_all_measures,
            design=[
                DesignWinner(key=d.key, winners=d.winner, flips=d.winner_flip, fixed=d.fixed)
                for d in head.design
            ],
        )


class ExtractFigures(_Model):
    kind: Literal["extract"] = "extract"
    report: ExtractReport


class QrelsCasesFigures(_Model):
    """The qrels pairs drawn (``tiap cases from-qrels``)."""

    kind: Literal["qrels_cases"] = "qrels_cases"
    report: QrelsImportReport


class SampleFigures(_Model):
    kind: Literal["sample"] = "sample"
    subset: str
    cases: int
    overlap: int
    pool_size: int | None = None
    seed: int | None = None


class JudgeFigures(_Model):
    kind: Literal["judge"] = "judge"
    summary: RunSummary
    #: the scale gate had not passed and ``force`` went on (a recorded gate_force event).
    forced: bool = False


class ProbeFigures(_Model):
    """The probe step: the kinds probed, the calls made and found cached, and each
    judge's verdict."""

    kind: Literal["probes"] = "probes"
    kinds: list[str]
    calls: int
    cached: int
    verdicts: dict[str, str]


class HumanFigures(_Model):
    kind: Literal["humans"] = "humans"
    required: bool
    cases: int
    #: valid human labels on the subset, per rater (``adjudicated`` left out).
    progress: dict[str, int] = Field(default_factory=dict)
    #: raters who labelled every case of the subset.
    complete: list[str] = Field(default_factory=list)
    #: humans with labels there whom ``--no-humans`` leaves out of every report.
    left_out: list[str] = Field(default_factory=list)
    #: valid human labels made under another version of the rubric, per rater (not
    #: counted: every figure counts labels of the judges' rubric version).
    other_version: dict[str, int] = Field(default_factory=dict)


class GateSummary(_Model):
    status: Literal["PASS", "FAIL"]
    passed: bool
    failures: list[str]
    note: str | None = None
    #: the thresholds applied to the point estimates or the interval lower bounds
    gate_on: Literal["point", "lower"] = "point"
    #: whom the gate's Fleiss' kappa was over (an earlier tiap's states: the judges)
    gate_raters: Literal["judges", "judges+reference"] = "judges"
    #: every gate figure's interval wholly on one side of its threshold (``None``: a
    #: state written by an earlier tiap)
    conclusive: bool | None = None


class VsHumans(_Model):
    """One rater (or ``majority``) against the human reference."""

    rater: str
    scale: Literal["binary", "labels"]
    n: int
    kappa: Estimate
    accuracy: Estimate


class Shares(_Model):
    """Majority labels over some cases (``shares`` among the decided ones)."""

    n: int
    decided: int
    counts: dict[str, int]
    shares: dict[str, float | None]
    ties: int
    no_majority: int
    no_quorum: int

    @classmethod
    def of(cls, d: Distribution) -> Shares:
        return cls(**cls.fields_of(d))


def _estimate(f: AgreementFigure) -> Estimate:
    return Estimate(value=f.value, ci=f.ci, n=f.n, ci_unreliable=f.ci_unreliable)


def _share(s: QrelsShare | None) -> Estimate | None:
    return None if s is None else Estimate(value=s.value, ci=s.ci, n=s.n)


class QrelsVerdict(_Model):
    """One dataset's relevance-label verdict and the shares behind it."""

    verdict: str
    precision: str
    missed: str
    cases: int
    annotated_relevant: int
    negatives: int
    confirmed: Estimate
    confirmed_by_humans: Estimate | None = None
    negatives_found_relevant: Estimate | None = None

    @classmethod
    def of(cls, g: QrelsGroup) -> QrelsVerdict:
        return cls(
            verdict=g.verdict,
            precision=g.precision,
            missed=g.missed,
            cases=g.cases,
            annotated_relevant=g.annotated_relevant,
            negatives=g.negatives,
            confirmed=Estimate(value=g.confirmed.value, ci=g.confirmed.ci, n=g.confirmed.n),
            confirmed_by_humans=_share(g.confirmed_by_reference),
            negatives_found_relevant=_share(g.negatives_found_relevant) if g.negatives else None,
        )


class QrelsVerdicts(_Model):
    """The verdict of every dataset and over all of them, with the thresholds."""

    min_confirmed: float
    max_missed: float
    overall: QrelsVerdict
    by_dataset: dict[str, QrelsVerdict]
    #: ``None`` in a state file of an earlier tiap
    min_decided: float | None = None

    @classmethod
    def of(cls, q: QrelsFigures) -> QrelsVerdicts:
        return cls(
            min_confirmed=q.min_confirmed,
            max_missed=q.max_missed,
            min_decided=q.min_decided,
            overall=QrelsVerdict.of(q.overall),
            by_dataset={name: QrelsVerdict.of(g) for name, g in q.by_dataset.items()},
        )


class AgreementFigures(_Model):
    kind: Literal["agreement"] = "agreement"
    subset: str | None
    n_cases: int
    n_complete: int
    labels: list[str]
    raters: list[str]
    fleiss_scale: Literal["binary", "labels"]
    fleiss: Estimate
    gate: GateSummary
    #: None: no human reference (none in scope, or left out by ``--no-humans``).
    vs_humans: list[VsHumans] | None = None
    majority: Shares
    by_dataset: dict[str, Shares]
    #: share of decided cases whose majority label is the rubric's first one.
    supported_share: float | None = None
    #: on qrels pairs: each dataset's relevance-label verdict
    qrels: QrelsVerdicts | None = None
    #: the bundle version of the cases (``None``: not recorded, or several)
    bundle_version: str | None = None
    #: the calibrated (PPI) share of the rubric's first label over every case and per
    #: dataset (``None``: no human reference in scope, ``calibrated_reason`` says why)
    supported_ppi: Estimate | None = None
    ppi_by_dataset: dict[str, Estimate] = Field(default_factory=dict)
    calibrated_reason: str | None = None

    @classmethod
    def of(cls, report: AgreementReport) -> AgreementFigures:
        scale: Literal["binary", "labels"] = (
            "binary" if "binary" in report.fleiss_kappa else "labels"
        )
        vs = report.vs_reference
        rows: list[VsHumans] | None = None
        if vs.available:
            rows = []
            for r in [*vs.raters, *([vs.majority] if vs.majority else [])]:
                which: Literal["binary", "labels"] = "labels" if r.binary is None else "binary"
                cmp = r.labels if r.binary is None else r.binary
                rows.append(
                    VsHumans(
                        rater=r.rater,
                        scale=which,
                        n=cmp.n,
                        kappa=_estimate(cmp.kappa),
                        accuracy=_estimate(cmp.accuracy),
                    )
                )
        gate = report.gate
        return cls(
            subset=report.source.subset,
            n_cases=report.n_cases,
            n_complete=report.n_complete,
            labels=report.labels,
            raters=report.included_raters,
            fleiss_scale=scale,
            fleiss=_estimate(report.fleiss_kappa[scale]),
            gate=GateSummary(
                status=gate.status,
                passed=gate.passed,
                failures=gate.failures,
                note=gate.note,
                gate_on=gate.gate_on,
                gate_raters=gate.gate_raters,
                conclusive=gate.conclusive,
            ),
            vs_humans=rows,
            majority=Shares.of(report.majority.labels),
            by_dataset={
                ds: Shares.of(g.labels) for ds, g in sorted(report.prevalence.by_dataset.items())
            },
            supported_share=report.supported_share,
            qrels=QrelsVerdicts.of(report.qrels) if report.qrels is not None else None,
            bundle_version=report.source.bundle_version,
            **_calibrated(report),
        )


def _calibrated(report: AgreementReport) -> dict[str, Any]:
    """The calibrated share of the rubric's first label, overall and per dataset."""
    c = report.calibrated
    if not c.available or c.overall is None or not report.labels:
        return {"calibrated_reason": c.reason}
    first = report.labels[0]

    def ppi(g: CalibratedGroup) -> Estimate:
        f = g.labels.shares[first].ppi
        return Estimate(value=f.value, ci=f.ci, n=f.n, ci_unreliable=f.ci_unreliable)

    return {
        "supported_ppi": ppi(c.overall),
        "ppi_by_dataset": {ds: ppi(g) for ds, g in sorted(c.by_dataset.items())},
    }


StepFigures = Annotated[
    RescoreFigures
    | ExtractFigures
    | QrelsCasesFigures
    | SampleFigures
    | JudgeFigures
    | HumanFigures
    | ProbeFigures
    | AgreementFigures,
    Field(discriminator="kind"),
]
