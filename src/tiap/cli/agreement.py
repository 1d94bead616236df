"""`tiap agreement` sub-commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="agreement", no_args_is_help=True)
