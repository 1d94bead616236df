"""Errors a user can act on.

Every error raised because of bad input is a :class:`TiapError`. The command
line prints ``str(error)`` as a single line on stderr and exits non-zero; the
Python API lets it propagate. Messages name the file, the line (1-based) and
the problem, e.g. ``runs/bm25.jsonl:12: unknown memory id 'm-99' in ranking``.
"""

from __future__ import annotations

from pathlib import Path


class TiapError(Exception):
    """An error caused by input or configuration that the user can fix."""


class InputError(TiapError):
    """Bad content in a file: names the file, the line when known, and the problem."""

    def __init__(self, path: str | Path, problem: str, line: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.problem}"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a command that keeps what it finished: the message says what
    was kept and how to go on (the command line prints it and exits 130)."""
