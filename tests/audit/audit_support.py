"""Helpers for the audit tests: the state file."""

from __future__ import annotations

from pathlib import Path

from tiap.audit import AuditState
from tiap.audit.settings import STATE_FILE


def read_state(out: Path) -> AuditState:
    return AuditState.model_validate_json((out / STATE_FILE).read_text(encoding="utf-8"))
