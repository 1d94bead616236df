"""Offline audits of the sample bundle, made once per test session (``support.states``).

Each is a :class:`~support.states.Stage`: the directory the commands ran in
(``root``), restored before each test that uses it, and what they returned.

- :func:`demo`: ``tiap demo`` in a process of its own, in ``root`` (so into
  ``root/tiap-demo``, the default), with progress lines every millisecond;
- :func:`waiting` : ``tiap audit SAMPLE --out root/audit --panel offline ARGS``,
  which stops for human labels after judging the validation subset (exit 3);
- :func:`complete`: the Python API's audit (humans skipped, past the failed gate),
  run from inside a running event loop as a notebook runs it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.cli import CliResult, TiapCli
from support.states import Stage

#: the environment the audit commands ran with (wide tables)
WIDE = {"COLUMNS": "200"}
#: the directory under ``root`` an audit writes to
OUT = "audit"
#: an audit of six validation cases, two of them overlap, waiting for human labels
WAITING_6 = ("--n", "6", "--overlap", "2", "--no-progress")
#: an audit of eight validation cases and a gate that passes on them (with judges
#: only), waiting for human labels
WAITING_8 = ("--n", "8", "--min-fleiss", "0", "--min-cases", "4", "--no-progress")


def demo(root: Path, cli: TiapCli) -> Stage[CliResult]:
    """``tiap demo`` run in ``root`` in a process of its own (the reports in
    ``root/tiap-demo``; ``TIAP_PROGRESS_INTERVAL=0.001``)."""
    return Stage.make(
        root, lambda cwd: cli.subprocess("demo", cwd=cwd, env={"TIAP_PROGRESS_INTERVAL": "0.001"})
    )


def audit_args(bundle: Path, root: Path) -> tuple[str | Path, ...]:
    """``audit BUNDLE --out ROOT/audit --panel offline``."""
    return ("audit", bundle, "--out", root / OUT, "--panel", "offline")


def waiting(root: Path, cli: TiapCli, bundle: Path, args: tuple[str, ...]) -> Stage[CliResult]:
    """``tiap audit BUNDLE --out ROOT/audit --panel offline ARGS`` (in this process)."""
    return Stage.make(root, lambda cwd: cli(*audit_args(bundle, cwd), *args, cwd=cwd, env=WIDE))


@dataclass(frozen=True)
class Complete:
    """The API audit: its settings (as given, and a deep copy taken before the run),
    its outcome and the lines it said."""

    settings: Any
    before: Any
    outcome: Any
    lines: list[str]


def complete_settings(bundle: Path, out: Path) -> Any:
    from tiap.audit import AuditSettings

    return AuditSettings(
        bundle=bundle,
        out=out,
        panel="offline",
        n=6,
        overlap=2,
        humans="skip",
        force=True,
        progress=False,
        rescore_resamples=200,
        agreement_resamples=50,
    )


def complete(root: Path, bundle: Path) -> Stage[Complete]:
    """:func:`tiap.audit.run_audit` with :func:`complete_settings` (out: ``root/audit``),
    called from inside a running event loop."""
    from tiap.audit import run_audit

    def make(cwd: Path) -> Complete:
        settings = complete_settings(bundle, cwd / OUT)
        before = settings.model_copy(deep=True)
        lines: list[str] = []

        async def in_a_running_loop() -> Any:
            asyncio.get_running_loop()
            return run_audit(settings, say=lines.append)

        outcome = asyncio.run(in_a_running_loop())
        return Complete(settings, before, outcome, lines)

    return Stage.make(root, make)
