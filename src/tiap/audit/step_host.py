"""What a part of the audit (:class:`tiap.audit.pipeline._Audit`, built of parts such
as :class:`~tiap.audit.qrels_steps.QrelsSteps`) gets from the audit: its settings, its
state and the recording of a step's runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.audit.step_figures import StepFigures
from tiap.audit.steps import StepName, StepStatus

if TYPE_CHECKING:
    from tiap.audit.settings import AuditSettings
    from tiap.audit.state import AuditState


class StepHost:
    """The audit's side of a part: provided by :class:`tiap.audit.pipeline._Audit`."""

    s: AuditSettings
    state: AuditState

    def ran(
        self, name: StepName, status: StepStatus, detail: str, figures: StepFigures | None
    ) -> None:
        raise NotImplementedError

    def found_done(self, name: StepName, why: str) -> None:
        raise NotImplementedError
