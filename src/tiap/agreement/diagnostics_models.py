"""The agreement report's ``diagnostics`` section: is each of its judges fit to judge?

The latest probe results (``tiap judge probe``) and the latest drift result (``tiap
judge drift``) of each judge of the report, and a warning for each judge the gate
passed that drifted in a drift run recorded after the gate. Read from the
workspace's events (:mod:`tiap.agreement.diagnostics`); probe and drift judgments
never enter any other figure of the report.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "NO_WORKSPACE",
    "Diagnostics",
    "DriftWarning",
    "JudgeDrift",
    "JudgeProbes",
    "ProbeKindResult",
]


#: why a report read from a labels file (or built in memory) has no diagnostics
NO_WORKSPACE = "no workspace: probe and drift results are recorded in a workspace (--db)"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProbeKindResult(_Model):
    """One probe kind's result for a judge: the flip rate on the ``n`` compared cases
    with its Wilson 95% interval, the planted-label share (``injection``) and the
    kind's status (``stable``, ``sensitive``, ``inconclusive``, ``noise floor``)."""

    kind: str
    n: int
    flips: int
    flip_rate: float | None = None
    flip_ci: list[float] | None = None
    planted_share: float | None = None
    planted_ci: list[float] | None = None
    status: str
    reason: str | None = None


class JudgeProbes(_Model):
    """A judge's latest probe run under the report's rubric (``run``: its event id)."""

    judge: str
    run: int
    panel: str
    subset: str
    model: str
    verdict: str
    kinds: list[ProbeKindResult]


class JudgeDrift(_Model):
    """A judge's latest drift run under the report's rubric (``run``: the drift-run
    id): its share of anchors changed, McNemar's p, the EWMA alarm, whether it
    drifted and why; ``after_gate``: the run was recorded after the gate."""

    judge: str
    run: int
    anchor: str
    model: str
    n: int
    changed: int
    change_rate: float | None = None
    mcnemar_p: float | None = None
    alarm: bool
    drifted: bool
    reasons: list[str] = Field(default_factory=list)
    after_gate: bool | None = None


class DriftWarning(_Model):
    """A judge the gate passed drifted in a drift run recorded after the gate."""

    judge: str
    run: int
    anchor: str
    reasons: list[str]
    message: str


class Diagnostics(_Model):
    """Probe and drift results of the report's judges. ``available``: read from a
    workspace (else ``reason``). ``probes`` and ``drift`` are empty with
    ``probes_reason`` / ``drift_reason`` when none were run. ``gate``: the event id
    of the passed gate the warnings refer to (the latest recorded under the report's
    rubric before the report), with the anchor set frozen with it."""

    available: bool
    reason: str | None = None
    judges: list[str] = Field(default_factory=list)
    gate: int | None = None
    gate_anchor: str | None = None
    probes: list[JudgeProbes] = Field(default_factory=list)
    probes_reason: str | None = None
    drift: list[JudgeDrift] = Field(default_factory=list)
    drift_reason: str | None = None
    warnings: list[DriftWarning] = Field(default_factory=list)
