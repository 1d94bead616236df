"""A judge's optional extra is checked before any work: an audit (or ``judge run``)
with the local LLM judge and without the ``local-llm`` extra fails at once, before the
rescore, and creates nothing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest


@pytest.fixture
def no_local_llm_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``local-llm`` extra as if not installed (gguf cannot be found)."""
    monkeypatch.setitem(sys.modules, "gguf", None)


def _one_line_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.code == 2, (result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    # gguf is missing here; on a base install the extra's other parts are too
    assert re.search(r"needs the local-llm extra \(missing: ([a-z0-9-]+, )*gguf[,)]", lines[0])
    return lines[0]


def test_an_audit_fails_before_the_rescore(
    tiap_cli, no_local_llm_extra, sample_bundle_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "audit"
    result = tiap_cli(
        "audit", sample_bundle_dir, "--out", out, "--panel", "offline-llm", "--no-humans"
    )
    _one_line_error(result)
    assert result.out == ""  # no step line: nothing was done
    assert not out.exists()


def test_judge_run_fails_before_planning(tiap_cli, no_local_llm_extra, audit_waiting_6) -> None:
    db = audit_waiting_6.root / "audit" / "workspace.sqlite"
    before = db.read_bytes()
    result = tiap_cli(
        "judge", "run", "--db", db, "--panel", "offline-llm", "--subset", "validation"
    )
    _one_line_error(result)
    assert db.read_bytes() == before
    # a dry run calls no judge: it prices without the extra
    tiap_cli.ok("judge", "run", "--db", db, "--panel", "offline-llm", "--subset", "validation",
                "--dry-run")  # fmt: skip
