"""`tiap audit` and `tiap demo`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``audit`` and ``demo`` commands to ``app``."""
