"""`tiap traces` sub-commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="traces", no_args_is_help=True)
