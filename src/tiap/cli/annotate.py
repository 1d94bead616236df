"""`tiap annotate` sub-commands."""

from __future__ import annotations

import typer

app = typer.Typer(help="annotate", no_args_is_help=True)
