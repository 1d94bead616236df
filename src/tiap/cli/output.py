"""Printing for the ``tiap`` command: every line a person reads goes through here.

Lines quote data (case text, run, rater and dataset names, messages from files
and servers), so they are made :func:`~tiap.text.inert` before they reach the
terminal: control characters and escape sequences show as placeholders.
Machine-readable output (``--json``) is printed with :func:`echo_json` exactly as
stored: JSON escapes control characters itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import typer

from tiap.text import inert


def echo(text: object = "", *, err: bool = False) -> None:
    """Print one line (or several) for a person, made inert; ``err``: on stderr."""
    typer.echo(inert(text), err=err)


def echo_json(text: str) -> None:
    """Print JSON as it is (its strings keep the stored text, controls escaped)."""
    typer.echo(text)


def cell(text: object, style: str | None = None) -> Any:
    """A Rich table cell (or title) of data: inert text, never markup."""
    from rich.text import Text

    return Text(inert(text), style=style or "")


def cells(values: Iterable[object]) -> list[Any]:
    """:func:`cell` of every value of a table row."""
    return [cell(v) for v in values]
