"""The scale gate as a rule of judging: beyond a validation subset, a panel judges
only after an agreement report on that subset passed the gate for it.

The agreement report records its verdict as a :class:`~tiap.cases.events.GateEvent`
(:mod:`tiap.agreement.gate`). :func:`tiap.judge.plan_run` calls
:func:`require_scale_gate` first: judging a subset of kind validation needs no
gate; otherwise the latest gate event for the rubric and the panel must have
passed, or the run is refused with the failing figures (or, with ``force``, goes
on and records a :class:`~tiap.cases.events.GateForceEvent`).

The gate holds for the judges it saw, as they were: the same judges (none added,
none dropped: its Fleiss' kappa is about that set), each with the same model and
with exactly the request settings the plan would send now among those its labels
came from (:func:`tiap.judge.request.settings_hash`: model, api_base,
temperature, max_tokens, response format, seed, params). This is the rule a
(case, judge) pair is judged by, so editing a panel's settings asks for the
validation subset to be judged and reported again. And it holds for the cases it
saw: the gate's subset must not be stale, and its cases must be of the bundle
version the gate recorded (:mod:`tiap.cases.versions`), so a gate passed before
the workspace moved to a new version of the bundle does not hold. A panel renamed since, with
the same judges, models and settings, is the panel the gate saw. A gate event
recorded by an earlier tiap does not say which settings the labels came from:
it does not satisfy the settings check (the agreement report is free to re-run).
Nor does it say how much evidence its verdict rested on (the complete cases, each
judge's valid share, the human reference's rubric version): a pass recorded so is
not taken as one until the report is run again. A recorded pass of this tiap holds
that evidence, and a record whose figures do not support its pass is not a valid
record (:class:`~tiap.cases.events.GateEvent`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from pydantic import BaseModel, ConfigDict

from tiap.cases.events import (
    ForcedJudge,
    GatedJudge,
    GateEvent,
    GateForceEvent,
    events_newest_first,
    is_validation_subset,
    record_event,
    validation_subset_hint,
)
from tiap.errors import TiapError
from tiap.judge.panel import Panel
from tiap.judge.request import judge_settings, settings_hash
from tiap.rubric import Rubric

if TYPE_CHECKING:
    from tiap.cases.workspace import Workspace

__all__ = [
    "GateCheck",
    "GateDecision",
    "JudgeIdentity",
    "check_scale_gate",
    "differences",
    "latest_gate",
    "panel_identity",
    "require_scale_gate",
]

_SETTINGS = "temperature, max_tokens, response format, seed, params, model or api_base"


class JudgeIdentity(NamedTuple):
    """A judge of the panel as it is now: its model and the hash of the request
    settings it would send. ``settings_hash`` ``None``: not known to the caller, the
    settings are then not compared (only :func:`require_gate_for_models`)."""

    model: str
    settings_hash: str | None


def panel_identity(panel: Panel, rubric: Rubric) -> dict[str, JudgeIdentity]:
    """``judge name -> identity`` of every judge of ``panel`` under ``rubric``."""
    return {
        j.name: JudgeIdentity(j.model, settings_hash(judge_settings(panel, j, rubric)))
        for j in panel.judges
    }


class GateCheck(BaseModel):
    """Whether the scale gate has passed for a panel and rubric, and a message
    for the user (the failing figures, or what to run)."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    message: str
    event: GateEvent | None = None


# ------------------------------------------------------------------ differences


def _settings_difference(name: str, now: str, seen: GatedJudge) -> str | None:
    """How the request settings of judge ``name`` (``now``) differ from those of its
    labels in the gated report; ``None``: the same, and only those."""
    if seen.settings_hashes is None:
        return (
            f"the gate's record does not say which request settings judge {name}'s labels "
            "came from (recorded by an earlier tiap)"
        )
    if seen.labels_without_settings:
        return (
            f"{seen.labels_without_settings} label(s) of judge {name} in the gated report "
            "carry no request settings (made before tiap recorded them)"
        )
    if now not in seen.settings_hashes:
        was = ", ".join(h[:12] for h in seen.settings_hashes) or "none"
        return (
            f"judge {name}'s request settings changed since the gate ({_SETTINGS}; now "
            f"{now[:12]}, the gate saw {was})"
        )
    if len(seen.settings_hashes) > 1:
        return (
            f"judge {name}'s labels in the gated report came from "
            f"{len(seen.settings_hashes)} different request settings, not only the current "
            f"{now[:12]}"
        )
    return None


