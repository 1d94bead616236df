"""The scale gate: may a judge panel label every case?

The gate passes when, on the validation subset,

- Fleiss' kappa over the judges (the included raters of kind ``judge``) on the
  rubric's binary collapse (on its labels when it has none) is at least
  ``min_fleiss`` (default 0.80), and
- when there is a human reference, every judge's Cohen's kappa against it on
  the same scale is at least ``min_judge_kappa`` (default 0.60).

An undefined figure fails. Every report shows the verdict, but only a report
on a workspace subset of kind ``validation`` *applies* it: that report records
a ``gate`` event (panel, rubric hash, verdict, failures, figures) in the
workspace. Reports on all cases, on other subsets or on a labels file record
nothing. :func:`check_scale_gate` reads the latest gate event for a panel and
rubric hash; ``tiap judge run`` uses it before labelling cases outside the
validation subset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from tiap.agreement.models import Figure, Gate, GateFigures
from tiap.agreement.table import LabelTable
from tiap.errors import TiapError
from tiap.rubric import Rubric

if TYPE_CHECKING:
    from tiap.agreement.models import AgreementReport
    from tiap.cases.workspace import Workspace

GATE_EVENT = "gate"
FORCE_EVENT = "gate_force"
VALIDATION_KIND = "validation"


@dataclass(frozen=True)
class GateInputs:
    table: LabelTable
    rubric: Rubric | None
    judges: list[str]
    scale: Literal["binary", "labels"]
    fleiss: Figure | None
    judge_kappa: dict[str, Figure] | None  # None: no human reference
    min_fleiss: float
    min_judge_kappa: float


def _one_or_none(values: set[str]) -> str | None:
    return next(iter(values)) if len(values) == 1 else None


def evaluate_gate(g: GateInputs) -> Gate:
    """The verdict, its figures and whether it applies (see the module doc)."""
    word = "binary " if g.scale == "binary" else ""
    failures: list[str] = []
    fleiss_value, fleiss_n = (g.fleiss.value, g.fleiss.n) if g.fleiss else (None, 0)
    if not g.judges:
        failures.append("no judge among the included raters: the gate needs the panel's labels")
    elif g.fleiss is None or g.fleiss.value is None:
        why = g.fleiss.reason if g.fleiss else "no judges"
        failures.append(f"{word}Fleiss' kappa over the judges is undefined ({why})")
    elif g.fleiss.value < g.min_fleiss:
        failures.append(
            f"{word}Fleiss' kappa over the judges {g.fleiss.value:.3f} < {g.min_fleiss:.2f} "
            f"(n={g.fleiss.n})"
        )
    judge_kappa = {j: g.judge_kappa[j] for j in g.judges if j in (g.judge_kappa or {})}
    for judge, f in judge_kappa.items():
        if f.value is None:
            failures.append(
                f"{word}kappa of judge {judge} vs the human reference is undefined ({f.reason})"
            )
        elif f.value < g.min_judge_kappa:
            failures.append(
                f"{word}kappa of judge {judge} vs the human reference {f.value:.3f} < "
                f"{g.min_judge_kappa:.2f} (n={f.n})"
            )
    infos = [g.table.rater(j) for j in g.judges]
    panels = sorted({p for i in infos for p in i.panels})
    panel = "+".join(panels) if panels else None
    hashes = {h for i in infos for h in i.rubric_hashes}
    ids = {x for i in infos for x in i.rubric_ids}
    if not hashes and g.rubric is not None:
        hashes, ids = {g.rubric.content_hash}, ids or {g.rubric.id}
    rubric_hash, rubric_id = _one_or_none(hashes), _one_or_none(ids)
    note = _not_applied(g.table, bool(g.judges), panel, hashes)
    applies = note is None
    if applies:
        note = f"recorded for panel {panel} and rubric {rubric_id or '?'} ({str(rubric_hash)[:12]})"
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
        panel=panel,
        rubric_id=rubric_id,
        rubric_hash=rubric_hash,
        subset=g.table.subset,
        figures=GateFigures(
            scale=g.scale,
            fleiss_kappa=fleiss_value,
            fleiss_n=fleiss_n,
            judge_kappa={j: f.value for j, f in judge_kappa.items()},
            judge_n={j: f.n for j, f in judge_kappa.items()},
        ),
        failures=failures,
    )


def _not_applied(
    table: LabelTable, has_judges: bool, panel: str | None, hashes: set[str]
) -> str | None:
    """Why the verdict is not recorded, or ``None`` when it is."""
    shown = "shown for information, not recorded"
    if table.source != "workspace":
        return f"labels not read from a workspace: the gate is {shown}"
    if table.subset is None:
        return f"report on all cases: the gate applies to a validation subset only ({shown})"
    if table.subset_kind != VALIDATION_KIND:
        return (
            f"subset {table.subset} is of kind {table.subset_kind or 'unknown'}, not "
            f"{VALIDATION_KIND}: the gate is {shown}"
        )
    if not has_judges:
        return f"no judge labels: the gate is {shown}"
    if panel is None:
        return f"the judges' labels name no panel: the gate is {shown}"
    if not hashes:
        return f"no rubric hash is known for the judges' labels: the gate is {shown}"
    if len(hashes) > 1:
        return f"the judges' labels span several rubric versions: the gate is {shown}"
    return None


def record_gate(ws: Workspace, report: AgreementReport) -> int | None:
    """Record the report's gate as a workspace event when it applies; returns the
    event id (``None`` when nothing was recorded)."""
    gate = report.gate
    if not gate.applies:
        return None
    return ws.record_event(
        GATE_EVENT,
        {
            "subset": gate.subset,
            "panel": gate.panel,
            "judges": gate.judges,
            "judge_models": gate.judge_models,
            "rubric_id": gate.rubric_id,
            "rubric_hash": gate.rubric_hash,
            "passed": gate.passed,
            "failures": gate.failures,
            "figures": gate.figures.model_dump(mode="json"),
            "thresholds": {
                "min_fleiss": gate.min_fleiss,
                "min_judge_kappa": gate.min_judge_kappa,
            },
        },
    )


class GateCheck(BaseModel):
    """Whether the scale gate has passed for a panel and rubric, and a message
    for the user (the failing figures, or what to run)."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    message: str
    event: dict | None = None


