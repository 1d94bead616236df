"""The scale gate's verdict: may a judge panel label every case?

The gate passes when, on the validation subset,

- the evidence is enough: the subset holds at least ``min_cases`` cases (default
  30), at least ``max(min_cases, ceil(subset / 2))`` of them are complete (every
  judge labelled them validly), and each judge labelled at least ``min_valid``
  (default 0.90) of the subset's cases validly;
- the human labels are of the judges' rubric version: when the subset holds human
  labels but none under the judges' rubric hash (:mod:`tiap.agreement.rubric_versions`),
  it fails naming the other version, unless human labels are left out by choice
  (``no_humans``, recorded);
- Fleiss' kappa over the judges (the included raters of kind ``judge``) on the
  rubric's binary collapse (on its labels when it has none) is at least
  ``min_fleiss`` (default 0.80); ``gate_raters`` ``judges+reference`` takes it over
  the judges and the human reference's raters together (the paper's validation kappa
  over five raters: the human and four LLMs), which needs a human reference, and
- when there is a human reference, every judge's Cohen's kappa against it on
  the same scale, on at least as many cases as the complete cases needed, is at
  least ``min_judge_kappa`` (default 0.60).

Each unmet rule is a failure line of its own. An undefined figure fails. Every figure
carries its 95% interval in the verdict; ``gate_on`` ``lower`` asks each interval's
lower bound, not the point estimate, to clear its threshold, and the verdict says
whether it is ``conclusive`` (:mod:`tiap.agreement.gate_intervals`).
Thresholds are finite kappas in [-1, 1], ``min_cases`` an integer from 1 and
``min_valid`` a finite share in [0, 1]. Every
report shows the verdict, but only a report on a workspace subset of kind
``validation`` *applies* it: :func:`record_gate` then records a typed
:class:`~tiap.cases.events.GateEvent` (panel, rubric, the judges with the models
and request settings their labels came from, thresholds, figures, verdict and the
written report) in the workspace, after the report is written
(:func:`tiap.agreement.write.write_report_and_record_gate`). Reports on all
cases, on other subsets or on a labels file record nothing.

Judging enforces the verdict: see :mod:`tiap.judge.scale_gate`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tiap.agreement import constant
from tiap.agreement.gate_intervals import conclusive, lower_failure
from tiap.agreement.label_table import LabelTable, RaterInfo
from tiap.agreement.models import Figure, Gate
from tiap.agreement.rubric_versions import VersionScope
from tiap.cases.events import (
    DEFAULT_GATE_ON,
    DEFAULT_GATE_RATERS,
    VALIDATION_KIND,
    GatedJudge,
    GateEvent,
    GateFigures,
    GateOn,
    GateRaters,
    GateThresholds,
    ReportRef,
    ScaleName,
    check_gate_on,
    check_gate_raters,
    check_kappa_threshold,
    record_event,
    required_cases,
)
from tiap.errors import TiapError
from tiap.limits import check_cases, check_share_threshold
from tiap.rubric import Rubric

DEFAULT_MIN_CASES = 30
DEFAULT_MIN_VALID = 0.90


class JudgeCounts(NamedTuple):
    """A judge's labels on the cases in scope: valid, invalid (abstentions), missing."""

    valid: int
    invalid: int
    missing: int


if TYPE_CHECKING:
    from tiap.agreement.models import AgreementReport
    from tiap.cases.workspace import Workspace