def differences(event: GateEvent, judges: Mapping[str, JudgeIdentity]) -> list[str]:
    """How the panel's judges (``name -> identity``, the panel as it is now) differ
    from those the gate event saw. Empty: no difference."""
    out = []
    for name, now in judges.items():
        seen = event.judge(name)
        if seen is None:
            out.append(f"judge {name} was not among the raters of the gated report")
        elif seen.models and now.model not in seen.models:
            out.append(
                f"judge {name} is now model {now.model}, the gate saw {', '.join(seen.models)}"
            )
        elif now.settings_hash is not None:
            changed = _settings_difference(name, now.settings_hash, seen)
            if changed:
                out.append(changed)
    out += [
        f"the gated report also had judge {name}, which this panel does not"
        for name in event.judge_names
        if name not in judges
    ]
    return out


def version_difference(ws: Workspace, event: GateEvent) -> str | None:
    """How the gate's subset differs from the cases the gate saw: stale, or of
    another bundle version; ``None``: the same version."""
    from tiap.cases.fingerprint import short

    if event.subset not in ws.subsets():
        return None  # a gate on a subset since removed: as before, judged by its record
    if ws.subset_is_stale(event.subset):
        return (
            f"subset {event.subset} is stale (its cases' bundle version was replaced "
            "since the gate): draw it again"
        )
    now = list(dict.fromkeys(ws.case_versions_of(ws.case_ids(subset=event.subset)).values()))
    current = now[0] if len(now) == 1 else None
    if len(now) == 1 and event.bundle_fingerprint == current:
        return None
    if len(now) > 1:
        shown = ", ".join(short(v) for v in now)
        are = f"are of {len(now)} bundle versions ({shown})"
    else:
        are = f"are of version {short(current)}"
    if event.bundle_fingerprint is None:
        return (
            "the gate's record does not say which bundle version its cases were of "
            f"(recorded by an earlier tiap); the subset's cases {are}"
        )
    return (
        f"the gate saw cases of bundle version {short(event.bundle_fingerprint)}, and "
        f"subset {event.subset}'s cases {are}"
    )


# ----------------------------------------------------------------------- lookup


def _gate_events(ws: Workspace, rubric_hash: str) -> Iterator[GateEvent]:
    """Gate events for the rubric hash, newest first (each validated as reached)."""
    return (e for e in events_newest_first(ws, GateEvent) if e.rubric_hash == rubric_hash)


def _holds_for(event: GateEvent, panel: str, judges: Mapping[str, JudgeIdentity] | None) -> bool:
    return event.panel == panel or (judges is not None and not differences(event, judges))


def _lookup(
    ws: Workspace, panel: str, rubric_hash: str, judges: Mapping[str, JudgeIdentity] | None
) -> tuple[GateEvent | None, GateEvent | None]:
    """(the latest event for the panel: by its name or, when ``judges`` is given, by
    the same judges, models and settings; the latest event for the rubric)."""
    newest = None
    for event in _gate_events(ws, rubric_hash):
        newest = newest or event
        if _holds_for(event, panel, judges):
            return event, newest
    return None, newest


def latest_gate(
    ws: Workspace,
    *,
    panel: str,
    rubric_hash: str,
    judges: Mapping[str, JudgeIdentity] | None = None,
) -> GateEvent | None:
    """The latest recorded gate event for the rubric hash and the panel (by name, or
    by the same judges when ``judges`` is given), or ``None``."""
    return _lookup(ws, panel, rubric_hash, judges)[0]


def _what_to_run(ws: Workspace, panel: str) -> str:
    subset = validation_subset_hint(ws)
    return (
        f"judge the validation subset with this panel (tiap judge run --db {ws.path} "
        f"--panel {panel} --subset {subset}) and run the agreement report again over all "
        f"of its judges (tiap agreement report --db {ws.path} --subset {subset} --out DIR)"
    )


