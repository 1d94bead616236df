"""Text from data made inert before a terminal, a Markdown file or a web page shows it.

Case and memory text, questions, answers, evidence, rubric definitions, rater and
run names, rationales and provider messages come from files and servers tiap does
not control. A terminal obeys the control characters in them: an escape sequence
can set the window title, colour the screen, write the clipboard or move the
cursor and overwrite what a rater reads; bidi overrides reorder it. So every such
string is shown through :func:`inert`, which replaces each control character with
a visible placeholder and leaves everything else as it is:

- C0 controls (except newline and tab) and DEL: their Unicode Control Pictures
  (``\\x1b`` -> ``␛``, ``\\x07`` -> ``␇``, ``\\x7f`` -> ``␡``). The ESC of every escape
  sequence (CSI, OSC, DCS, APC, PM, SOS, or a lone ESC) becomes ``␛`` and the rest
  of the sequence is shown as the literal text it is: ``\\x1b[31m`` -> ``␛[31m``.
- C1 controls (U+0080-U+009F, the 8-bit forms of CSI, OSC, DCS, ST, ...): ``\\x9b``.
- Bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069):
  ``\\u202e``.
- Lone surrogates (text decoded with ``surrogateescape``, JSON ``"\\ud800"``), which
  no terminal or file can encode: ``\\ud800``.

Placeholders are printable and never replaced again, so ``inert(inert(s)) ==
inert(s)``; text without such characters is returned unchanged (the same
object). What is stored (the workspace, ``report.json``, ``--json`` output) keeps
the original text: only what is shown is made inert.

:func:`inert_md` adds Markdown escaping (table cells and inline text) and
:func:`inert_html` HTML escaping on top. :func:`inert_console` is a Rich console
that shows everything it prints inert (tables, progress bars). This module is a
leaf: every package of tiap may import it.
"""

from __future__ import annotations

import html
import re
from functools import cache
from typing import Any

__all__ = ["inert", "inert_console", "inert_html", "inert_md"]

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _placeholders() -> dict[int, str]:
    table = {c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)}
    table[0x7F] = "\u2421"
    table.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})
    table.update({c: f"\\u{c:04x}" for c in (*_BIDI, *range(0xD800, 0xE000))})
    return table


_PLACEHOLDERS = _placeholders()
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def inert(text: object) -> str:
    """``text`` (``str(text)`` for other objects) with every control character,
    escape sequence, bidi override and lone surrogate shown as a visible
    placeholder; newline, tab and every other character are kept."""
    s = text if isinstance(text, str) else str(text)
    if _UNSAFE.search(s) is None:
        return s
    return s.translate(_PLACEHOLDERS)


#: characters that mean something anywhere in a Markdown line (GitHub flavour):
#: table cells, code, emphasis, strike-through, links and images, math, raw HTML
#: and entities. Backslash first, so that the escapes added are not escaped again.
_MD_CHARS = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "~": "\\~",
        "[": "\\[",
        "]": "\\]",
        "$": "\\$",
        "&": "\\&",
        "<": "\\<",
        ">": "\\>",
    }
)
#: ``_`` opens or closes emphasis unless it stands between two letters or digits
_MD_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
#: what makes a line a heading (``# x``), a list item (``- x``, ``+ x``, ``1. x``), a
#: rule or a setext underline (``---``, ``===``) when it starts the line
_MD_LEADING = re.compile(
    r"^(?:(#(?=#{0,5}(?: |$))|[-+](?= |$)|[-=](?=[-= ]*$))|(\d{1,9})([.)])(?= |$))"
)


def inert_md(text: object) -> str:
    """``text`` made :func:`inert` and literal in Markdown, for a table cell or inline
    text: whitespace runs (newlines, tabs) become one space, and ``|``, backticks,
    ``*``, ``~``, ``[``, ``]``, ``$``, backslash, ``_`` outside words, and what would
    start a heading, list item or rule (``# ``, ``- ``, ``+ ``, ``1. ``, ``---``) are
    backslash-escaped, and so are ``&``, ``<`` and ``>`` (so no raw HTML, entity,
    autolink or block quote): Markdown's own escapes, which read as the text under
    ``cat`` too, not HTML entities."""
    s = " ".join(inert(text).split()).translate(_MD_CHARS)
    s = _MD_UNDERSCORE.sub(r"\\_", s)
    return _MD_LEADING.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", s)


def inert_html(text: object, *, quote: bool = True) -> str:
    """``text`` made :func:`inert` and HTML-escaped (``quote``: also ``"`` and ``'``),
    for element text and attribute values."""
    return html.escape(inert(text), quote=quote)


def inert_console(**options: Any) -> Any:
    """A Rich ``Console`` (``options`` as for ``rich.console.Console``) that shows
    every text it prints :func:`inert`: strings are made inert before they are laid
    out, and read as plain text (no markup, highlighting or emoji codes), and the
    text of every segment it writes is made inert again (so a ``Text`` built from
    data elsewhere, a progress bar's description, cannot pass raw). Rich's own
    styles and cursor controls are kept. Rich is imported on the first call."""
    settings = {"markup": False, "highlight": False, "emoji": False, **options}
    return _inert_console_class()(**settings)


@cache
def _inert_console_class() -> Any:
    from rich.console import Console
    from rich.segment import Segment

    class InertConsole(Console):
        def render_str(self, text: str, **kwargs: Any) -> Any:
            kwargs.update(markup=False, highlight=False, emoji=False)
            return super().render_str(inert(text), **kwargs)

        def render(self, renderable: Any, options: Any = None) -> Any:
            for segment in super().render(renderable, options):
                if segment.control or not segment.text:
                    yield segment
                    continue
                text = inert(segment.text)
                yield segment if text is segment.text else Segment(text, segment.style)

    return InertConsole
