"""What :func:`tiap.audit.run_audit` returns."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tiap.agreement.models import AgreementReport
from tiap.audit.steps import StepName, StepRecord

#: ``complete``; or paused: ``waiting`` (human labels needed), ``gate_failed``,
#: ``budget`` (stopped by ``max_cost``).
AuditStatus = Literal["complete", "waiting", "gate_failed", "budget"]


class AuditContext(BaseModel):
    """What the audit is about (the index's first paragraph)."""

    model_config = ConfigDict(extra="forbid")

    bundle: str
    dataset: str
    panel: str
    judges: list[str]
    rubric: str
    rubric_hash: str
    workspace: str
    subset: str
    humans: Literal["required", "skip"]
    #: ``contested`` credits, or ``qrels`` (relevance annotations; ``bundle`` is then
    #: the source and ``dataset`` its datasets)
    mode: Literal["contested", "qrels"] = "contested"


class AuditOutcome(BaseModel):
    """What an invocation of the audit did and where it stands.

    ``steps`` are every step's record in step order (see
    :class:`~tiap.audit.steps.StepRecord`: the runs that did each step's work,
    also in earlier invocations); ``validation`` and ``final`` are the agreement
    reports this invocation computed, if it got that far.
    """

    model_config = ConfigDict(extra="forbid")

    status: AuditStatus
    message: str
    started_at: datetime
    context: AuditContext
    steps: list[StepRecord]
    index_md: Path
    index_html: Path
    next_command: str | None = None
    validation: AgreementReport | None = None
    final: AgreementReport | None = None

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    @property
    def supported_share(self) -> float | None:
        """Share of relaxed credit that is fully supported (the final report's
        majority ``supports`` among decided cases); ``None`` before the final report."""
        return self.final.supported_share if self.final is not None else None

    @property
    def qrels_verdicts(self) -> dict[str, str] | None:
        """Each dataset's relevance-label verdict (the final report's, in qrels mode);
        ``None`` before the final report or in the contested mode."""
        if self.final is None or self.final.qrels is None:
            return None
        return {name: g.verdict for name, g in self.final.qrels.by_dataset.items()}

    def step(self, name: StepName | str) -> StepRecord | None:
        """The record of one step, or ``None`` if the audit has not reached it."""
        wanted = StepName(name)
        return next((r for r in self.steps if r.step == wanted), None)