def check_scale_gate(
    ws: Workspace,
    *,
    panel: str,
    rubric_hash: str,
    judges: Mapping[str, JudgeIdentity] | None = None,
) -> GateCheck:
    """Has the latest agreement report for ``panel`` and ``rubric_hash`` on a
    validation subset passed the gate, for exactly ``judges`` (``name -> identity``:
    the panel as it is now, see :func:`panel_identity`; ``None`` skips that check)?
    A recorded gate event that does not validate raises :class:`TiapError`."""
    event, newest = _lookup(ws, panel, rubric_hash, judges)
    rubric = rubric_hash[:12]
    if event is None:
        message = (
            f"no agreement report with a gate for panel {panel} and rubric {rubric} has "
            f"been run: run tiap agreement report --db {ws.path} --subset "
            f"{validation_subset_hint(ws)} --out DIR"
        )
        if newest is not None and judges is not None:
            message += (
                f" (the latest gate for this rubric, for panel {newest.panel}, does not hold "
                f"for this panel: {'; '.join(differences(newest, judges))})"
            )
        return GateCheck(passed=False, message=message)
    where = f"panel {event.panel} and rubric {event.rubric_id or '?'} ({rubric})"
    when = f"subset {event.subset}, report of {event.created_at}"
    if event.gate_raters == "judges+reference":
        when += ", Fleiss' kappa over the judges and the human reference"
    changed = differences(event, judges) if judges is not None else []
    moved = version_difference(ws, event) if event.passed else None
    if moved is not None:
        return GateCheck(
            passed=False,
            message=(
                f"the scale gate passed for {where} ({when}) but not for the cases as they "
                f"are now: {moved}; {_what_to_run(ws, panel)}"
            ),
            event=event,
        )
    if event.passed and changed:
        return GateCheck(
            passed=False,
            message=(
                f"the scale gate passed for {where} ({when}) but not for the panel as it is "
                f"now: {'; '.join(changed)}; {_what_to_run(ws, panel)}"
            ),
            event=event,
        )
    if event.passed and not event.evidence_recorded:
        return GateCheck(
            passed=False,
            message=(
                f"the scale gate passed for {where} ({when}), recorded by an earlier tiap "
                "that does not say how much evidence the verdict rested on (complete cases, "
                "each judge's valid share, the human reference's rubric version): run tiap "
                f"agreement report --db {ws.path} --subset {event.subset} --out DIR again (it "
                "makes no calls)"
            ),
            event=event,
        )
    if event.passed:
        return GateCheck(
            passed=True, message=f"scale gate passed for {where} ({when})", event=event
        )
    return GateCheck(
        passed=False,
        message=f"scale gate failed for {where} ({when}): {'; '.join(event.failures)}",
        event=event,
    )


# ------------------------------------------------------------------ enforcement


@dataclass(frozen=True)
class GateDecision:
    """The gate for one run. ``check`` ``None``: a subset of kind validation needs no
    gate. ``forced``: the gate did not pass and the run goes on because of ``force``
    (recorded, unless the decision is only looked at, as a dry run does)."""

    check: GateCheck | None
    forced: bool = False

    @property
    def refused(self) -> bool:
        """The run would be refused without ``force``."""
        return self.check is not None and not self.check.passed

    @property
    def note(self) -> str | None:
        """What to tell the user when the run goes past a gate that did not pass."""
        if not self.forced or self.check is None:
            return None
        return (
            f"scale gate not passed ({self.check.message}); going on because of --force (recorded)"
        )


def _refusal(check: GateCheck, panel: str, rubric: Rubric, subset: str | None) -> TiapError:
    where = f"subset '{subset}'" if subset else "all cases"
    return TiapError(
        f"{check.message}; judging {where} beyond a validation subset needs a passed "
        f"scale gate for panel '{panel}' and rubric '{rubric.id}', or --force"
    )


def require_scale_gate(
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    *,
    subset: str | None,
    force: bool = False,
    enforce: bool = True,
) -> GateDecision:
    """Refuse to judge beyond a validation subset unless the gate passed for the panel
    as it is now, or ``force``.

    Judging a subset of kind validation needs no gate. Otherwise a missing or failed
    gate, or one for other judges, models or request settings, raises
    :class:`TiapError` naming the failing figures; with ``force`` the decision is
    recorded as a :class:`GateForceEvent` and the decision's ``note`` says so.
    ``enforce=False`` only looks: nothing is raised or recorded (a dry run).
    """
    if is_validation_subset(ws, subset):
        return GateDecision(check=None)
    identity = panel_identity(panel, rubric)
    check = check_scale_gate(ws, panel=panel.name, rubric_hash=rubric.content_hash, judges=identity)
    if not enforce:
        return GateDecision(check=check, forced=force and not check.passed)
    if check.passed:
        return GateDecision(check=check)
    if not force:
        raise _refusal(check, panel.name, rubric, subset)
    record_event(
        ws,
        GateForceEvent(
            panel=panel.name,
            rubric_id=rubric.id,
            rubric_hash=rubric.content_hash,
            subset=subset,
            message=check.message,
            judges=[
                ForcedJudge(name=name, model=j.model, settings_hash=j.settings_hash or "")
                for name, j in identity.items()
            ],
        ),
    )
    return GateDecision(check=check, forced=True)
