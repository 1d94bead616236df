"""The audit: the whole procedure as a resumable, typed pipeline.

Python API::

    from pathlib import Path
    from tiap.audit import AuditSettings, run_audit

    outcome = run_audit(AuditSettings(bundle=Path("bundles/locomo"), out=Path("audit"),
                                      panel="offline", humans="skip", force=True))
    outcome.status, outcome.supported_share, outcome.index_html
    for step in outcome.steps:                 # every step's record, in order
        print(step.title, step.status, step.latest.at, step.figures)

``await run_audit_async(settings)`` is the same as a coroutine; ``run_audit``
also works inside a running event loop (a notebook). Steps are
:class:`StepRecord` objects named by :class:`StepName`, with typed figures
(:mod:`tiap.audit.step_figures`); the state file (``OUT/audit_state.json``) is an
:class:`AuditState`.
"""

from tiap.audit.index_page import write_index
from tiap.audit.outcome import AuditContext, AuditOutcome, AuditStatus
from tiap.audit.pipeline import run_audit, run_audit_async
from tiap.audit.settings import AuditSettings
from tiap.audit.state import AuditState, read_state
from tiap.audit.step_figures import (
    AgreementFigures,
    ExtractFigures,
    HumanFigures,
    JudgeFigures,
    ProbeFigures,
    QrelsCasesFigures,
    QrelsVerdicts,
    RescoreFigures,
    SampleFigures,
    StepFigures,
)
from tiap.audit.steps import StepName, StepRecord, StepRun, StepStatus

__all__ = [
    "AgreementFigures",
    "AuditContext",
    "AuditOutcome",
    "AuditSettings",
    "AuditState",
    "AuditStatus",
    "ExtractFigures",
    "HumanFigures",
    "JudgeFigures",
    "ProbeFigures",
    "QrelsCasesFigures",
    "QrelsVerdicts",
    "RescoreFigures",
    "SampleFigures",
    "StepFigures",
    "StepName",
    "StepRecord",
    "StepRun",
    "StepStatus",
    "read_state",
    "run_audit",
    "run_audit_async",
    "write_index",
]