@dataclass(frozen=True)
class GateInputs:
    """What the verdict is reached from. The thresholds are checked here too (finite
    kappas in [-1, 1]), wherever the inputs come from."""

    table: LabelTable
    rubric: Rubric | None
    judges: list[str]
    scale: ScaleName
    fleiss: Figure | None
    judge_kappa: dict[str, Figure] | None  # None: no human reference
    min_fleiss: float
    min_judge_kappa: float
    #: judges whose valid labels on the gate's scale are all one label -> that label
    constant: dict[str, str] = field(default_factory=dict)
    min_cases: int = DEFAULT_MIN_CASES
    min_valid: float = DEFAULT_MIN_VALID
    #: judge -> its valid, invalid and missing labels on the cases in scope
    judge_counts: dict[str, JudgeCounts] = field(default_factory=dict)
    #: which rubric version the figures count, and what was left out
    version: VersionScope = field(default_factory=VersionScope)
    #: the rubric hash of the human reference's labels (``None``: none, or not said)
    reference_rubric_hash: str | None = None
    #: human labels were left out by choice (``--no-humans``)
    no_humans: bool = False
    #: the thresholds apply to the point estimates or to the interval lower bounds
    gate_on: GateOn = DEFAULT_GATE_ON
    #: whom ``fleiss`` is over: the judges, or the judges and the human reference
    gate_raters: GateRaters = DEFAULT_GATE_RATERS
    #: the raters ``fleiss`` is over, in order (empty: the judges)
    fleiss_raters: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_gate_on("gate_on", self.gate_on)
        check_gate_raters("gate_raters", self.gate_raters)
        check_kappa_threshold("min_fleiss", self.min_fleiss)
        check_kappa_threshold("min_judge_kappa", self.min_judge_kappa)
        check_cases("min_cases", self.min_cases)
        check_share_threshold("min_valid", self.min_valid)

    @property
    def cases(self) -> int:
        """The cases in scope (the subset's, of the rubric's kind)."""
        return len(self.table.cases)

    @property
    def fleiss_over(self) -> str:
        """Whom the gate's Fleiss' kappa is over, in words."""
        return (
            "the judges and the human reference"
            if self.gate_raters == "judges+reference"
            else "the judges"
        )

    @property
    def required(self) -> int:
        """The complete cases a pass needs."""
        return required_cases(self.min_cases, self.cases)


class _Identity(NamedTuple):
    """Whom the verdict is about: the panel the judges' labels name and the rubric."""

    panel: str | None
    rubric_id: str | None
    rubric_hash: str | None
    #: every rubric hash the judges' labels carry (more than one: not applied)
    rubric_hashes: frozenset[str]


def _scale_word(g: GateInputs) -> str:
    return "binary " if g.scale == "binary" else ""


def _no_fleiss_reason(g: GateInputs) -> str:
    if g.gate_raters == "judges+reference":
        return (
            "no human reference: --gate-raters judges+reference needs human labels as the reference"
        )
    return "no judges"


def _fleiss_failures(g: GateInputs) -> list[str]:
    """Step 1: Fleiss' kappa over the judges (and the reference), against ``min_fleiss``."""
    word, over = _scale_word(g), g.fleiss_over
    if not g.judges:
        return ["no judge among the included raters: the gate needs the panel's labels"]
    if g.fleiss is None or g.fleiss.value is None:
        why = g.fleiss.reason if g.fleiss else _no_fleiss_reason(g)
        return [f"{word}Fleiss' kappa over {over} is undefined ({why})"]
    if g.fleiss.value < g.min_fleiss:
        return [
            f"{word}Fleiss' kappa over {over} {g.fleiss.value:.3f} < {g.min_fleiss:.2f} "
            f"(n={g.fleiss.n})"
        ]
    failure = lower_failure(f"{word}Fleiss' kappa over {over}", g.fleiss, g.min_fleiss, g.gate_on)
    return [failure] if failure else []


def _complete_who(g: GateInputs) -> str:
    if g.gate_raters == "judges+reference":
        return "every judge and the human reference"
    return "every judge"


