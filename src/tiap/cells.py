"""CSV and TSV cells that a spreadsheet would run as a formula, neutralised.

A spreadsheet opening a CSV or TSV file runs a cell that begins with ``=``, ``+``,
``-`` or ``@`` as a formula (``=HYPERLINK(...)``, ``@SUM(...)``,
``-2+3+cmd|' /C calc'!A0``), and a leading tab or carriage return can hide such a
start. Rater names, notes, reasons quoting a judge's reply, run and query ids come
from data tiap does not control, so every CSV/TSV cell tiap writes goes through
:func:`neutral` (OWASP's rule for CSV injection):

- a cell whose text begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
  return — after any number of single quotes — gets one more single quote in
  front (``=1+1`` -> ``'=1+1``; ``'=x`` -> ``''=x``), so a spreadsheet shows it as
  text;
- unless the whole cell is a decimal number (``-0.5``, ``+3``, ``-1e-05``): a
  number is not a formula, and numbers are written as numbers.

:func:`restore` undoes it: a cell that begins with a single quote followed (after
any further quotes) by one of those characters loses one quote. ``restore(neutral(s))
== s`` for every text, so tiap's readers of its own files (``labels import``,
``agreement report --labels``, qrels readers) read back what was written. JSON
files are never changed: a spreadsheet does not run them.

Every CSV and TSV line tiap writes is made by :func:`line`: each field
neutralised, then quoted as the ``csv`` module quotes (minimal quoting), and also
when it holds a carriage return, which the ``csv`` module leaves bare and its own
reader then takes for a line break.

This module is a leaf: every package of tiap may import it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["FORMULA_STARTS", "field", "line", "neutral", "restore"]

#: what a spreadsheet reads as the start of a formula (OWASP, "CSV Injection")
FORMULA_STARTS = frozenset("=+-@\t\r")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _formula_start(text: str) -> bool:
    """Whether ``text``, its leading single quotes set aside, starts like a formula."""
    first = text.lstrip("'")[:1]
    return bool(first) and first in FORMULA_STARTS


def neutral(text: str) -> str:
    """``text`` as a CSV/TSV cell a spreadsheet shows and never runs (see the module
    doc); text that needs nothing is returned unchanged."""
    if not _formula_start(text) or _NUMBER.fullmatch(text):
        return text
    return "'" + text


def restore(cell: str) -> str:
    """The text :func:`neutral` made ``cell`` from."""
    if cell[:1] == "'" and _formula_start(cell):
        return cell[1:]
    return cell


def field(text: str, delimiter: str = ",") -> str:
    """``text`` as one field of a CSV (``delimiter`` ``","``) or TSV (``"\\t"``) line:
    :func:`neutral`, then in double quotes (a quote doubled) when it holds the
    delimiter, a double quote, a line feed or a carriage return."""
    text = neutral(text)
    if delimiter in text or any(c in text for c in '"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def line(values: Iterable[str], delimiter: str = ",") -> str:
    """One CSV/TSV line (ending in ``\\n``) of text fields, each made a :func:`field`."""
    return delimiter.join(field(v, delimiter) for v in values) + "\n"
