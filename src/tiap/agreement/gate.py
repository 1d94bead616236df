"""The scale gate's verdict: may a judge panel label every case?

The gate passes when, on the validation subset,

- Fleiss' kappa over the judges (the included raters of kind ``judge``) on the
  rubric's binary collapse (on its labels when it has none) is at least
  ``min_fleiss`` (default 0.80), and
- when there is a human reference, every judge's Cohen's kappa against it on
  the same scale is at least ``min_judge_kappa`` (default 0.60).

An undefined figure fails. Thresholds are finite kappas, in [-1, 1]. Every
report shows the verdict, but only a report on a workspace subset of kind
``validation`` *applies* it: :func:`record_gate` then records a typed
:class:`~tiap.cases.events.GateEvent` (panel, rubric, the judges with the models
and request settings their labels came from, thresholds, figures, verdict and the
written report) in the workspace, after the report is written
(:func:`tiap.agreement.write.write_report_and_record_gate`). Reports on all
cases, on other subsets or on a labels file record nothing.

Judging enforces the verdict: see :mod:`tiap.judge.gate`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tiap.agreement import constant
from tiap.agreement.models import Figure, Gate
from tiap.agreement.table import LabelTable, RaterInfo
from tiap.cases.events import (
    VALIDATION_KIND,
    GatedJudge,
    GateEvent,
    GateFigures,
    GateThresholds,
    ReportRef,
    ScaleName,
    check_kappa_threshold,
    record_event,
)
from tiap.errors import TiapError
from tiap.rubric import Rubric

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

    def __post_init__(self) -> None:
        check_kappa_threshold("min_fleiss", self.min_fleiss)
        check_kappa_threshold("min_judge_kappa", self.min_judge_kappa)


class _Identity(NamedTuple):
    """Whom the verdict is about: the panel the judges' labels name and the rubric."""

    panel: str | None
    rubric_id: str | None
    rubric_hash: str | None
    #: every rubric hash the judges' labels carry (more than one: not applied)
    rubric_hashes: frozenset[str]


def _scale_word(g: GateInputs) -> str:
    return "binary " if g.scale == "binary" else ""


def _fleiss_failures(g: GateInputs) -> list[str]:
    """Step 1: Fleiss' kappa over the judges, against ``min_fleiss``."""
    word = _scale_word(g)
    if not g.judges:
        return ["no judge among the included raters: the gate needs the panel's labels"]
    if g.fleiss is None or g.fleiss.value is None:
        why = g.fleiss.reason if g.fleiss else "no judges"
        return [f"{word}Fleiss' kappa over the judges is undefined ({why})"]
    if g.fleiss.value < g.min_fleiss:
        return [
            f"{word}Fleiss' kappa over the judges {g.fleiss.value:.3f} < {g.min_fleiss:.2f} "
            f"(n={g.fleiss.n})"
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
    )


def evaluate_gate(g: GateInputs) -> Gate:
    """The verdict, its figures and whether it applies (see the module doc)."""
    kappas = _judge_kappas(g)
    failures = _fleiss_failures(g) + _judge_kappa_failures(g, kappas)
    if failures:  # say why, when a judge's labels never vary
        failures += [constant.gate_failure(j, label) for j, label in g.constant.items()]
    infos = [g.table.rater(j) for j in g.judges]
    who = _identity(g, infos)
    note = _not_applied(g.table, bool(g.judges), who)
    applies = note is None
    if applies:
        note = (
            f"recorded for panel {who.panel} and rubric {who.rubric_id or '?'} "
            f"({str(who.rubric_hash)[:12]})"
        )
    passed = not failures
    return Gate(
        status="PASS" if passed else "FAIL",
        passed=passed,
        applies=applies,
        note=note,
        min_fleiss=g.min_fleiss,
        min_judge_kappa=g.min_judge_kappa,
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
        thresholds=GateThresholds(min_fleiss=gate.min_fleiss, min_judge_kappa=gate.min_judge_kappa),
        figures=gate.figures,
        passed=gate.passed,
        failures=gate.failures,
        report=ref,
        bundle_fingerprint=report.source.bundle_version,
    )


def record_gate(
    ws: Workspace, report: AgreementReport, *, report_dir: str | Path | None = None
) -> int | None:
    """Record the report's verdict as a :class:`GateEvent` when it applies; returns
    the event id (``None`` when nothing was recorded). ``report_dir``: where the
    report was written (its ``report.json`` hash goes with the verdict); call this
    only once the report is written, or use
    :func:`tiap.agreement.write.write_report_and_record_gate`."""
    ref = report_ref(report_dir) if report_dir is not None else None
    event = gate_event(report, ref)
    return record_event(ws, event) if event is not None else None