def _evidence_failures(g: GateInputs) -> list[str]:
    """Enough evidence: cases in the subset, complete cases, each judge's valid share."""
    out = []
    if g.cases < g.min_cases:
        out.append(
            f"the subset has {g.cases} case(s), fewer than the {g.min_cases} complete cases "
            f"the gate needs (--min-cases {g.min_cases}): draw a validation subset of at least "
            f"{g.min_cases} cases (--n {g.min_cases} or more with tiap cases sample or tiap "
            "audit), or lower --min-cases deliberately"
        )
    elif g.fleiss is not None and g.fleiss.n < g.required:
        out.append(
            f"only {g.fleiss.n} complete case(s) ({_complete_who(g)} labelled validly) of the "
            f"{g.cases} in the subset: the gate needs at least {g.required} (--min-cases "
            f"{g.min_cases}, and at least half of the subset)"
        )
    for judge in g.judges:
        c = g.judge_counts.get(judge)
        if c is None or not g.cases or c.valid / g.cases >= g.min_valid:
            continue
        out.append(
            f"judge {judge} labelled {c.valid} of {g.cases} case(s) validly "
            f"({c.valid / g.cases:.3f}; {c.invalid} invalid, {c.missing} missing): the gate "
            f"needs a valid share of at least {g.min_valid:.2f} (--min-valid)"
        )
    return out


def _version_failures(g: GateInputs) -> list[str]:
    """The human labels are of the judges' rubric version (unless left out by choice)."""
    v = g.version
    # the hash the verdict is recorded for: the judges' labels', else (labels that name
    # none) the report rubric's, as :func:`_identity` takes it
    target = v.rubric_hash or (g.rubric.content_hash if g.rubric is not None else None)
    if g.no_humans or target is None:
        return []
    again = (
        "label the subset again under this version, or gate on the judges alone with "
        "--no-humans (recorded)"
    )
    if v.humans_only_elsewhere:
        humans = [h for h in v.humans_before if h in v.left_out]
        ids = v.ids_of(humans)
        which = (
            f"another version of rubric {v.rubric_id}"
            if not ids or ids == [v.rubric_id]
            else f"rubric {', '.join(ids)}"
        )
        hashes = ", ".join(h[:12] for h in v.hashes_of(humans))
        count = sum(v.left_out[h] for h in humans)
        return [
            f"the human labels on this subset were made under {which} (hash {hashes}), not "
            f"the {v.whose} ({target[:12]}): {count} label(s) by {', '.join(humans)}, "
            f"left out of every figure; {again}"
        ]
    if g.judge_kappa is not None and g.reference_rubric_hash is None:
        return [
            "the human reference's labels do not say which rubric version they were made "
            f"under, so they cannot be shown to be of the {v.whose} ({target[:12]}); "
            f"{again}"
        ]
    return []


def _judge_kappas(g: GateInputs) -> dict[str, Figure]:
    """Each judge's kappa against the human reference (none without a reference)."""
    reference = g.judge_kappa or {}
    return {j: reference[j] for j in g.judges if j in reference}


def _judge_kappa_failures(g: GateInputs, kappas: Mapping[str, Figure]) -> list[str]:
    """Step 2: each judge's kappa against the human reference, against
    ``min_judge_kappa``."""
    word = _scale_word(g)
    out = []
    for judge, f in kappas.items():
        if f.value is None:
            out.append(
                f"{word}kappa of judge {judge} vs the human reference is undefined ({f.reason})"
            )
        elif f.value < g.min_judge_kappa:
            out.append(
                f"{word}kappa of judge {judge} vs the human reference {f.value:.3f} < "
                f"{g.min_judge_kappa:.2f} (n={f.n})"
            )
        elif failure := lower_failure(
            f"{word}kappa of judge {judge} vs the human reference", f, g.min_judge_kappa, g.gate_on
        ):
            out.append(failure)
        elif f.n < g.required:
            out.append(
                f"{word}kappa of judge {judge} vs the human reference rests on {f.n} case(s): "
                f"the gate needs at least {g.required} (--min-cases {g.min_cases}, and at "
                "least half of the subset)"
            )
    return out


