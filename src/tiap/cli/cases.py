"""`tiap cases` sub-commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="cases", no_args_is_help=True)
