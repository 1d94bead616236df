"""What a run tells its progress display (see :mod:`tiap.judge.progress`)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class Reporter(Protocol):
    """Progress callbacks: a judge's pairs to do (only judges with some), and done."""

    def start(self, judge: str, total: int) -> None: ...

    def advance(self, judge: str, n: int = 1) -> None: ...


@runtime_checkable
class BatchReporter(Protocol):
    """A reporter that also shows provider batches while they run (optional)."""

    def batch(self, key: str, text: str, completed: int, total: int) -> None: ...


class NoReporter:
    def start(self, judge: str, total: int) -> None:
        pass

    def advance(self, judge: str, n: int = 1) -> None:
        pass


def report_batch(reporter: Reporter, key: str, text: str, completed: int, total: int) -> None:
    """Show a batch's progress when the reporter can."""
    if isinstance(reporter, BatchReporter):
        reporter.batch(key, text, completed, total)
