"""The agreement report's ``diagnostics`` section, read from the workspace's events
(:mod:`tiap.agreement.diagnostics_models`).

For each judge of the report (its included raters of kind ``judge``), under the
report's rubric version (its content hash):

- **probes**: the judge's figures in the latest ``probe`` event that has it (each
  kind's flip rate with its Wilson 95% interval, the planted-label share of
  ``injection``, each kind's status, and the judge's verdict);
- **drift**: the judge's figures in the latest ``drift`` event that has it (share
  of anchors changed, McNemar's p, the EWMA alarm, drifted or not);
- **warnings**: the gate is the latest passed ``gate`` event recorded under the
  rubric before the report was computed (a report that records a gate itself
  refers to the one before it). A judge that gate passed (one of its judges) and
  that drifted in a drift run recorded after it gets a warning naming the run.

Probe and drift judgments never enter another figure of the report: this section
only reads the recorded results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from pydantic import ValidationError

from tiap.agreement.diagnostics_models import (
    NO_WORKSPACE,
    Diagnostics,
    DriftWarning,
    JudgeDrift,
    JudgeProbes,
    ProbeKindResult,
)
from tiap.cases.diagnostic_events import DriftedJudge, DriftEvent, ProbeEvent
from tiap.cases.events import GateEvent, WorkspaceEvent
from tiap.errors import TiapError
from tiap.io import describe_validation_error

if TYPE_CHECKING:
    from tiap.agreement.models import AgreementReport
    from tiap.cases.workspace import Workspace

__all__ = ["NO_WORKSPACE", "diagnostics", "with_diagnostics"]

E = TypeVar("E", bound=WorkspaceEvent)


def _events(ws: Workspace, model: type[E], rubric_hash: str | None) -> list[tuple[int, E]]:
    """(event id, event) of ``model``'s kind under the rubric hash, oldest first; an
    event that does not validate is a one-line error."""
    out: list[tuple[int, E]] = []
    for record in ws.event_records(model.KIND.value):
        try:
            event = model.model_validate(record.payload)
        except ValidationError as exc:
            raise TiapError(
                f"{ws.path}: {model.KIND.value} event {record.id} is not a valid record "
                f"({describe_validation_error(exc)})"
            ) from None
        if rubric_hash is None or getattr(event, "rubric_hash", None) == rubric_hash:
            out.append((int(record.id or 0), event))
    return out


def _probes(judge: str, events: list[tuple[int, ProbeEvent]]) -> JudgeProbes | None:
    for number, event in reversed(events):
        found = event.judge(judge)
        if found is None:
            continue
        # the event's figures of each kind that the report shows (its own fields)
        kinds = [ProbeKindResult.model_validate(k, from_attributes=True) for k in found.kinds]
        return JudgeProbes(
            judge=judge,
            run=number,
            panel=event.panel,
            subset=event.subset,
            model=found.model,
            verdict=found.verdict,
            kinds=kinds,
        )
    return None


def _drift(
    judge: str, number: int, event: DriftEvent, found: DriftedJudge, gate: int | None
) -> JudgeDrift:
    return JudgeDrift(
        judge=judge,
        run=event.run,
        anchor=event.anchor,
        model=found.model,
        n=found.n,
        changed=found.changed,
        change_rate=found.change_rate,
        mcnemar_p=found.mcnemar_p,
        alarm=found.alarm,
        drifted=found.drifted,
        reasons=list(found.reasons),
        after_gate=None if gate is None else number > gate,
    )


def _latest_drift(
    judge: str, events: list[tuple[int, DriftEvent]], gate: int | None
) -> JudgeDrift | None:
    for number, event in reversed(events):
        found = event.judge(judge)
        if found is not None:
            return _drift(judge, number, event, found, gate)
    return None


def _warning(
    judge: str, events: list[tuple[int, DriftEvent]], gate: tuple[int, GateEvent]
) -> DriftWarning | None:
    """The latest drift run after the gate in which ``judge`` drifted."""
    number, event = gate
    if event.judge(judge) is None:
        return None
    for later, run in reversed(events):
        found = run.judge(judge)
        if later > number and found is not None and found.drifted:
            return DriftWarning(
                judge=judge,
                run=run.run,
                anchor=run.anchor,
                reasons=list(found.reasons),
                message=(
                    f"judge {judge} passed the gate (gate event {number}) and drifted since: "
                    f"drift run {run.run} of anchor set {run.anchor} ("
                    + ("; ".join(found.reasons) or "drifted")
                    + "); its labels may no longer be what the gate checked"
                ),
            )
    return None


def diagnostics(ws: Workspace, report: AgreementReport) -> Diagnostics:
    """The section for ``report``'s judges from ``ws``'s recorded probe, drift and
    gate events (see the module doc)."""
    judges = [r.name for r in report.raters if r.included and r.kind == "judge"]
    if not judges:
        return Diagnostics(available=False, reason="the report has no judge")
    rubric_hash = report.rubric.hash if report.rubric is not None else None
    gates = [(n, g) for n, g in _events(ws, GateEvent, rubric_hash) if g.passed]
    gate = gates[-1] if gates else None
    gate_id = gate[0] if gate else None
    probe_events = _events(ws, ProbeEvent, rubric_hash)
    drift_events = _events(ws, DriftEvent, rubric_hash)
    probes = [p for j in judges if (p := _probes(j, probe_events)) is not None]
    drift = [d for j in judges if (d := _latest_drift(j, drift_events, gate_id)) is not None]
    warnings = (
        [w for j in judges if (w := _warning(j, drift_events, gate)) is not None]
        if gate is not None
        else []
    )
    return Diagnostics(
        available=True,
        judges=judges,
        gate=gate_id,
        gate_anchor=gate[1].anchor if gate else None,
        probes=probes,
        probes_reason=None
        if probes
        else "no probe run of these judges under this rubric (tiap judge probe)",
        drift=drift,
        drift_reason=None
        if drift
        else "no drift run of these judges under this rubric (tiap judge drift)",
        warnings=warnings,
    )


def with_diagnostics(ws: Workspace, report: AgreementReport) -> AgreementReport:
    """``report`` with its ``diagnostics`` section read from ``ws``."""
    return report.model_copy(update={"diagnostics": diagnostics(ws, report)})
