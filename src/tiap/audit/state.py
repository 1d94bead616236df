"""The audit's state file (``OUT/audit_state.json``): what earlier invocations did.

It holds the rescoring fingerprint (the bundle's files and the rescoring
settings: unchanged means the rescore is skipped) and every step's record
(:class:`~tiap.audit.steps.StepRecord`). The records are for one
:meth:`~tiap.audit.settings.AuditSettings.context_key`: an audit run with other
settings (another panel, subset or cut-off) starts the records afresh, keeping
the rescore's (it has a fingerprint of its own). The file is written after
every step, atomically, so an interrupted audit keeps the records of the steps
it finished.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tiap.audit.settings import STATE_FILE
from tiap.audit.steps import StepName, StepRecord


class AuditState(BaseModel):
    """The content of the state file."""

    model_config = ConfigDict(extra="forbid")

    version: int = 2
    context: str | None = None
    rescore_fingerprint: str | None = None
    steps: dict[StepName, StepRecord] = Field(default_factory=dict)

    def for_context(self, context: str) -> AuditState:
        """This state if it is for ``context``; else a fresh one that keeps the
        rescore's fingerprint and record."""
        if self.context == context:
            return self
        kept: dict[StepName, StepRecord] = {
            k: v for k, v in self.steps.items() if k == StepName.RESCORE
        }
        return AuditState(context=context, rescore_fingerprint=self.rescore_fingerprint, steps=kept)

    def ordered(self) -> list[StepRecord]:
        """The records in step order."""
        return [self.steps[name] for name in StepName if name in self.steps]


def state_path(out: Path) -> Path:
    return out / STATE_FILE


def read_state(out: Path) -> tuple[AuditState, str | None]:
    """The state in ``out`` (empty when there is none) and a warning when the file
    could not be read (it is then started afresh)."""
    path = state_path(out)
    if not path.exists():
        return AuditState(), None
    try:
        return AuditState.model_validate_json(path.read_text(encoding="utf-8")), None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return AuditState(), f"{path}: unreadable ({first}); its step records start afresh"


def write_state(out: Path, state: AuditState) -> None:
    """Write the state file atomically (a new file renamed over the old one)."""
    path = state_path(out)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(state.model_dump_json(indent=2) + "\n", encoding="utf-8", newline="\n")
    os.replace(tmp, path)