def _differences(event: dict, judges: Mapping[str, str]) -> list[str]:
    """How the panel's judges (``name -> model``) differ from those the gate event
    judged: the gate holds for the same judges with the same models, no more and no
    fewer (its Fleiss' kappa is about that set). Empty: no difference."""
    gated_models: dict[str, list[str]] = event.get("judge_models") or {}
    gated = list(event.get("judges") or ())
    out = []
    for name, model in judges.items():
        if name not in gated:
            out.append(f"judge {name} was not among the raters of the gated report")
        elif gated_models.get(name) and model not in gated_models[name]:
            seen = ", ".join(gated_models[name])
            out.append(f"judge {name} is now model {model}, the gate saw {seen}")
    out += [
        f"the gated report also had judge {name}, which this panel does not"
        for name in gated
        if name not in judges
    ]
    return out


def _gate_events(ws: Workspace, rubric_hash: str) -> list[dict]:
    """Recorded gate events for the rubric hash, oldest first."""
    return [e for e in ws.events(GATE_EVENT) if e.get("rubric_hash") == rubric_hash]


def _latest_for_panel(
    events: list[dict], panel: str, judges: Mapping[str, str] | None
) -> dict | None:
    """The latest of ``events`` for the panel: by its name or, when ``judges`` (``name ->
    model``) is given, by the same judges and models (a panel renamed since)."""
    for event in reversed(events):
        if event.get("panel") == panel or (judges is not None and not _differences(event, judges)):
            return event
    return None


