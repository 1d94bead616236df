"""Helpers for the audit tests: the command line in a subprocess, the state file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tiap.audit import AuditState
from tiap.audit.settings import STATE_FILE

TIAP = [sys.executable, "-m", "tiap.cli"]


def run_tiap(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "200"}
    return subprocess.run(
        [*TIAP, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def read_state(out: Path) -> AuditState:
    return AuditState.model_validate_json((out / STATE_FILE).read_text(encoding="utf-8"))