def _one_or_none(values: set[str]) -> str | None:
    return next(iter(values)) if len(values) == 1 else None


def _identity(g: GateInputs, infos: list[RaterInfo]) -> _Identity:
    """Step 3: the panel and rubric the judges' labels name."""
    panels = sorted({p for i in infos for p in i.panels})
    hashes = {h for i in infos for h in i.rubric_hashes}
    ids = {x for i in infos for x in i.rubric_ids}
    if not hashes and g.rubric is not None:
        hashes, ids = {g.rubric.content_hash}, ids or {g.rubric.id}
    return _Identity(
        panel="+".join(panels) if panels else None,
        rubric_id=_one_or_none(ids),
        rubric_hash=_one_or_none(hashes),
        rubric_hashes=frozenset(hashes),
    )


def _not_applied(table: LabelTable, has_judges: bool, who: _Identity) -> str | None:
    """Step 4: why the verdict is not recorded, or ``None`` when it is."""
    shown = "shown for information, not recorded"
    if table.source != "workspace" or table.subset is None:
        # one note for both (a labels file exported from a workspace reports as it does)
        return f"not a validation subset of a workspace: the gate is {shown}"
    if table.subset_kind != VALIDATION_KIND:
        return (
            f"subset {table.subset} is of kind {table.subset_kind or 'unknown'}, not "
            f"{VALIDATION_KIND}: the gate is {shown}"
        )
    if not has_judges:
        return f"no judge labels: the gate is {shown}"
    if who.panel is None:
        return f"the judges' labels name no panel: the gate is {shown}"
    if not who.rubric_hashes:
        return f"no rubric hash is known for the judges' labels: the gate is {shown}"
    if len(who.rubric_hashes) > 1:
        return f"the judges' labels span several rubric versions: the gate is {shown}"
    return None


def _figures(g: GateInputs, kappas: Mapping[str, Figure]) -> GateFigures:
    fleiss_value, fleiss_n = (g.fleiss.value, g.fleiss.n) if g.fleiss else (None, 0)
    return GateFigures(
        scale=g.scale,
        fleiss_kappa=fleiss_value,
        fleiss_n=fleiss_n,
        judge_kappa={j: f.value for j, f in kappas.items()},
        judge_n={j: f.n for j, f in kappas.items()},
        cases=g.cases,
        judge_valid={j: g.judge_counts[j].valid for j in g.judges if j in g.judge_counts},
        fleiss_ci=g.fleiss.ci if g.fleiss is not None and g.fleiss.value is not None else None,
        judge_ci={j: f.ci if f.value is not None else None for j, f in kappas.items()},
    )


def _failures(g: GateInputs, kappas: Mapping[str, Figure]) -> list[str]:
    """Every unmet rule, one line each (the module doc's order)."""
    if not g.judges:
        return _fleiss_failures(g)
    failures = _evidence_failures(g) + _version_failures(g)
    failures += _fleiss_failures(g) + _judge_kappa_failures(g, kappas)
    if failures:  # say why, when a judge's labels never vary
        failures += [constant.gate_failure(j, label) for j, label in g.constant.items()]
    return failures


