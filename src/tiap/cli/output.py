"""Printing for the ``tiap`` command: every line a person reads goes through here.

Lines quote data (case text, run, rater and dataset names, file names, messages
from files and servers), so they are made :func:`~tiap.text.inert` before they
reach the terminal: control characters, escape sequences and bidi overrides show
as placeholders. :func:`echo` prints lines, :func:`console` is the Rich console of
tables and progress bars (it makes whatever it renders inert). Machine-readable
output (``--json``) is printed with :func:`echo_json` exactly as stored: JSON
escapes control characters itself. The commands print through nothing else
(``tests/cli/test_hostile_output.py`` runs every command with hostile names and
reads what reaches stdout and stderr).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import typer

from tiap.text import inert, inert_console


def echo(text: object = "", *, err: bool = False) -> None:
    """Print one line (or several) for a person, made inert; ``err``: on stderr."""
    typer.echo(inert(text), err=err)


def echo_json(text: str) -> None:
    """Print JSON as it is (its strings keep the stored text, controls escaped)."""
    typer.echo(text)


def console(*, stderr: bool = False, width: int | None = None) -> Any:
    """A Rich console on stdout (``stderr``: on stderr) that shows every text inert
    and never reads markup (:func:`tiap.text.inert_console`)."""
    return inert_console(stderr=stderr, width=width)


def cell(text: object, style: str | None = None) -> Any:
    """A Rich table cell (or title) of data: inert text, never markup."""
    from rich.text import Text

    return Text(inert(text), style=style or "")


def cells(values: Iterable[object]) -> list[Any]:
    """:func:`cell` of every value of a table row."""
    return [cell(v) for v in values]
