"""`tiap rescore`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``rescore`` command to ``app``."""
