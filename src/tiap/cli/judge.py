"""`tiap judge` sub-commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="judge", no_args_is_help=True)