def latest_gate(
    ws: Workspace, *, panel: str, rubric_hash: str, judges: Mapping[str, str] | None = None
) -> dict | None:
    """The latest recorded gate event for the rubric hash and the panel (see
    :func:`_latest_for_panel`), or ``None``."""
    return _latest_for_panel(_gate_events(ws, rubric_hash), panel, judges)


def _validation_subset_hint(ws: Workspace) -> str:
    names = [s for s in ws.subsets() if ws.subset_params(s).get("kind") == VALIDATION_KIND]
    return names[0] if len(names) == 1 else "validation"


def check_scale_gate(
    ws: Workspace, *, panel: str, rubric_hash: str, judges: Mapping[str, str] | None = None
) -> GateCheck:
    """Has the latest agreement report for ``panel`` and ``rubric_hash`` on a
    validation subset passed the gate, for exactly ``judges`` (``name -> model``: the
    panel as it is now; ``None`` skips that check)?"""
    events = _gate_events(ws, rubric_hash)
    event = _latest_for_panel(events, panel, judges)
    rubric = rubric_hash[:12]
    if event is None:
        message = (
            f"no agreement report with a gate for panel {panel} and rubric {rubric} has "
            f"been run: run tiap agreement report --db {ws.path} --subset "
            f"{_validation_subset_hint(ws)} --out DIR"
        )
        if events and judges is not None:
            message += (
                f" (the latest gate for this rubric, for panel {events[-1].get('panel')}, "
                f"does not hold for this panel: {'; '.join(_differences(events[-1], judges))})"
            )
        return GateCheck(passed=False, message=message)
    where = f"panel {event.get('panel')} and rubric {event.get('rubric_id') or '?'} ({rubric})"
    when = f"subset {event.get('subset')}, report of {event.get('created_at')}"
    differences = _differences(event, judges) if judges is not None else []
    if event.get("passed") and differences:
        return GateCheck(
            passed=False,
            message=(
                f"the scale gate passed for {where} ({when}) but not for the panel as it is "
                f"now: {'; '.join(differences)}; judge the validation subset with this panel "
                "and run the agreement report again over all of its judges"
            ),
            event=event,
        )
    if event.get("passed"):
        return GateCheck(
            passed=True, message=f"scale gate passed for {where} ({when})", event=event
        )
    failures = "; ".join(event.get("failures") or ["unknown failure"])
    return GateCheck(
        passed=False,
        message=f"scale gate failed for {where} ({when}): {failures}",
        event=event,
    )


def require_scale_gate(
    ws: Workspace,
    *,
    panel: str,
    judges: Mapping[str, str],
    rubric: Rubric,
    subset: str | None,
    force: bool,
) -> str | None:
    """Refuse to judge beyond a validation subset unless the gate passed or ``force``.

    ``judges`` is the panel as it is now (``name -> model``). Judging a subset of
    kind validation needs no gate. Otherwise a missing or failed gate, or one for
    other judges or models, raises :class:`TiapError` naming the failing figures;
    with ``force`` the decision is recorded as a ``gate_force`` event and a note
    for the user is returned.
    """
    if subset is not None and ws.subset_params(subset).get("kind") == VALIDATION_KIND:
        return None
    result = check_scale_gate(ws, panel=panel, rubric_hash=rubric.content_hash, judges=judges)
    if result.passed:
        return None
    if not force:
        where = f"subset '{subset}'" if subset else "all cases"
        raise TiapError(
            f"{result.message}; judging {where} beyond a validation subset needs a passed "
            f"scale gate for panel '{panel}' and rubric '{rubric.id}', or --force"
        )
    ws.record_event(
        FORCE_EVENT,
        {
            "panel": panel,
            "rubric_id": rubric.id,
            "rubric_hash": rubric.content_hash,
            "subset": subset,
            "message": result.message,
        },
    )
    return f"scale gate not passed ({result.message}); going on because of --force (recorded)"