def evaluate_gate(g: GateInputs) -> Gate:
    """The verdict, its figures and whether it applies (see the module doc)."""
    kappas = _judge_kappas(g)
    failures = _failures(g, kappas)
    infos = [g.table.rater(j) for j in g.judges]
    who = _identity(g, infos)
    note = _not_applied(g.table, bool(g.judges), who)
    applies = note is None
    if applies:
        note = (
            f"recorded for panel {who.panel} and rubric {who.rubric_id or '?'} "
            f"({str(who.rubric_hash)[:12]})"
        )
        if g.no_humans:
            note += "; human labels left out by choice (--no-humans): judges alone"
    passed = not failures
    return Gate(
        status="PASS" if passed else "FAIL",
        passed=passed,
        applies=applies,
        note=note,
        min_fleiss=g.min_fleiss,
        min_judge_kappa=g.min_judge_kappa,
        min_cases=g.min_cases,
        min_valid=g.min_valid,
        required_cases=g.required,
        no_humans=g.no_humans,
        reference_rubric_hash=g.reference_rubric_hash,
        other_version_labels=dict(g.version.left_out),
        judges=g.judges,
        judge_models={i.name: i.models for i in infos},
        judge_settings={i.name: i.settings_hashes for i in infos},
        judge_settings_missing={
            i.name: i.labels_without_settings for i in infos if i.labels_without_settings
        },
        panel=who.panel,
        rubric_id=who.rubric_id,
        rubric_hash=who.rubric_hash,
        subset=g.table.subset,
        figures=_figures(g, kappas),
        failures=failures,
        gate_on=g.gate_on,
        gate_raters=g.gate_raters,
        fleiss_raters=g.fleiss_raters or list(g.judges),
        conclusive=conclusive(g.fleiss, kappas, g.min_fleiss, g.min_judge_kappa),
    )


# --------------------------------------------------------------------- recording


def report_ref(out_dir: str | Path) -> ReportRef:
    """The written report in ``out_dir``: its directory and the sha256 of its
    ``report.json`` as it is on disk."""
    out = Path(out_dir)
    try:
        data = (out / "report.json").read_bytes()
    except OSError as exc:
        raise TiapError(f"{out / 'report.json'}: cannot read the report ({exc.strerror})") from None
    return ReportRef(
        out_dir=str(out.resolve()), report_json_sha256=hashlib.sha256(data).hexdigest()
    )


def gate_event(report: AgreementReport, ref: ReportRef | None = None) -> GateEvent | None:
    """The event of the report's verdict, or ``None`` when the verdict does not apply."""
    gate = report.gate
    if not gate.applies:
        return None
    if gate.subset is None or gate.panel is None or gate.rubric_hash is None:
        raise TiapError("the gate applies but names no subset, panel or rubric hash")
    return GateEvent(
        subset=gate.subset,
        panel=gate.panel,
        rubric_id=gate.rubric_id,
        rubric_hash=gate.rubric_hash,
        judges=[
            GatedJudge(
                name=j,
                models=gate.judge_models.get(j, []),
                settings_hashes=gate.judge_settings.get(j, []),
                labels_without_settings=gate.judge_settings_missing.get(j, 0),
            )
            for j in gate.judges
        ],
        thresholds=GateThresholds(
            min_fleiss=gate.min_fleiss,
            min_judge_kappa=gate.min_judge_kappa,
            min_cases=gate.min_cases,
            min_valid=gate.min_valid,
        ),
        figures=gate.figures,
        passed=gate.passed,
        failures=gate.failures,
        report=ref,
        reference_rubric_hash=gate.reference_rubric_hash,
        no_humans=gate.no_humans,
        other_version_labels=gate.other_version_labels,
        bundle_fingerprint=report.source.bundle_version,
        gate_on=gate.gate_on,
        gate_raters=gate.gate_raters,
        conclusive=gate.conclusive,
    )


def record_gate(
    ws: Workspace, report: AgreementReport, *, report_dir: str | Path | None = None
) -> int | None:
    """Record the report's verdict as a :class:`GateEvent` when it applies; returns
    the event id (``None`` when nothing was recorded). ``report_dir``: where the
    report was written (its ``report.json`` hash goes with the verdict); call this
    only once the report is written, or use
    :func:`tiap.agreement.write.write_report_and_record_gate`. The event names the
    anchor set frozen with it, if any (:mod:`tiap.agreement.anchor_link`)."""
    from tiap.agreement.anchor_link import with_anchor

    ref = report_ref(report_dir) if report_dir is not None else None
    event = gate_event(report, ref)
    return record_event(ws, with_anchor(ws, event)) if event is not None else None
