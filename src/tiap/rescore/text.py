"""Data text made inert for the rescoring reports: Markdown (:func:`md`) and HTML (:func:`html`).

Run names, store names, categories, settings values, dataset names and bundle
warnings come from the bundle, so they reach ``report.md``, ``report.html`` and the
suite reports only through these functions. Both first make control characters
visible (:func:`visible`): C0 controls become their Unicode control pictures
(``ESC`` is ``␛``, a newline ``␊``, ``DEL`` ``␡``), C1 controls, line and paragraph
separators and the bidirectional controls (which reorder the text around them)
become ``⟨U+202E⟩``-style placeholders.

Every report module calls these and nothing else, so a shared text function can
replace them in this one place.
"""

from __future__ import annotations

import html as _html
import re
import unicodedata

#: Bidirectional formatting characters: they reorder the text around them.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _placeholder(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"\u27e8U+{code:04X}\u27e9"


def _is_control(ch: str) -> bool:
    return ch in _BIDI or unicodedata.category(ch) in ("Cc", "Zl", "Zp")


def visible(text: object) -> str:
    """``text`` with every control character shown as a visible placeholder."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(_placeholder(ch) if _is_control(ch) else ch for ch in s)


_MD_ESCAPES = {
    "\\": "\\\\",
    "|": "\\|",
    "`": "\\`",
    "*": "\\*",
    "~": "\\~",
    "[": "\\[",
    "]": "\\]",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
}
_MD_SPECIAL = re.compile(r"[\\|`*~\[\]&<>]")
#: An underscore that could open or close emphasis: not between two word characters.
_MD_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def md(text: object) -> str:
    """Data text as inert Markdown: inline, one line, no markup of its own.

    Escapes ``\\ | ` * ~ [ ]`` with a backslash, ``& < >`` as HTML entities, an
    underscore that could start emphasis, and a leading ``#``; control characters
    (newlines included) are shown as placeholders (:func:`visible`).
    """
    s = _MD_SPECIAL.sub(lambda m: _MD_ESCAPES[m.group(0)], visible(text))
    s = _MD_UNDERSCORE.sub("\\\\_", s)
    return "\\" + s if s.startswith("#") else s


def html(text: object) -> str:
    """Data text as inert HTML (element content or a quoted attribute value)."""
    return _html.escape(visible(text), quote=True)
