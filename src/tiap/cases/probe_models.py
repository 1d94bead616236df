"""Pydantic models of what the workspace keeps apart from the audit's labels:
probe judgments (perturbed or repeated re-judgments, and the re-judgments of a drift
run) and frozen anchor sets (one model per table; :mod:`tiap.cases.rows` derives
the columns from them).

Probe judgments never enter an agreement, majority, prevalence or gate figure:
they live in their own table (``probe_labels``), which no read of the audit's
labels touches.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.models import LabelRecord

__all__ = [
    "DRIFT",
    "PROBE_KINDS",
    "AnchorCase",
    "AnchorLabel",
    "AnchorSet",
    "ProbeKind",
    "ProbeLabelRecord",
    "ProbeTag",
]

ProbeKind = Literal["order", "verbosity", "repeat", "injection", "drift"]
"""``probe_labels.probe_kind``: the perturbation a probe judgment was made under, or
``drift`` for a re-judgment of a frozen anchor set."""

#: the probe kinds of ``tiap judge probe`` (drift re-judgments are the other kind).
PROBE_KINDS: Final[tuple[ProbeKind, ...]] = ("order", "verbosity", "repeat", "injection")
DRIFT: Final = "drift"


class ProbeTag(BaseModel):
    """What makes a probe judgment what it is: its kind, its variant (the kind, or
    ``repeat:2``, ``drift:7``: one judgment per case, judge and variant) and its
    parameters; ``drift_run`` for a drift run's re-judgment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ProbeKind
    variant: str = Field(min_length=1, max_length=80)
    params: dict[str, Any] = Field(default_factory=dict)
    drift_run: int | None = None


class ProbeLabelRecord(LabelRecord):
    """One row of ``probe_labels``: a judge's label row (the fields of
    :class:`~tiap.cases.models.LabelRecord`) with the probe it was made under."""

    probe_kind: ProbeKind
    probe_variant: str
    probe_params: dict[str, Any] = Field(default_factory=dict)
    drift_run: int | None = None

    @classmethod
    def of(cls, record: LabelRecord, tag: ProbeTag) -> ProbeLabelRecord:
        """``record`` made under ``tag``."""
        return cls(
            **record.model_dump(),
            probe_kind=tag.kind,
            probe_variant=tag.variant,
            probe_params=dict(tag.params),
            drift_run=tag.drift_run,
        )


class AnchorSet(BaseModel):
    """One row of ``anchor_sets``: a frozen anchor set. It is never changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", max_length=80)
    #: the subset its cases were taken from
    subset: str
    rubric_id: str
    rubric_hash: str
    #: the panel named when it was frozen (``None``: every judge with labels)
    panel: str | None = None
    #: how the human reference was formed (``None``: there was none)
    reference: str | None = None
    #: the anchors (cases) and the judges frozen
    cases: int = Field(ge=1)
    judges: list[str]
    created_at: str


class AnchorCase(BaseModel):
    """One row of ``anchor_cases``: a case of an anchor set, by id and the sha256 of
    the text every judge saw (its rendered messages), with the human reference's
    label on it then (``None``: none)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    anchor: str
    case_id: str
    position: int = Field(ge=0)
    text_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    reference: str | None = None


class AnchorLabel(BaseModel):
    """One row of ``anchor_labels``: a judge's label on an anchor when it was frozen
    (``None``: invalid), with the model and request settings it came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    anchor: str
    case_id: str
    rater: str
    label: str | None
    reason: str | None = None
    model: str | None = None
    settings_hash: str | None = None
    request_hash: str | None = None
    #: the ``labels`` row it was copied from
    label_id: int
